package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	sgrpc "github.com/sourcegraph/jsonrpc2"
	xrpc "golang.org/x/exp/jsonrpc2"
)

// serveTCP accepts loopback TCP connections and hands each to serve
// until stop is called; stop closes the listener and the accepted
// connections (unless closeConns is false) and waits for the accept loop.
func serveTCP(tb testing.TB, serve func(net.Conn)) (addr string, stop func(closeConns bool)) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			serve(c)
		}
	}()
	return ln.Addr().String(), func(closeConns bool) {
		ln.Close()
		wg.Wait()
		if closeConns {
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
		}
	}
}

// ---- github.com/sourcegraph/jsonrpc2 ----

// SourcegraphTCP is sourcegraph/jsonrpc2 over TCP with its
// VSCodeObjectCodec (Content-Length header framing). Its server handler
// is HandlerWithError as is, which the library runs on its read loop
// (its default); jsonrpc2.AsyncHandler would run each on a goroutine.
type SourcegraphTCP struct{}

func (SourcegraphTCP) Name() string { return "sourcegraph-tcp-header" }

func (SourcegraphTCP) Start(tb testing.TB, svc *Service) (Client, func()) {
	h := sgrpc.HandlerWithError(func(_ context.Context, _ *sgrpc.Conn, req *sgrpc.Request) (any, error) {
		var raw []byte
		if req.Params != nil {
			raw = *req.Params
		}
		switch req.Method {
		case MethodAdd:
			var p AddParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, &sgrpc.Error{Code: sgrpc.CodeInvalidParams, Message: err.Error()}
			}
			return svc.Add(p), nil
		case MethodEcho:
			var p EchoParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, &sgrpc.Error{Code: sgrpc.CodeInvalidParams, Message: err.Error()}
			}
			return svc.Echo(p), nil
		case MethodComplete:
			var p CompleteParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, &sgrpc.Error{Code: sgrpc.CodeInvalidParams, Message: err.Error()}
			}
			return svc.Complete(p), nil
		case MethodTick:
			var p TickParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			svc.Tick()
			return nil, nil
		}
		return nil, &sgrpc.Error{Code: sgrpc.CodeMethodNotFound, Message: "method not found"}
	})
	var (
		mu      sync.Mutex
		servers []*sgrpc.Conn
	)
	ctx := context.Background()
	addr, stopTCP := serveTCP(tb, func(c net.Conn) {
		sc := sgrpc.NewConn(ctx, sgrpc.NewBufferedStream(c, sgrpc.VSCodeObjectCodec{}), h)
		mu.Lock()
		servers = append(servers, sc)
		mu.Unlock()
	})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		stopTCP(true)
		tb.Fatal(err)
	}
	cc := sgrpc.NewConn(ctx, sgrpc.NewBufferedStream(nc, sgrpc.VSCodeObjectCodec{}), nil)
	return sgClient{cc}, func() {
		cc.Close()
		stopTCP(false)
		mu.Lock()
		defer mu.Unlock()
		for _, sc := range servers {
			sc.Close()
			<-sc.DisconnectNotify()
		}
	}
}

type sgClient struct{ c *sgrpc.Conn }

func (c sgClient) Call(ctx context.Context, method string, params, result any) error {
	return c.c.Call(ctx, method, params, result)
}

func (c sgClient) Notify(ctx context.Context, method string, params any) error {
	return c.c.Notify(ctx, method, params)
}

// ---- github.com/creachadair/jrpc2 ----

// Jrpc2TCP is creachadair/jrpc2 over TCP with channel.Header("")
// (Content-Length framing, no Content-Type) or channel.Line.
type Jrpc2TCP struct{ Line bool }

func (j Jrpc2TCP) Name() string {
	if j.Line {
		return "jrpc2-tcp-line"
	}
	return "jrpc2-tcp-header"
}

func (j Jrpc2TCP) framing() channel.Framing {
	if j.Line {
		return channel.Line
	}
	return channel.Header("")
}

