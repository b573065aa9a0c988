package jsonrpc

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestNullIDErrorOfANotificationSparesTheCall: a remote answers a
// notification it could not read (too large, unparseable) with an error
// whose id is null, since it cannot tell it was a notification. That error
// names no call of ours, and must not fail the one that happens to be in
// flight. On 3db20dd a 20 KiB notification to a remote with a 16 KiB cap
// made an unrelated Call fail at once with "-32600 message too large", and
// its real reply, 300 ms later, was dropped. Both orders: the notification
// written after the call, and before it.
func TestNullIDErrorOfANotificationSparesTheCall(t *testing.T) {
	for _, notifyFirst := range []bool{false, true} {
		name := "notification after the call"
		if notifyFirst {
			name = "notification before the call"
		}
		t.Run(name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			h := mux(t, map[string]HandlerFunc{"slow": func(ctx context.Context, req *Request) (any, error) {
				started <- struct{}{}
				time.Sleep(300 * time.Millisecond)
				return "real", nil
			}})
			c1, c2 := Pipe()
			server := NewPeer(&capConn{Conn: c1, max: 16 << 10}, Options{Handler: h})
			client := NewPeer(c2)
			cleanupPeer(t, server)
			cleanupPeer(t, client)
			ctx := testCtx(t, wait)
			big := []string{strings.Repeat("n", 20<<10)}
			if notifyFirst {
				if err := client.Notify(ctx, "note", big); err != nil {
					t.Fatal(err)
				}
			}
			res := make(chan error, 1)
			var got string
			go func() { res <- client.Call(ctx, "slow", nil, &got) }()
			within(t, started, "the slow handler")
			if !notifyFirst {
				if err := client.Notify(ctx, "note", big); err != nil {
					t.Fatal(err)
				}
			}
			if err := within(t, res, "the call"); err != nil || got != "real" {
				t.Errorf("the call = %q, %v; want its own reply, \"real\"", got, err)
			}
		})
	}
}
