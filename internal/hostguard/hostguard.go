// Package hostguard holds the rule that httprpc's and ws's servers apply to
// a request's Host and Origin headers, against DNS rebinding and cross-site
// use from browser pages.
//
// Same-origin is not enough: a page whose name an attacker rebinds to an
// address of this machine (127.0.0.1, or its address on the LAN) sends
// that name as both Host and Origin, so its requests look same-origin to a
// server that only compares the two. Only a name can be rebound: an IP
// literal is what it is. So without a list of the server's names (Hosts),
// Check refuses every Host name that is not an IP literal or a localhost
// name: on a connection that arrived on a loopback address it takes
// loopback names only (localhost, 127.0.0.1, [::1]); on any other address
// (a server listening on all interfaces, reached at its LAN address) IP
// literals and localhost names. A server reached by a name lists it
// (Hosts; "*" takes any name, for a server whose proxy checks the Host). A
// request served without net/http's Server, which gives no local address,
// is not checked.
package hostguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
)

// ErrHost is wrapped by Check's error for a Host header refused.
var ErrHost = errors.New("request Host not allowed")

// ErrOrigin is wrapped by Check's error for an Origin header refused.
var ErrOrigin = errors.New("request origin not allowed")

// Check applies the rule to r. hosts lists the host names (path.Match
// patterns, case folded, matched against the Host header without its
// port: "example.com", "*.example.com", "*") the server answers to; none
// means loopback names only on a connection to a loopback address, and IP
// literals and localhost names on any other. originPatterns lists the origins of other hosts whose
// browser pages may send requests, matched against the Origin's host
// (with its port) or, for a pattern holding "://", the whole origin; an
// Origin naming the request's own (allowed) Host always passes, a request
// without an Origin header (a client that is not a browser page) too, and
// "null" only when a pattern is "null". The error wraps ErrHost or
// ErrOrigin, and says what to configure.
func Check(r *http.Request, hosts, originPatterns []string) error {
	if err := checkHost(r, hosts); err != nil {
		return err
	}
	return checkOrigin(r, originPatterns)
}

// checkHost applies the Host half of the rule.
func checkHost(r *http.Request, hosts []string) error {
	name := hostname(r.Host)
	if len(hosts) > 0 {
		for _, p := range hosts {
			if ok, err := path.Match(strings.ToLower(p), name); err != nil {
				return fmt.Errorf("malformed host pattern %q: %w", p, err)
			} else if ok {
				return nil
			}
		}
		return fmt.Errorf("%w: %q is not one of the server's names %q", ErrHost, r.Host, hosts)
	}
	local, known := localAddr(r)
	switch {
	case !known || isLoopbackName(name):
		return nil
	case local.IsLoopback():
		return fmt.Errorf("%w: %q on a server listening on loopback, which answers to localhost, 127.0.0.1 and [::1] only (list the server's names in its AllowedHosts to serve others)", ErrHost, r.Host)
	case name == "" || isIPLiteral(name):
		return nil
	}
	return fmt.Errorf("%w: %q is a name the server does not list: a page whose name an attacker points at this machine would send it too (DNS rebinding); list the server's names in its AllowedHosts (\"*\" for any), or reach it by its IP address", ErrHost, r.Host)
}

// checkOrigin applies the Origin half of the rule.
func checkOrigin(r *http.Request, patterns []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	host := origin
	if origin != "null" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%w: malformed Origin %q", ErrOrigin, origin)
		}
		host = strings.ToLower(u.Host)
		if host == strings.ToLower(r.Host) {
			return nil
		}
	}
	for _, p := range patterns {
		target := host
		if strings.Contains(p, "://") {
			target = strings.ToLower(origin)
		}
		if ok, err := path.Match(strings.ToLower(p), target); err != nil {
			return fmt.Errorf("malformed origin pattern %q: %w", p, err)
		} else if ok {
			return nil
		}
	}
	return fmt.Errorf("%w: %q (list it in OriginPatterns to allow its pages)", ErrOrigin, origin)
}

// hostname is a Host header's name without its port, lower case, without
// the brackets of an IPv6 literal.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

// isLoopbackName reports whether name reaches this machine's loopback by
// itself, whatever DNS says: localhost (RFC 6761: resolved to loopback
// without DNS; browsers do, for its subdomains too) or a loopback IP
// literal.
func isLoopbackName(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.IsLoopback()
}

// localAddr returns the address of this machine that r arrived on
// (http.Server puts the connection's local address in the request's
// context), and false if r carries none.
func localAddr(r *http.Request) (netip.Addr, bool) {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return netip.Addr{}, false
	}
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, ok := netip.AddrFromSlice(ta.IP)
		return ip.Unmap(), ok
	}
	ap, err := netip.ParseAddrPort(a.String())
	return ap.Addr().Unmap(), err == nil
}

// isIPLiteral reports whether name is an IP address (no brackets, no
// zone), which no DNS answer can point elsewhere.
func isIPLiteral(name string) bool {
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Zone() == ""
}
