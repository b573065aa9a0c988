package jsonrpc

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// These benchmarks measure the Peer alone over the in-memory Pipe (no
// framing, no socket); bench/ compares whole stacks with other libraries.

type addParams struct{ A, B int }

type echoParams struct {
	Text string `json:"text"`
}

func benchPair(b *testing.B) *Peer {
	m := NewMux()
	Register(m, "add", func(ctx context.Context, p addParams) (int, error) { return p.A + p.B, nil })
	Register(m, "echo", func(ctx context.Context, p echoParams) (string, error) { return p.Text, nil })
	c1, c2 := Pipe()
	server, client := NewPeer(c1, Options{Handler: m}), NewPeer(c2)
	b.Cleanup(func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	})
	return client
}

// BenchmarkCall is one call in flight: client and server allocations
// together, as both run in this process.
func BenchmarkCall(b *testing.B) {
	client := benchPair(b)
	ctx := context.Background()
	params := addParams{A: 1, B: 2}
	b.ReportAllocs()
	for b.Loop() {
		var n int
		if err := client.Call(ctx, "add", params, &n); err != nil || n != 3 {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkCallParallel shares one connection among many goroutines.
func BenchmarkCallParallel(b *testing.B) {
	client := benchPair(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		params := addParams{A: 1, B: 2}
		for pb.Next() {
			var n int
			if err := client.Call(ctx, "add", params, &n); err != nil || n != 3 {
				b.Error(n, err)
				return
			}
		}
	})
}

// BenchmarkNotify sends notifications one way.
func BenchmarkNotify(b *testing.B) {
	client := benchPair(b)
	ctx := context.Background()
	params := addParams{A: 1, B: 2}
	b.ReportAllocs()
	for b.Loop() {
		if err := client.Notify(ctx, "add", params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallEcho is one call in flight whose params and result carry a
// string of the given size: the cost of the JSON passes over a payload
// (validate, scan, decode, encode, on both sides), per KiB as well.
func BenchmarkCallEcho(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			client := benchPair(b)
			ctx := context.Background()
			params := echoParams{Text: strings.Repeat("x", size)}
			b.ReportAllocs()
			b.SetBytes(int64(2 * size)) // there and back
			for b.Loop() {
				var s string
				if err := client.Call(ctx, "echo", params, &s); err != nil || len(s) != size {
					b.Fatal(len(s), err)
				}
			}
		})
	}
}

// BenchmarkBatch is a client batch of 100 add calls: one op is one call,
// both ends' costs together (the caller's batch and the server's).
func BenchmarkBatch(b *testing.B) {
	client := benchPair(b)
	ctx := context.Background()
	const size = 100
	sums := make([]int, size)
	elems := make([]BatchElem, size)
	b.ReportAllocs()
	for i := 0; b.Loop(); i += size {
		for k := range elems {
			elems[k] = BatchElem{Method: "add", Params: addParams{A: k, B: 1}, Result: &sums[k]}
		}
		if err := client.Batch(ctx, elems); err != nil {
			b.Fatal(err)
		}
		for k := range elems {
			if elems[k].Error != nil || sums[k] != k+1 {
				b.Fatal(k, sums[k], elems[k].Error)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/call")
}

// BenchmarkProgress is one progress notification from a handler to the
// caller's function, b.N of them for one call, in the LSP dialect: to set
// against BenchmarkNotify, a plain notification.
func BenchmarkProgress(b *testing.B) {
	m := NewMux()
	n := 0
	m.HandleFunc("work", func(ctx context.Context, req *Request) (any, error) {
		params := addParams{A: 1, B: 2}
		for range n {
			if err := ReportProgress(ctx, params); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	c1, c2 := Pipe()
	opts := Options{Handler: m, Progress: LSPProgress}
	server, client := NewPeer(c1, opts), NewPeer(c2, Options{Progress: LSPProgress})
	b.Cleanup(func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	})
	got := 0
	ctx := WithProgress(context.Background(), func(json.RawMessage) { got++ })
	n = b.N
	b.ReportAllocs()
	b.ResetTimer()
	if err := client.Call(ctx, "work", map[string]any{}, nil); err != nil {
		b.Fatal(err)
	}
	if got != b.N {
		b.Fatalf("%d of %d progress notifications", got, b.N)
	}
}
