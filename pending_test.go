package jsonrpc

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPendingExactlyOnce races deliver, forget and close over many calls:
// each call gets exactly one outcome, seen either by its waiter (a reply or
// the close) or by whoever forgot it first.
func TestPendingExactlyOnce(t *testing.T) {
	for round := range 20 {
		var tab pendingTable
		const n = 200
		ids := make([]ID, n)
		chans := make([]<-chan response, n)
		for i := range ids {
			ids[i] = Int64ID(int64(i))
			ch, err := tab.add(ids[i], nil)
			if err != nil {
				t.Fatal(err)
			}
			chans[i] = ch
		}
		var delivered, forgotten atomic.Int64
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(3)
			go func() {
				defer wg.Done()
				if tab.deliver(&response{ID: ids[i]}) == replyDelivered {
					delivered.Add(1)
				}
			}()
			go func() {
				defer wg.Done()
				if tab.deliver(&response{ID: ids[i]}) == replyDelivered { // a duplicate reply
					delivered.Add(1)
				}
			}()
			go func() {
				defer wg.Done()
				if i%3 == 0 && tab.forget(ids[i]) {
					forgotten.Add(1)
				}
			}()
		}
		closeErr := errors.New("closed " + strconv.Itoa(round))
		wg.Add(1)
		go func() { defer wg.Done(); tab.close(closeErr) }()
		wg.Wait()
		var replies, closes int64
		for i, ch := range chans {
			closed := false
			select {
			case r, ok := <-ch:
				if !ok {
					closes++
					closed = true // a closed channel answers every receive
				} else if r.ID != ids[i] {
					t.Fatalf("call %d got the reply for %s", i, r.ID)
				} else {
					replies++
				}
			default:
			}
			if !closed {
				select {
				case r, ok := <-ch:
					t.Fatalf("call %d got a second outcome %v (closed: %v)", i, r, !ok)
				default:
				}
			}
		}
		if replies != delivered.Load() || replies+closes+forgotten.Load() != n {
			t.Fatalf("round %d: %d replies (%d delivered), %d closes, %d forgotten; want %d outcomes",
				round, replies, delivered.Load(), closes, forgotten.Load(), n)
		}
		if _, err := tab.add(Int64ID(-1), nil); err != closeErr || tab.err() != closeErr {
			t.Fatalf("add after close: %v", err)
		}
		if tab.deliver(&response{ID: ids[0]}) == replyDelivered || tab.forget(ids[0]) {
			t.Fatal("a closed table still holds calls")
		}
		tab.close(errors.New("again")) // no effect
		if tab.err() != closeErr {
			t.Fatal("a second close replaced the cause")
		}
	}
}

