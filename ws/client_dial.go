//go:build !js

package ws

import "net/http"

// dialOptions returns the options of an attempt that sends h.
func (o *ClientOptions) dialOptions(h http.Header) (DialOptions, error) {
	return DialOptions{Peer: o.Peer, Conn: o.Conn, HTTPClient: o.HTTPClient, HTTPHeader: h}, nil
}
