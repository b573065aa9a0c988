package httprpc

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// errForeignOrigin is why a request from a browser page of another origin
// is refused (HTTP 403).
var errForeignOrigin = errors.New("httprpc: request origin not allowed")

// checkOrigin accepts a request without an Origin header (a client that is
// not a browser page), or whose Origin names the request's own host, or a
// host matching one of patterns, as path.Match matches it (case folded):
// "*.example.com", "localhost:*". Anything else is refused, so that a page
// of another site, or a DNS-rebound name, cannot reach a local server
// through a visitor's browser. An Origin of "null" (a sandboxed page, a
// file) is refused unless a pattern is "null".
func checkOrigin(r *http.Request, patterns []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	host := origin
	if origin != "null" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%w: malformed Origin %q", errForeignOrigin, origin)
		}
		host = u.Host
		if strings.EqualFold(host, r.Host) {
			return nil
		}
	}
	host = strings.ToLower(host)
	for _, p := range patterns {
		if ok, err := path.Match(strings.ToLower(p), host); err != nil {
			return fmt.Errorf("httprpc: malformed origin pattern %q: %w", p, err)
		} else if ok {
			return nil
		}
	}
	return fmt.Errorf("%w: %q", errForeignOrigin, origin)
}