func TestScanner(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`[]`, nil},
		{`[ ]`, nil},
		{`[1]`, []string{`1`}},
		{`[ 1 , -2.5e3 ,"a,]}\"" , {"k":[1,{"x":"]"}]}, [[]], null,true ]`,
			[]string{`1`, `-2.5e3`, `"a,]}\""`, `{"k":[1,{"x":"]"}]}`, `[[]]`, `null`, `true`}},
		{"[\n\t\"\\\\\"\r\n]", []string{`"\\"`}},
	} {
		got, ok := readBatch([]byte(tc.in), nil)
		if !ok || len(got) != len(tc.want) {
			t.Errorf("readBatch(%s) = %d elements, %v; want %q", tc.in, len(got), ok, tc.want)
			continue
		}
		for i := range got {
			if string(got[i].text) != tc.want[i] || got[i].obj != (tc.want[i][0] == '{') {
				t.Errorf("readBatch(%s)[%d] = %s (object %v), want %s", tc.in, i, got[i].text, got[i].obj, tc.want[i])
			}
		}
	}
	for _, tc := range []struct {
		in   string
		want []string // key, value, key, value...
	}{
		{`{}`, nil},
		{`{ "a" : 1 , "b":"x}" ,"c":{"d":[1,2]},"e":null}`, []string{"a", "1", "b", `"x}"`, "c", `{"d":[1,2]}`, "e", "null"}},
		{`{"\u006d\"":1,"\\":2}`, []string{`m"`, "1", `\`, "2"}},
		{`{"a":1,"a":2}`, []string{"a", "1", "a", "2"}},
	} {
		var got []string
		forEachMember([]byte(tc.in), func(k, v []byte) { got = append(got, string(k), string(v)) })
		if len(got) != len(tc.want) {
			t.Errorf("forEachMember(%s) = %q, want %q", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("forEachMember(%s) = %q, want %q", tc.in, got, tc.want)
				break
			}
		}
	}
	if got := string(trimSpace([]byte(" \t\r\n{} \n"))); got != "{}" {
		t.Errorf("trimSpace: %q", got)
	}
	if got := trimSpace([]byte(" \n ")); len(got) != 0 {
		t.Errorf("trimSpace of spaces: %q", got)
	}
}

// kind names what decodeMessage made of one element.
func kind(m message) string {
	switch {
	case m.resp != nil && m.invalid != nil:
		return "bad response"
	case m.resp != nil:
		return "response"
	case m.invalid != nil:
		return "invalid " + strconv.FormatInt(m.invalid.Code, 10) + " id " + m.req.ID.String()
	case m.req.IsNotification():
		return "notification " + m.req.Method
	default:
		return "call " + m.req.Method + " id " + m.req.ID.String()
	}
}

func TestDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		in    string
		batch bool
		want  []string
	}{
		{``, false, []string{"invalid -32700 id null"}},
		{` `, false, []string{"invalid -32700 id null"}},
		{`{`, false, []string{"invalid -32700 id null"}},
		{`[{"jsonrpc":"2.0","method":"a"},`, false, []string{"invalid -32700 id null"}},
		{`[]`, false, []string{"invalid -32600 id null"}},
		{`7`, false, []string{"invalid -32600 id null"}},
		{`{"jsonrpc":"2.0","method":"a"}`, false, []string{"notification a"}},
		{`{"jsonrpc":"2.0","method":"a","id":null}`, false, []string{"call a id null"}},
		{`{"jsonrpc":"2.0","method":"a","id":"x","params":[]}`, false, []string{`call a id "x"`}},
		{`{"jsonrpc":"2.0","method":"a","id":1,"params":1}`, false, []string{"invalid -32600 id 1"}},
		{`{"jsonrpc":"2.0","method":"a","id":false}`, false, []string{"invalid -32600 id null"}},
		{`{"jsonrpc":"2.0","id":1,"result":null}`, false, []string{"response"}},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, false, []string{"response"}},
		{`{"jsonrpc":"2.0","result":1}`, false, []string{"bad response"}},
		{`{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}`, false, []string{"bad response"}},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}`, false, []string{"bad response"}},
		{`{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}`, false, []string{"bad response"}},
		{`{"jsonrpc":"2.0","id":1,"method":"m","result":1}`, false, []string{"call m id 1"}},
		{`[1,{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"result":0},[]]`, true,
			[]string{"invalid -32600 id null", "notification a", "response", "invalid -32600 id null"}},
		// A syntax error anywhere, or anything after the value, makes the
		// whole message a parse error.
		{`{"jsonrpc":"2.0","method":"a"} x`, false, []string{"invalid -32700 id null"}},
		{`{"jsonrpc":"2.0","method":"a"}{"jsonrpc":"2.0","method":"b"}`, false, []string{"invalid -32700 id null"}},
		{`{"jsonrpc":"2.0","method":"a","params":{"x":[1,}}`, false, []string{"invalid -32700 id null"}},
		{`[{"jsonrpc":"2.0","method":"a"},{"a":tru}]`, false, []string{"invalid -32700 id null"}},
		{`[{"jsonrpc":"2.0","method":"a"} {"jsonrpc":"2.0","method":"b"}]`, false, []string{"invalid -32700 id null"}},
		{`[1,2,3`, false, []string{"invalid -32700 id null"}},
		{` [ "a,]}\"" , {"k":[1,{"x":"]"}]}, [[]], null,true ] `, true,
			[]string{"invalid -32600 id null", "invalid -32600 id null", "invalid -32600 id null", "invalid -32600 id null", "invalid -32600 id null"}},
		{"[\n\t{\"jsonrpc\":\"2.0\",\"method\":\"\\u0061\"}\r\n]", true, []string{"notification a"}},
	} {
		msgs, batch := decodeMessage([]byte(tc.in))
		var got []string
		for _, m := range msgs {
			got = append(got, kind(m))
		}
		if batch != tc.batch || len(got) != len(tc.want) {
			t.Errorf("decodeMessage(%s) = %q batch %v, want %q batch %v", tc.in, got, batch, tc.want, tc.batch)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("decodeMessage(%s) = %q, want %q", tc.in, got, tc.want)
				break
			}
		}
	}
}

// TestMaxPending: a Call beyond Options.MaxPending fails at once with
// ErrTooManyPending, and works again once replies have come back.
func TestMaxPending(t *testing.T) {
	release := make(chan struct{})
	h := mux(t, map[string]HandlerFunc{"hold": func(ctx context.Context, _ *Request) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return 1, nil
	}})
	client, _ := newPair(t, nil, h, &Options{MaxPending: 2}, nil)
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- client.Call(testCtx(t, wait), "hold", nil, nil) }()
	}
	eventually(t, "two calls pending", func() bool {
		client.pending.mu.Lock()
		defer client.pending.mu.Unlock()
		return len(client.pending.calls) == 2
	})
	if err := client.Call(testCtx(t, wait), "hold", nil, nil); !errors.Is(err, ErrTooManyPending) {
		t.Errorf("third Call = %v, want ErrTooManyPending", err)
	}
	close(release)
	for range 2 {
		if err := within(t, errs, "held call"); err != nil {
			t.Error(err)
		}
	}
	if err := client.Call(testCtx(t, wait), "hold", nil, nil); err != nil {
		t.Errorf("Call after the replies came back = %v", err)
	}
}
