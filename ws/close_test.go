//go:build !js

package ws_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// closeBound is how long a Close may take when the other side never answers
// its close frame: ws gives up the handshake after 1 s, plus slack.
const closeBound = 1500 * time.Millisecond

// closeWithin closes p and fails the test if that takes longer than
// closeBound.
func closeWithin(t *testing.T, p *jsonrpc.Peer) {
	t.Helper()
	start := time.Now()
	p.Close()
	if d := time.Since(start); d > closeBound {
		t.Errorf("Peer.Close took %v with the close frame unanswered, want under %v", d, closeBound)
	}
}

// TestCloseUnansweredHandshake pins that a Peer's Close is bounded when the
// other side completes the upgrade and then never answers the close frame:
// coder/websocket alone would wait 5 s for it.
func TestCloseUnansweredHandshake(t *testing.T) {
	t.Run("server Peer, raw TCP client that never reads", func(t *testing.T) {
		ts := startServer(t, &ws.Server{}, nil)
		dialRawWS(t, ts) // upgraded, then silent
		server := ts.nextPeer(t)
		closeWithin(t, server)
		waitErr(t, "server Wait", server)
	})
	t.Run("binary message from a client that never reads", func(t *testing.T) {
		ts := startServer(t, &ws.Server{}, nil)
		raw := dialRawWS(t, ts)
		server := ts.nextPeer(t)
		start := time.Now()
		// A masked binary frame (mask key zero) of one byte: the server
		// closes with 1008 and waits for an answer that never comes.
		if _, err := raw.Write([]byte{0x82, 0x80 | 1, 0, 0, 0, 0, 'x'}); err != nil {
			t.Fatal(err)
		}
		if err := waitErr(t, "server Wait", server); !errors.Is(err, ws.ErrBinaryMessage) {
			t.Errorf("server Wait = %v, want ErrBinaryMessage", err)
		}
		if d := time.Since(start); d > closeBound {
			t.Errorf("server Peer ended %v after the binary message, want under %v", d, closeBound)
		}
	})
	t.Run("client Peer, server that never reads", func(t *testing.T) {
		var handlers handlerWG
		release := make(chan struct{})
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handlers.Add(1)
			defer handlers.Done()
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			select { // accept, then never read: the close frame waits
			case <-release:
			case <-time.After(wait):
			}
		}))
		t.Cleanup(func() {
			close(release)
			handlers.wait(t)
			hs.Close()
		})
		url := "ws" + strings.TrimPrefix(hs.URL, "http")
		client, err := ws.Dial(testCtx(t, wait), url, ws.DialOptions{HTTPClient: hs.Client()})
		if err != nil {
			t.Fatal(err)
		}
		closeWithin(t, client)
		waitErr(t, "client Wait", client)
	})
}

// TestCloseGoingAwayAndNoStatusAreClean pins that a client closing with 1001
// (going away: a browser tab closing) or with no status at all (1005) ends
// the server's Peer cleanly, as 1000 does: its Wait returns nil.
func TestCloseGoingAwayAndNoStatusAreClean(t *testing.T) {
	for _, code := range []websocket.StatusCode{websocket.StatusGoingAway, websocket.StatusNoStatusRcvd} {
		t.Run(code.String(), func(t *testing.T) {
			ts := startServer(t, &ws.Server{}, nil)
			c := ts.rawDial(t, nil)
			server := ts.nextPeer(t)
			closed := make(chan error, 1)
			// coder/websocket sends a close frame with an empty payload
			// for StatusNoStatusRcvd, which the other side reads as 1005.
			go func() { closed <- c.Close(code, "") }()
			if err := waitErr(t, "server Wait", server); err != nil {
				t.Errorf("server Wait after close %d = %v, want nil", code, err)
			}
			if err := within(t, closed, "raw Close"); err != nil {
				t.Errorf("raw Close(%d): %v", code, err)
			}
		})
	}
}

// TestBrowserClientGoneIsClean pins that the status the package's own
// browser client (jsonrpc.js) closes a connection with when it takes it for
// dead and reconnects (heartbeat silence, the browser offline), 4001
// "gone", ends the server's Peer cleanly: normal life for a page, not an
// error for the server's logs and OnDisconnect (issue 31, point 9). The
// status with another reason is an application's own, and stays an error.
func TestBrowserClientGoneIsClean(t *testing.T) {
	for _, tc := range []struct {
		reason string
		clean  bool
	}{{"gone", true}, {"an application's own 4001", false}} {
		t.Run(tc.reason, func(t *testing.T) {
			ts := startServer(t, &ws.Server{}, nil)
			c := ts.rawDial(t, nil)
			server := ts.nextPeer(t)
			closed := make(chan error, 1)
			go func() { closed <- c.Close(4001, tc.reason) }()
			err := waitErr(t, "server Wait", server)
			if tc.clean && err != nil {
				t.Errorf("server Wait after close 4001 %q = %v, want nil (jsonrpc.js's own close)", tc.reason, err)
			}
			var ce websocket.CloseError
			if !tc.clean && (!errors.As(err, &ce) || ce.Code != 4001) {
				t.Errorf("server Wait after close 4001 %q = %v, want a websocket.CloseError with code 4001", tc.reason, err)
			}
			within(t, closed, "raw Close")
		})
	}
}

// TestAbnormalEndCauses pins what the server Peer's Wait returns for an
// abnormal end: an application status from the other side is found by
// errors.As as a websocket.CloseError, and a TCP connection dropped without
// a close frame (1006) wraps ErrConnectionLost and does not look like the
// clean end io.EOF stands for.
func TestAbnormalEndCauses(t *testing.T) {
	t.Run("close 4000", func(t *testing.T) {
		ts := startServer(t, &ws.Server{}, nil)
		c := ts.rawDial(t, nil)
		server := ts.nextPeer(t)
		closed := make(chan error, 1)
		go func() { closed <- c.Close(4000, "application status") }()
		err := waitErr(t, "server Wait", server)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4000 {
			t.Errorf("server Wait = %v, want a websocket.CloseError with code 4000", err)
		}
		within(t, closed, "raw Close")
	})
	t.Run("TCP dropped without a close frame", func(t *testing.T) {
		ts := startServer(t, &ws.Server{}, nil)
		c := ts.rawDial(t, nil)
		server := ts.nextPeer(t)
		c.CloseNow() // TCP close, no close frame: 1006 abnormal closure
		err := waitErr(t, "server Wait", server)
		if err == nil || errors.Is(err, io.EOF) || !errors.Is(err, ws.ErrConnectionLost) {
			t.Errorf("server Wait = %v, want an error wrapping ErrConnectionLost, not io.EOF", err)
		}
	})
}
