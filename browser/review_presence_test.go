//go:build unix

package browser_test

import (
	"testing"
	"time"
)

// TestNodeReviewPresenceAfterReconnect runs test/review_presence.test.mjs
// against the test server's package topic Hub (presence on "presence-*",
// the user from ?user=): the list docs/browser.md tells a page to keep
// (presence() after the subscribe, then the events of a higher version)
// after the page's connection drops and comes back.
func TestNodeReviewPresenceAfterReconnect(t *testing.T) {
	s := startTestServer(t)
	runNode(t, 60*time.Second, []string{"JSONRPC_BASE=" + s.hs.URL},
		"--experimental-websocket", "--test", "--test-reporter=spec", "--test-timeout=30000", "review_presence.test.mjs")
}
