package httprpc

import (
	"testing"

	"github.com/peerwire/jsonrpc"
)

// BenchmarkSessionCall measures a call's round trip over a session on
// loopback HTTP: a POST, its event stream, the reply.
func BenchmarkSessionCall(b *testing.B) {
	ts := startSessions(b, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	c := ts.dial(b, nil, DialOptions{})
	ctx := testCtx(b, 10*wait)
	if err := c.Call(ctx, "echo", []int{0}, nil); err != nil {
		b.Fatal(err)
	}
	params := []int{1, 2, 3}
	var out []int
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Call(ctx, "echo", params, &out); err != nil {
			b.Fatal(err)
		}
	}
}
