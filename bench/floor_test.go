package bench

import (
	"bytes"
	"testing"
)

// TestFloorMovesRawBytes checks that the JSON floor's client and server
// write exactly the raw echo's bytes, so that floor minus raw is the JSON
// work alone.
func TestFloorMovesRawBytes(t *testing.T) {
	svc := &Service{}
	for _, tc := range []struct {
		kind   rawKind
		method string
		params any
	}{
		{rawAdd, MethodAdd, addParams},
		{rawEcho, MethodEcho, echoParams},
		{rawBigEcho, MethodEcho, bigEchoParams},
		{rawComplete, MethodComplete, completeParams},
		{rawTick, MethodTick, tickParams},
	} {
		id := uint64(1)
		if tc.kind == rawTick {
			id = 0 // a notification
		}
		req, err := floorMarshal(id, tc.method, tc.params)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(req, Raw.Req[tc.kind]) {
			t.Errorf("%s request %.80s…, raw %.80s…", tc.method, req, Raw.Req[tc.kind])
		}
		reply, err := floorServe(svc, req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(reply, Raw.Reply[tc.kind]) {
			t.Errorf("%s reply %.80s…, raw %.80s…", tc.method, reply, Raw.Reply[tc.kind])
		}
	}
	params := make([]any, W3BatchSize)
	for i := range params {
		params[i] = addParams
	}
	for _, k := range []int{1, 3, W3BatchSize} {
		req, err := floorBatch(MethodAdd, params[:k])
		if err != nil {
			t.Fatal(err)
		}
		kind := rawBatch + rawKind(k-1)
		if !bytes.Equal(req, Raw.Req[kind]) {
			t.Errorf("batch of %d: request %.80s…, raw %.80s…", k, req, Raw.Req[kind])
		}
		reply, err := floorServe(svc, req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(reply, Raw.Reply[kind]) {
			t.Errorf("batch of %d: reply %.80s…, raw %.80s…", k, reply, Raw.Reply[kind])
		}
	}
}