// jrpc2Assigner routes to plain jrpc2.Handler functions (no reflection).
type jrpc2Assigner map[string]jrpc2.Handler

func (m jrpc2Assigner) Assign(_ context.Context, method string) jrpc2.Handler { return m[method] }

// jrpc2Mux serves the Service's methods as plain jrpc2.Handler functions,
// for jrpc2 over TCP and over HTTP (jhttp).
func jrpc2Mux(svc *Service) jrpc2Assigner {
	return jrpc2Assigner{
		MethodAdd: func(_ context.Context, req *jrpc2.Request) (any, error) {
			var p AddParams
			if err := req.UnmarshalParams(&p); err != nil {
				return nil, err
			}
			return svc.Add(p), nil
		},
		MethodEcho: func(_ context.Context, req *jrpc2.Request) (any, error) {
			var p EchoParams
			if err := req.UnmarshalParams(&p); err != nil {
				return nil, err
			}
			return svc.Echo(p), nil
		},
		MethodComplete: func(_ context.Context, req *jrpc2.Request) (any, error) {
			var p CompleteParams
			if err := req.UnmarshalParams(&p); err != nil {
				return nil, err
			}
			return svc.Complete(p), nil
		},
		MethodTick: func(_ context.Context, req *jrpc2.Request) (any, error) {
			var p TickParams
			if err := req.UnmarshalParams(&p); err != nil {
				return nil, err
			}
			svc.Tick()
			return nil, nil
		},
	}
}

func (j Jrpc2TCP) Start(tb testing.TB, svc *Service) (Client, func()) {
	mux := jrpc2Mux(svc)
	var (
		mu      sync.Mutex
		servers []*jrpc2.Server
	)
	frame := j.framing()
	addr, stopTCP := serveTCP(tb, func(c net.Conn) {
		s := jrpc2.NewServer(mux, nil).Start(frame(c, c))
		mu.Lock()
		servers = append(servers, s)
		mu.Unlock()
	})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		stopTCP(true)
		tb.Fatal(err)
	}
	cli := jrpc2.NewClient(frame(nc, nc), nil)
	return jrpc2Client{cli}, func() {
		cli.Close()
		stopTCP(false)
		mu.Lock()
		defer mu.Unlock()
		for _, s := range servers {
			s.Wait()
		}
	}
}

type jrpc2Client struct{ c *jrpc2.Client }

func (c jrpc2Client) Call(ctx context.Context, method string, params, result any) error {
	return c.c.CallResult(ctx, method, params, result)
}

func (c jrpc2Client) Notify(ctx context.Context, method string, params any) error {
	return c.c.Notify(ctx, method, params)
}

func (c jrpc2Client) Batch(ctx context.Context, method string, params []any, results []any) error {
	specs := make([]jrpc2.Spec, len(params))
	for i := range params {
		specs[i] = jrpc2.Spec{Method: method, Params: params[i]}
	}
	rsps, err := c.c.Batch(ctx, specs)
	if err != nil {
		return err
	}
	if len(rsps) != len(results) {
		return fmt.Errorf("jrpc2: %d replies to %d calls", len(rsps), len(results))
	}
	for i, r := range rsps {
		if err := r.UnmarshalResult(results[i]); err != nil {
			return err
		}
	}
	return nil
}

// ---- golang.org/x/exp/jsonrpc2 ----

// XExpTCP is golang.org/x/exp/jsonrpc2 over TCP with its HeaderFramer.
// Its Handler is the queued one, which the library runs one message at
// a time in arrival order.
type XExpTCP struct{}

func (XExpTCP) Name() string { return "xexp-tcp-header" }

type xexpHandler struct{ svc *Service }

func (h xexpHandler) Handle(_ context.Context, req *xrpc.Request) (any, error) {
	switch req.Method {
	case MethodAdd:
		var p AddParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		return h.svc.Add(p), nil
	case MethodEcho:
		var p EchoParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		return h.svc.Echo(p), nil
	case MethodComplete:
		var p CompleteParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		return h.svc.Complete(p), nil
	case MethodTick:
		var p TickParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		h.svc.Tick()
		return nil, nil
	}
	return nil, xrpc.ErrNotHandled
}

