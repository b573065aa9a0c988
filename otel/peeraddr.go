package otel

import (
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/peerwire/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
)

// peerAddrs keeps the network.peer.* attributes of each Peer a recording
// span has met, made once per Peer from jsonrpc.Peer.RemoteAddr and
// forgotten when the Peer ends.
type peerAddrs struct{ m sync.Map } // *jsonrpc.Peer -> *peerAddr

type peerAddr struct{ attrs []attribute.KeyValue }

// of returns p's network.peer.address and network.peer.port (none when
// its Conn does not know the address, or p is nil).
func (a *peerAddrs) of(p *jsonrpc.Peer) []attribute.KeyValue {
	if p == nil {
		return nil
	}
	if v, ok := a.m.Load(p); ok {
		return v.(*peerAddr).attrs
	}
	v := &peerAddr{addrAttrs(p.RemoteAddr())}
	if _, loaded := a.m.LoadOrStore(p, v); !loaded {
		p.AfterFunc(func() { a.m.Delete(p) })
	}
	return v.attrs
}

// addrAttrs returns the attributes of addr: an IP address (IPv4 without
// its IPv6 mapping) and a port, a Unix socket's name, or for any other
// kind of address its text, split into host and port if it has both.
func addrAttrs(addr net.Addr) []attribute.KeyValue {
	switch a := addr.(type) {
	case nil:
		return nil
	case *net.TCPAddr:
		if a == nil {
			return nil
		}
		return ipPort(a.AddrPort())
	case *net.UDPAddr:
		if a == nil {
			return nil
		}
		return ipPort(a.AddrPort())
	case *net.UnixAddr:
		if a == nil || a.Name == "" {
			return nil
		}
		return []attribute.KeyValue{keyPeerAddress.String(a.Name)}
	}
	s := addr.String()
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return []attribute.KeyValue{keyPeerAddress.String(s)}
	}
	kvs := []attribute.KeyValue{keyPeerAddress.String(host)}
	if n, err := strconv.Atoi(port); err == nil {
		kvs = append(kvs, keyPeerPort.Int(n))
	}
	return kvs
}

func ipPort(ap netip.AddrPort) []attribute.KeyValue {
	if !ap.Addr().IsValid() {
		return nil
	}
	return []attribute.KeyValue{keyPeerAddress.String(ap.Addr().Unmap().String()), keyPeerPort.Int(int(ap.Port()))}
}
