package ws

import (
	"errors"
	"fmt"
	"net/url"
)

// ErrBadURL is wrapped by the error of a Dial, or of a Client's attempt,
// given a URL that is no WebSocket URL: one that does not parse, has a
// scheme other than ws, wss, http or https (none, say: "127.0.0.1/rpc"), or
// has no host. A Client gives up on it at once, whatever its GiveUp
// (TestClientGivesUpOnWhatCannotChange).
var ErrBadURL = errors.New("ws: not a WebSocket URL")

// checkURL returns an error wrapping ErrBadURL if raw is no WebSocket URL.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %q: %w", ErrBadURL, raw, err)
	case u.Scheme != "ws" && u.Scheme != "wss" && u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: %q: scheme %q, want ws:// or wss:// (as in ws://127.0.0.1:8080/rpc)", ErrBadURL, raw, u.Scheme)
	case u.Host == "":
		return fmt.Errorf("%w: %q has no host (as in ws://127.0.0.1:8080/rpc)", ErrBadURL, raw)
	}
	return nil
}
