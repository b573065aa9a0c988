//go:build js

package ws

import "net/http"

// dialOptions returns the options of an attempt, which sends no header
// and makes no request of its own.
func (o *ClientOptions) dialOptions(h http.Header) (DialOptions, error) {
	if len(h) > 0 || o.HTTPClient != nil {
		return DialOptions{}, errBrowserHTTP
	}
	return DialOptions{Peer: o.Peer, Conn: o.Conn}, nil
}
