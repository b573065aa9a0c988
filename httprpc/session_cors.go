package httprpc

import (
	"net/http"
	"slices"
	"strings"

	"github.com/peerwire/jsonrpc/internal/hostguard"
)

// CORS for the pages of the origins OriginPatterns allows (hostguard has
// refused the others, 403, before): a page of another origin must be
// told, by a preflight's answer and by each response, that it may send
// the transport's headers and read the responses and the session id. A
// page of the endpoint's own origin needs none of it.

// corsAllowHeaders are the request headers an allowed page may send.
const corsAllowHeaders = "Content-Type, Accept, Authorization, " + SessionIDHeader + ", " + ProtocolVersionHeader + ", " + lastEventIDHeader

// CORS is for authentication middleware in front of the SessionServer. A
// browser's preflight (OPTIONS) carries no Authorization header, so the
// middleware must let it through, and a page can read a refusal (401)
// only if it carries the CORS headers. For a request from a page of an
// origin OriginPatterns allows (on a Host the SessionServer answers to),
// CORS adds those headers to w and, for a preflight, answers it (204) and
// reports true: the middleware then returns. It does nothing for any
// other request (a refused origin's preflight gets no CORS headers, and
// the browser refuses the page's request).
//
//	if srv.CORS(w, r) {
//		return // a preflight, answered
//	}
//	if !signedIn(r) {
//		http.Error(w, "sign in", http.StatusUnauthorized) // readable by the allowed pages
//		return
//	}
//	srv.ServeHTTP(w, r)
func (s *SessionServer) CORS(w http.ResponseWriter, r *http.Request) (answered bool) {
	if hostguard.Check(r, s.AllowedHosts, s.OriginPatterns) != nil {
		return false
	}
	return s.cors(w, r)
}

// cors adds the CORS headers of a request from a page of another origin,
// and answers its preflight (OPTIONS), reporting true; a preflight of
// anything but another origin gets 405. It may run twice for a request
// (CORS, then ServeHTTP): the headers are set once.
func (s *SessionServer) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	cross := origin != "" && !sameOrigin(origin, r.Host)
	preflight := r.Method == http.MethodOptions
	if cross {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		if !slices.Contains(h.Values("Vary"), "Origin") {
			h.Add("Vary", "Origin")
		}
		h.Set("Access-Control-Expose-Headers", SessionIDHeader)
		if preflight {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return true
		}
	}
	return false
}

// sameOrigin reports whether origin names host (the Host header).
func sameOrigin(origin, host string) bool {
	_, rest, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(rest, host)
}
