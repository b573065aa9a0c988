// Package bench compares github.com/peerwire/jsonrpc with other Go JSON-RPC
// libraries and with raw echo limits of the same transports. The harness is
// here; the workloads are the benchmarks in bench_test.go; run.sh runs them.
//
// Every implementation is an Impl: it starts a server running the same
// Service logic, connects one client to it over loopback TCP or WebSocket,
// and hands the client back behind the Client interface, so that every
// workload drives every implementation through the same calls.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Method names the workloads use. Adapters translate them if a library
// names methods otherwise (go-ethereum: "bench_add").
const (
	MethodAdd      = "add"
	MethodEcho     = "echo"
	MethodComplete = "complete" // W7: a list of completion items
	MethodTick     = "tick"     // a notification: the server counts it
)

// AddParams are the params of add: {"a":1,"b":2}.
type AddParams struct {
	A int `json:"a"`
	B int `json:"b"`
}

// EchoParams are the params of echo: {"s":"..."}; the result is s.
type EchoParams struct {
	S string `json:"s"`
}

// TickParams are the params of the tick notification: {"n":1}.
type TickParams struct {
	N int `json:"n"`
}

// EchoSize is the length of the string W1echo sends and gets back.
const EchoSize = 1024

// EchoString is the 1 KiB string of W1echo.
var EchoString = strings.Repeat("x", EchoSize)

// BigEchoSize is the length of the string W6 sends and gets back.
const BigEchoSize = 64 << 10

// BigEchoString is the 64 KiB string of W6: ASCII that JSON carries
// without escapes, so its encoding is BigEchoSize bytes plus the quotes.
var BigEchoString = strings.Repeat("0123456789abcdef", BigEchoSize/16)

// CompleteParams are the params of complete: {"n":1000}; the result is
// the first n items of Completions.
type CompleteParams struct {
	N int `json:"n"`
}

// CompletionItem is one element of complete's result, shaped like an LSP
// completion item.
type CompletionItem struct {
	Label      string `json:"label"`
	Kind       int    `json:"kind"`
	Detail     string `json:"detail"`
	InsertText string `json:"insertText"`
	SortText   string `json:"sortText"`
}

// CompleteN is the number of items W7 asks for.
const CompleteN = 1000

// Completions is the list complete serves, built once so that a server
// spends its time encoding it, not building it: 1,000 items whose JSON
// array is CompletionsSize bytes (about 100 KiB).
var Completions = func() []CompletionItem {
	items := make([]CompletionItem, CompleteN)
	for i := range items {
		label := fmt.Sprintf("Item%04d", i)
		items[i] = CompletionItem{
			Label:      label,
			Kind:       2 + i%3, // LSP's Method, Function, Constructor
			Detail:     "func(n int) string",
			InsertText: label + "()",
			SortText:   fmt.Sprintf("%04d", i),
		}
	}
	return items
}()

// CompletionsSize is the length of Completions' JSON encoding: W7's
// payload.
var CompletionsSize = func() int {
	b, err := json.Marshal(Completions)
	if err != nil {
		panic(err)
	}
	return len(b)
}()

// Client is what every workload drives: one connection to a server.
type Client interface {
	// Call calls method with params and unmarshals the result into
	// result (raw clients do not unmarshal anything).
	Call(ctx context.Context, method string, params, result any) error
	// Notify sends a notification.
	Notify(ctx context.Context, method string, params any) error
}

// Batcher is a Client that can send one batch of calls. The library's
// own client batch API is used; results[i] receives the i-th result.
type Batcher interface {
	Batch(ctx context.Context, method string, params []any, results []any) error
}

// Impl is one implementation under test.
type Impl interface {
	// Name is "<library>-<transport>", transport being ws, tcp-header or
	// tcp-line; raw limits are named raw-<transport>, JSON floors
	// floor-<transport>.
	Name() string
	// Start starts a server serving svc and connects a client to it.
	// stop closes both and waits for them.
	Start(tb testing.TB, svc *Service) (c Client, stop func())
}

// IsRaw reports whether im is a raw echo limit: its clients do not parse
// replies, so results are not checked.
func IsRaw(im Impl) bool { return strings.HasPrefix(im.Name(), "raw-") }

// IsFloor reports whether im is a JSON floor (floor.go): the raw transport
// plus one Marshal and one Unmarshal on each side.
func IsFloor(im Impl) bool { return strings.HasPrefix(im.Name(), "floor-") }

// Impls lists every implementation, in the order the benchmarks run them.
func Impls() []Impl {
	return []Impl{
		OursWS{},
		OursTCP{Line: false},
		OursTCP{Line: true},
		SourcegraphTCP{},
		Jrpc2TCP{Line: false},
		Jrpc2TCP{Line: true},
		XExpTCP{},
		GethWS{},
		RawWS{},
		RawTCP{Line: false},
		RawTCP{Line: true},
		FloorWS{},
		FloorTCP{Line: false},
		FloorTCP{Line: true},
	}
}

// Service is the server logic every implementation serves.
type Service struct {
	ticks  atomic.Int64
	target atomic.Int64
	done   atomic.Pointer[chan struct{}]
	mu     sync.Mutex // serialises Arm
}

// Add is the add method.
func (s *Service) Add(p AddParams) int { return p.A + p.B }

// Echo is the echo method.
func (s *Service) Echo(p EchoParams) string { return p.S }

// Complete is the complete method: the first p.N items of Completions
// (all of them if p.N is larger), shared, not copied.
func (s *Service) Complete(p CompleteParams) []CompletionItem {
	return Completions[:max(0, min(p.N, len(Completions)))]
}

// Tick counts a tick notification.
func (s *Service) Tick() {
	if n := s.ticks.Add(1); n == s.target.Load() {
		if d := s.done.Load(); d != nil {
			close(*d)
		}
	}
}

// Arm resets the tick count and returns a channel closed when n ticks
// have been counted since. n must be at least 1.
func (s *Service) Arm(n int64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := make(chan struct{})
	s.done.Store(&d)
	s.target.Store(-1)
	s.ticks.Store(0)
	s.target.Store(n)
	return d
}

// Ticks returns the ticks counted since the last Arm.
func (s *Service) Ticks() int64 { return s.ticks.Load() }

// StallTimeout is how long WaitTicks waits without a new tick before it
// concludes that the rest of the notifications were dropped.
const StallTimeout = 500 * time.Millisecond

// WaitTicks waits for the channel Arm(want) returned. If no tick arrives
// for StallTimeout first, the missing ones were dropped: it returns how
// many, and when the last tick was seen (to within a millisecond), so
// that the caller can time what was delivered.
func (s *Service) WaitTicks(done <-chan struct{}, want int64) (lost int64, last time.Time) {
	select {
	case <-done:
		return 0, time.Now()
	default:
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	seen, last := s.Ticks(), time.Now()
	for {
		select {
		case <-done:
			return 0, time.Now()
		case now := <-t.C:
			if n := s.Ticks(); n != seen {
				seen, last = n, now
			} else if now.Sub(last) > StallTimeout {
				return want - n, last
			}
		}
	}
}
