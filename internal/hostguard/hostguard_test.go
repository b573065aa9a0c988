package hostguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCheck pins the rule, a row per request: the Host and Origin
// headers, the address the connection arrived on, the names listed, the
// origin patterns, and the error wanted (nil, ErrHost or ErrOrigin).
func TestCheck(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	loop6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}
	lan := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}
	for _, tc := range []struct {
		name           string
		local          net.Addr
		host, origin   string
		hosts, origins []string
		want           error
	}{
		{"loopback, localhost", loop, "localhost:8080", "", nil, nil, nil},
		{"loopback, 127.0.0.1", loop, "127.0.0.1:8080", "", nil, nil, nil},
		{"loopback, 127.1.2.3", loop, "127.1.2.3", "", nil, nil, nil},
		{"loopback, [::1]", loop6, "[::1]:8080", "http://[::1]:8080", nil, nil, nil},
		{"loopback, app.localhost", loop, "app.localhost:8080", "", nil, nil, nil},
		{"loopback, a rebound name", loop, "rebind.attacker.example:8080", "http://rebind.attacker.example:8080", nil, nil, ErrHost},
		{"loopback, a rebound name, no Origin", loop, "rebind.attacker.example", "", nil, nil, ErrHost},
		{"loopback, a LAN address as Host", loop, "192.0.2.10:8080", "", nil, nil, ErrHost},
		{"loopback, a listed name", loop, "mcp.example.com", "", []string{"mcp.example.com"}, nil, nil},
		{"listed names only", loop, "localhost", "", []string{"mcp.example.com"}, nil, ErrHost},
		{"a listed pattern", lan, "EU.mcp.example.com:443", "", []string{"*.mcp.example.com"}, nil, nil},
		{"elsewhere, a name not listed", lan, "api.example.com", "https://api.example.com", nil, nil, ErrHost},
		{"elsewhere, a rebound name", lan, "rebind.attacker.example:8931", "http://rebind.attacker.example:8931", nil, nil, ErrHost},
		{"elsewhere, its IP address", lan, "192.0.2.10:8080", "http://192.0.2.10:8080", nil, nil, nil},
		{"elsewhere, an IPv6 literal", lan, "[2001:db8::1]:8080", "", nil, nil, nil},
		{"elsewhere, localhost", lan, "localhost:8080", "", nil, nil, nil},
		{"elsewhere, a listed name", lan, "api.example.com", "https://api.example.com", []string{"api.example.com"}, nil, nil},
		{"elsewhere, any name listed", lan, "api.example.com", "", []string{"*"}, nil, nil},
		{"elsewhere, listed names only", lan, "evil.example", "", []string{"api.example.com"}, nil, ErrHost},
		{"an Origin of another host", lan, "api.example.com", "https://evil.example", []string{"*"}, nil, ErrOrigin},
		{"an Origin pattern", lan, "api.example.com", "https://app.example.com", []string{"*"}, []string{"*.example.com"}, nil},
		{"an Origin pattern with a scheme", lan, "api.example.com", "http://app.example.com", []string{"*"}, []string{"https://*.example.com"}, ErrOrigin},
		{"a null Origin", lan, "api.example.com", "null", []string{"*"}, nil, ErrOrigin},
		{"a null Origin allowed", lan, "api.example.com", "null", []string{"*"}, []string{"null"}, nil},
		{"a malformed Origin", lan, "api.example.com", "::", []string{"*"}, nil, ErrOrigin},
		{"no local address (not from an http.Server)", nil, "anything.example", "", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.local != nil {
				r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
			}
			err := Check(r, tc.hosts, tc.origins)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Check: %v, want %v", err, tc.want)
			}
		})
	}
}
