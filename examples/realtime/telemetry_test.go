//go:build unix

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"
)

// collector is a stand-in for an OTLP/HTTP collector: it keeps the bodies
// POSTed to /v1/traces, or, when hang is set, holds every request until
// the test ends.
type collector struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	ctypes []string
}

func startCollector(t *testing.T, hang bool) *collector {
	c := &collector{}
	release := make(chan struct{})
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang {
			<-release
			return
		}
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		defer c.mu.Unlock()
		if r.URL.Path == "/v1/traces" && r.Method == http.MethodPost {
			c.bodies = append(c.bodies, body)
			c.ctypes = append(c.ctypes, r.Header.Get("Content-Type"))
		}
	}))
	t.Cleanup(func() { close(release); c.Close() })
	return c
}

// received reports whether one body the collector got holds every one of
// strs (names and attribute values travel as plain bytes in OTLP's
// protobuf).
func (c *collector) received(strs ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bodies {
		all := true
		for _, s := range strs {
			all = all && bytes.Contains(b, []byte(s))
		}
		if all {
			return true
		}
	}
	return false
}

// TestOTLPExport pins -otlp: a node exports the spans of its pages' calls
// to the collector's /v1/traces, with the service name it was given, and
// its shutdown flushes them (the batch's 5 s delay not yet past); the
// standard OTEL_EXPORTER_OTLP_ENDPOINT turns the export on as the flag
// does; and a collector that never answers holds the node's exit no
// longer than the flush bound (flushTimeout, 5 s).
func TestOTLPExport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo and runs its process")
	}
	bin := buildDemo(t)
	post := func(t *testing.T, n *node) {
		alice := dialPage(t, n.url, "alice", "alice")
		retryPost(t, alice, "traced", 20*time.Second)
		alice.Close()
	}
	t.Run("flag", func(t *testing.T) {
		c := startCollector(t, false)
		n := startNode(t, bin, "n1", "-otlp", c.URL, "-otlp-service", "realtime-flag")
		post(t, n)
		n.stop(t, syscall.SIGTERM)
		if !c.received("board.post", "realtime-flag", "jsonrpc") {
			t.Fatal("the collector got no span of board.post from service realtime-flag")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.ctypes[0] != "application/x-protobuf" {
			t.Errorf("Content-Type %q, want OTLP's protobuf", c.ctypes[0])
		}
	})
	t.Run("env", func(t *testing.T) {
		c := startCollector(t, false)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
		t.Setenv("OTEL_SERVICE_NAME", "realtime-env")
		n := startNode(t, bin, "n1")
		post(t, n)
		n.stop(t, syscall.SIGTERM)
		if !c.received("board.post", "realtime-env") {
			t.Fatal("the collector got no span of board.post from service realtime-env")
		}
	})
	t.Run("hanging collector", func(t *testing.T) {
		c := startCollector(t, true)
		n := startNode(t, bin, "n1", "-otlp", c.URL)
		post(t, n)
		start := time.Now()
		n.stop(t, syscall.SIGTERM) // fails the test if the node lingers 10 s
		if d := time.Since(start); d > 9*time.Second {
			t.Errorf("the node exited %v after SIGTERM with a collector that never answers, want within the 5 s flush bound and the 2 s page shutdown", d)
		}
	})
}
