package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/jhttp"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// JSON-RPC over plain HTTP POST: one request per POST, its reply in the
// response body, keep-alive connections. These implementations run in
// W1post only (the workloads over a connection would measure nothing new:
// every call is a POST of its own).

// HTTPImpls lists the plain POST implementations, in the order W1post runs
// them.
func HTTPImpls() []Impl {
	return []Impl{OursHTTP{}, GethHTTP{}, Jrpc2HTTP{}, RawHTTP{}}
}

// keepAliveClient is an http.Client of its own, with a transport whose
// idle connections close with stop.
func keepAliveClient() (*http.Client, func()) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}

// OursHTTP is httprpc.Server (a Peer per request) and httprpc.Client (a
// Peer per call).
type OursHTTP struct{}

func (OursHTTP) Name() string { return "ours-http" }

func (OursHTTP) Start(tb testing.TB, svc *Service) (Client, func()) {
	addr, closeHTTP := HTTPServer(tb, &httprpc.Server{Peer: jsonrpc.Options{Handler: OursMux(svc)}})
	hc, closeIdle := keepAliveClient()
	c := httprpc.NewClient("http://"+addr+"/", httprpc.ClientOptions{HTTPClient: hc})
	return c, func() { closeIdle(); closeHTTP() }
}

// GethHTTP is go-ethereum's rpc.Server as an http.Handler and
// rpc.DialHTTP, methods and params as in GethWS.
type GethHTTP struct{}

func (GethHTTP) Name() string { return "geth-http" }

func (GethHTTP) Start(tb testing.TB, svc *Service) (Client, func()) {
	srv := gethrpc.NewServer()
	if err := srv.RegisterName("bench", &GethService{svc}); err != nil {
		tb.Fatal(err)
	}
	addr, closeHTTP := HTTPServer(tb, srv)
	hc, closeIdle := keepAliveClient()
	c, err := gethrpc.DialOptions(context.Background(), "http://"+addr+"/", gethrpc.WithHTTPClient(hc))
	if err != nil {
		closeHTTP()
		srv.Stop()
		tb.Fatal(err)
	}
	return gethClient{c}, func() {
		c.Close()
		closeIdle()
		srv.Stop()
		closeHTTP()
	}
}

// Jrpc2HTTP is jrpc2's jhttp: a Bridge (an http.Handler in front of a
// jrpc2 server) and a jrpc2 client on a jhttp.Channel.
type Jrpc2HTTP struct{}

func (Jrpc2HTTP) Name() string { return "jrpc2-http" }

func (Jrpc2HTTP) Start(tb testing.TB, svc *Service) (Client, func()) {
	b := jhttp.NewBridge(jrpc2Mux(svc), nil)
	addr, closeHTTP := HTTPServer(tb, b)
	hc, closeIdle := keepAliveClient()
	cli := jrpc2.NewClient(jhttp.NewChannel("http://"+addr+"/", &jhttp.ChannelOptions{Client: hc}), nil)
	return jrpc2Client{cli}, func() {
		cli.Close()
		closeIdle()
		closeHTTP()
		b.Close()
	}
}

// RawHTTP is the plain POST limit: net/http on both ends, the messages of
// Raw, no JSON. The client posts the fixed request and reads the response
// body to its end into a reused buffer; the server reads the body the same
// way and answers the fixed reply (202 with no body to the tick).
type RawHTTP struct{}

func (RawHTTP) Name() string { return "raw-http" }

func (RawHTTP) Start(tb testing.TB, svc *Service) (Client, func()) {
	addr, closeHTTP := HTTPServer(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 0, 512)
		msg, err := readMsg(r.Body, buf)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		k, err := Raw.kindOf(msg)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if k == rawTick {
			svc.Tick()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(Raw.Reply[k])
	}))
	hc, closeIdle := keepAliveClient()
	return &rawHTTPClient{url: "http://" + addr + "/", hc: hc}, func() { closeIdle(); closeHTTP() }
}

type rawHTTPClient struct {
	url string
	hc  *http.Client
}

func (c *rawHTTPClient) post(ctx context.Context, msg []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("raw-http: status %d", resp.StatusCode)
	}
	return nil
}

func (c *rawHTTPClient) Call(ctx context.Context, method string, params, _ any) error {
	k, err := callKind(method, params)
	if err != nil {
		return err
	}
	return c.post(ctx, Raw.Req[k])
}

func (c *rawHTTPClient) Notify(ctx context.Context, method string, params any) error {
	k, err := callKind(method, params)
	if err != nil {
		return err
	}
	if k != rawTick {
		return errors.New("raw-http: not a notification")
	}
	return c.post(ctx, Raw.Req[k])
}
