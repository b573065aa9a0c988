package httprpc

import (
	"net/http"
	"strings"
)

// CORS for the pages of the origins OriginPatterns allows (hostguard has
// refused the others, 403, before): a page of another origin must be
// told, by a preflight's answer and by each response, that it may send
// the transport's headers and read the responses and the session id. A
// page of the endpoint's own origin needs none of it.

// corsAllowHeaders are the request headers an allowed page may send.
const corsAllowHeaders = "Content-Type, Accept, Authorization, " + SessionIDHeader + ", " + ProtocolVersionHeader + ", " + lastEventIDHeader

// cors adds the CORS headers of a request from a page of another origin,
// and answers its preflight (OPTIONS), reporting true; a preflight of
// anything but another origin gets 405.
func (s *SessionServer) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	cross := origin != "" && !sameOrigin(origin, r.Host)
	preflight := r.Method == http.MethodOptions
	if cross {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
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
