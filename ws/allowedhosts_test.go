//go:build !js

package ws_test

import (
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestServerAllowedHosts pins AllowedHosts: a Server that lists its names
// answers to those (a reverse proxy passing its public Host on to a
// loopback listener, say) and refuses other names, loopback ones too.
func TestServerAllowedHosts(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}, AllowedHosts: []string{"chat.example.com"}}, nil)
	if got := upgradeStatus(t, ts, "chat.example.com", "https://chat.example.com"); !strings.Contains(got, "101") {
		t.Errorf("the listed name: %q, want 101", got)
	}
	ts.nextPeer(t)
	if got := upgradeStatus(t, ts, "localhost", "http://localhost"); !strings.Contains(got, "403") {
		t.Errorf("a name not listed: %q, want 403", got)
	}
}
