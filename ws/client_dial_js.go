//go:build js

package ws

import (
	"errors"
	"net/http"
)

// errBrowserHeader is the error of an attempt that would send a header
// from the browser, which makes the upgrade request itself.
var errBrowserHeader = errors.New("ws: a browser makes the upgrade request itself: it cannot send HTTPHeader, nor what Prepare put in Attempt.Header")

// header returns the header every attempt starts from: none.
func (o *ClientOptions) header() http.Header { return nil }

// dialOptions returns the options of an attempt, which sends no header.
func (o *ClientOptions) dialOptions(h http.Header) (DialOptions, error) {
	if len(h) > 0 {
		return DialOptions{}, errBrowserHeader
	}
	return o.Dial, nil
}
