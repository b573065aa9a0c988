//go:build !js

package ws_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// upgradeStatus sends a WebSocket upgrade request for ts with the given
// Host and Origin headers, raw (net/http's client would send the URL's
// host), and returns the response's status line.
func upgradeStatus(t *testing.T, ts *testServer, host, origin string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", ts.hs.Listener.Addr().String(), wait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(wait))
	req := "GET / HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: " + origin + "\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the upgrade's answer: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestServerRefusesReboundHost pins DNS rebinding protection (issue 29,
// finding 1): a page whose name an attacker rebinds to 127.0.0.1 sends
// that name as both Host and Origin, which the same-origin rule alone
// lets in. A Server listening on loopback refuses such an upgrade (403)
// by default, and takes one from a page of its own loopback name.
func TestServerRefusesReboundHost(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}}, nil)
	if got := upgradeStatus(t, ts, "rebind.attacker.example", "http://rebind.attacker.example"); !strings.Contains(got, "403") {
		t.Errorf("a rebound page's upgrade: %q, want 403", got)
	}
	_, port, _ := net.SplitHostPort(ts.hs.Listener.Addr().String())
	local := "localhost:" + port
	if got := upgradeStatus(t, ts, local, "http://"+local); !strings.Contains(got, "101") {
		t.Errorf("a page of localhost's upgrade: %q, want 101", got)
	}
	ts.nextPeer(t)
	if got := upgradeStatus(t, ts, local, "http://127.0.0.1:"+port); !strings.Contains(got, "403") {
		t.Errorf("a page of another origin: %q, want 403", got)
	}
}