func (XExpTCP) Start(tb testing.TB, svc *Service) (Client, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := xrpc.NetListener(ctx, "tcp", "127.0.0.1:0", xrpc.NetListenOptions{})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	srv, err := xrpc.Serve(ctx, ln, xrpc.ConnectionOptions{Framer: xrpc.HeaderFramer(), Handler: xexpHandler{svc}})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	conn, err := xrpc.Dial(ctx, ln.Dialer(), xrpc.ConnectionOptions{Framer: xrpc.HeaderFramer()})
	if err != nil {
		ln.Close()
		cancel()
		tb.Fatal(err)
	}
	return xexpClient{conn}, func() {
		conn.Close()
		ln.Close()
		waitOrTimeout(func() { srv.Wait() }, 5*time.Second)
		cancel()
	}
}

type xexpClient struct{ c *xrpc.Connection }

func (c xexpClient) Call(ctx context.Context, method string, params, result any) error {
	return c.c.Call(ctx, method, params).Await(ctx, result)
}

func (c xexpClient) Notify(ctx context.Context, method string, params any) error {
	return c.c.Notify(ctx, method, params)
}

func waitOrTimeout(f func(), d time.Duration) bool {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// ---- github.com/ethereum/go-ethereum/rpc ----

// GethWS is go-ethereum's rpc package over WebSocket (its server's
// WebsocketHandler and DialWebsocket, on gorilla/websocket). go-ethereum
// takes positional params only, so its calls carry the same object as
// their single argument: "params":[{"a":1,"b":2}]; methods are
// "bench_add", "bench_echo", "bench_complete" and "bench_tick". Its
// WebSocket read limits (32 MiB on both ends by default) carry W6 and W7.
type GethWS struct{}

func (GethWS) Name() string { return "geth-ws" }

// GethService is the receiver go-ethereum registers as "bench".
type GethService struct{ svc *Service }

func (g *GethService) Add(p AddParams) int      { return g.svc.Add(p) }
func (g *GethService) Echo(p EchoParams) string { return g.svc.Echo(p) }
func (g *GethService) Tick(TickParams)          { g.svc.Tick() }

func (g *GethService) Complete(p CompleteParams) []CompletionItem { return g.svc.Complete(p) }

func (GethWS) Start(tb testing.TB, svc *Service) (Client, func()) {
	srv := gethrpc.NewServer()
	if err := srv.RegisterName("bench", &GethService{svc}); err != nil {
		tb.Fatal(err)
	}
	addr, closeHTTP := HTTPServer(tb, srv.WebsocketHandler([]string{"*"}))
	c, err := gethrpc.DialWebsocket(context.Background(), "ws://"+addr+"/", "")
	if err != nil {
		closeHTTP()
		srv.Stop()
		tb.Fatal(err)
	}
	return gethClient{c}, func() {
		c.Close()
		srv.Stop()
		closeHTTP()
	}
}

type gethClient struct{ c *gethrpc.Client }

func (c gethClient) Call(ctx context.Context, method string, params, result any) error {
	return c.c.CallContext(ctx, result, "bench_"+method, params)
}

func (c gethClient) Notify(ctx context.Context, method string, params any) error {
	return c.c.Notify(ctx, "bench_"+method, params)
}

func (c gethClient) Batch(ctx context.Context, method string, params []any, results []any) error {
	elems := make([]gethrpc.BatchElem, len(params))
	for i := range params {
		elems[i] = gethrpc.BatchElem{Method: "bench_" + method, Args: []any{params[i]}, Result: results[i]}
	}
	if err := c.c.BatchCallContext(ctx, elems); err != nil {
		return err
	}
	for i := range elems {
		if elems[i].Error != nil {
			return elems[i].Error
		}
	}
	return nil
}
