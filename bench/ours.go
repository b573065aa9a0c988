package bench

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
	"github.com/peerwire/jsonrpc/ws"
)

// OursMux returns a Mux serving svc with this library's typed handlers.
func OursMux(svc *Service) *jsonrpc.Mux {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, MethodAdd, func(_ context.Context, p AddParams) (int, error) {
		return svc.Add(p), nil
	})
	jsonrpc.Register(mux, MethodEcho, func(_ context.Context, p EchoParams) (string, error) {
		return svc.Echo(p), nil
	})
	jsonrpc.Register(mux, MethodComplete, func(_ context.Context, p CompleteParams) ([]CompletionItem, error) {
		return svc.Complete(p), nil
	})
	jsonrpc.Register(mux, MethodTick, func(_ context.Context, _ TickParams) (struct{}, error) {
		svc.Tick()
		return struct{}{}, nil
	})
	return mux
}

// oursClient adapts a *jsonrpc.Peer to Client and Batcher.
type oursClient struct{ p *jsonrpc.Peer }

func (c oursClient) Call(ctx context.Context, method string, params, result any) error {
	return c.p.Call(ctx, method, params, result)
}

func (c oursClient) Notify(ctx context.Context, method string, params any) error {
	return c.p.Notify(ctx, method, params)
}

func (c oursClient) Batch(ctx context.Context, method string, params []any, results []any) error {
	elems := make([]jsonrpc.BatchElem, len(params))
	for i := range params {
		elems[i] = jsonrpc.BatchElem{Method: method, Params: params[i], Result: results[i]}
	}
	if err := c.p.Batch(ctx, elems); err != nil {
		return err
	}
	for i := range elems {
		if elems[i].Error != nil {
			return elems[i].Error
		}
	}
	return nil
}

// HTTPServer serves h on a fresh loopback listener; it returns the
// "127.0.0.1:port" address and a function that closes the server.
func HTTPServer(tb testing.TB, h http.Handler) (addr string, closeFn func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }
}

// OursWS is this library over WebSocket: ws.Server and ws.Dial.
type OursWS struct{}

func (OursWS) Name() string { return "ours-ws" }

func (OursWS) Start(tb testing.TB, svc *Service) (Client, func()) {
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: OursMux(svc)}}
	addr, closeHTTP := HTTPServer(tb, srv)
	p, err := ws.Dial(context.Background(), "ws://"+addr+"/")
	if err != nil {
		closeHTTP()
		tb.Fatal(err)
	}
	return oursClient{p}, func() {
		p.Close()
		p.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		closeHTTP()
	}
}

// OursTCP is this library over loopback TCP with the stdio package's
// framing: Content-Length headers, or one message per line.
type OursTCP struct{ Line bool }

func (o OursTCP) Name() string {
	if o.Line {
		return "ours-tcp-line"
	}
	return "ours-tcp-header"
}

func (o OursTCP) opts() stdio.Options {
	if o.Line {
		return stdio.Options{Framing: stdio.Line}
	}
	return stdio.Options{Framing: stdio.Header}
}

func (o OursTCP) Start(tb testing.TB, svc *Service) (Client, func()) {
	mux := OursMux(svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		mu    sync.Mutex
		peers []*jsonrpc.Peer
	)
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p := jsonrpc.NewPeer(stdio.NewConn(c, c, o.opts()), jsonrpc.Options{Handler: mux})
			mu.Lock()
			peers = append(peers, p)
			mu.Unlock()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		tb.Fatal(err)
	}
	p := jsonrpc.NewPeer(stdio.NewConn(c, c, o.opts()))
	return oursClient{p}, func() {
		p.Close()
		p.Wait()
		ln.Close()
		<-accepted
		mu.Lock()
		defer mu.Unlock()
		for _, sp := range peers {
			sp.Close()
			sp.Wait() // the client went first, so its error is no news
		}
	}
}
