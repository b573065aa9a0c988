package ws

import (
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

// maxStatusBody bounds StatusError.Body, and maxQuoted what its Error
// quotes of it.
const (
	maxStatusBody = 1 << 10
	maxQuoted     = 160
)

// StatusError is the error of a WebSocket handshake that the server
// refused with an HTTP status (Dial returns it; a Client's errors wrap
// it): find it with errors.As. A Client gives up at once on 401, 403 and
// 404 (see ClientOptions.GiveUp).
type StatusError struct {
	// Code is the HTTP status code of the server's answer.
	Code int
	// Body is the start of the answer's body (at most 1 KiB), which
	// usually says why.
	Body []byte
}

// Error gives the status, the start of the body, and what to do about
// the status where one thing usually is.
func (e *StatusError) Error() string {
	body := e.Body
	if len(body) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = append(body[:cut:cut], "…"...)
	}
	msg := fmt.Sprintf("ws: handshake refused with HTTP status %d %s: %q", e.Code, http.StatusText(e.Code), body)
	if hint := statusHint(e.Code); hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

// statusHint says what to do about a status, where one thing usually is.
func statusHint(code int) string {
	switch {
	case code == http.StatusUnauthorized:
		return "the server wants credentials, or fresh ones: send them in the upgrade request's header, from a Client's Prepare hook"
	case code == http.StatusForbidden:
		return "the server refused this client: check its credentials, and the server's allowed hosts and origins"
	case code == http.StatusNotFound:
		return "nothing is served at this URL: check its path"
	case code == http.StatusServiceUnavailable:
		return "the server is full or shutting down: try again later"
	case code >= 200 && code < 300:
		return "this URL serves plain HTTP, not a WebSocket: check its path"
	}
	return ""
}

// statusError returns the StatusError of a handshake answered with resp,
// or nil if resp is no refusal (none came, or the server switched
// protocols and something else failed).
func statusError(resp *http.Response) *StatusError {
	if resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return nil
	}
	e := &StatusError{Code: resp.StatusCode}
	if resp.Body != nil {
		e.Body, _ = io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	}
	return e
}
