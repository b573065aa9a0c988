// Package netaddr gives the transports the net.Addr of the remote side of
// an HTTP request, for jsonrpc.RemoteAddresser.
package netaddr

import (
	"net"
	"net/http"
	"net/netip"
)

// OfRequest returns the address of the client of r (its RemoteAddr, which
// net/http sets to "ip:port" for a TCP connection) as a *net.TCPAddr, or
// nil when it is not an IP address and port (a Unix socket, a handler
// called directly).
func OfRequest(r *http.Request) net.Addr { return Parse(r.RemoteAddr) }

// Parse returns s, an "ip:port", as a *net.TCPAddr, or nil when it is not
// one.
func Parse(s string) net.Addr {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}
