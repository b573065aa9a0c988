package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// The raw limits move the same bytes as a JSON-RPC exchange but parse no
// JSON: the client writes fixed request bytes, the server recognises the
// request by its length and writes fixed reply bytes of the size of a real
// reply (or, for a tick notification, counts it). Replies come back in
// order, so the client matches them to callers with a FIFO; like the real
// clients it writes from the calling goroutine and reads on a read loop
// that hands each reply to its caller.

// RawMessages are the fixed messages of the raw limits.
type RawMessages struct {
	AddReq, AddResp   []byte
	EchoReq, EchoResp []byte
	Tick              []byte
}

// Raw holds the messages, as a JSON-RPC client and server would write them.
var Raw = func() RawMessages {
	m := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	type req struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	type resp struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Result  any    `json:"result"`
	}
	type notif struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	return RawMessages{
		AddReq:   m(req{"2.0", 1, MethodAdd, AddParams{1, 2}}),
		AddResp:  m(resp{"2.0", 1, 3}),
		EchoReq:  m(req{"2.0", 1, MethodEcho, EchoParams{EchoString}}),
		EchoResp: m(resp{"2.0", 1, EchoString}),
		Tick:     m(notif{"2.0", MethodTick, TickParams{1}}),
	}
}()

func init() {
	if len(Raw.AddReq) == len(Raw.EchoReq) || len(Raw.AddReq) == len(Raw.Tick) || len(Raw.EchoReq) == len(Raw.Tick) {
		panic("bench: raw requests must differ in length")
	}
}

// request returns the request bytes a raw client sends for method.
func (m *RawMessages) request(method string) ([]byte, error) {
	switch method {
	case MethodAdd:
		return m.AddReq, nil
	case MethodEcho:
		return m.EchoReq, nil
	case MethodTick:
		return m.Tick, nil
	}
	return nil, fmt.Errorf("raw: no fixed bytes for method %q", method)
}

// reply classifies a request by its length: it returns the reply to
// write, or nil and tick=true for a notification.
func (m *RawMessages) reply(req []byte) (reply []byte, tick bool, err error) {
	switch len(req) {
	case len(m.AddReq):
		return m.AddResp, false, nil
	case len(m.EchoReq):
		return m.EchoResp, false, nil
	case len(m.Tick):
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("raw: unexpected %d-byte message", len(req))
}

// fifo matches in-order replies to callers.
type fifo struct {
	waiters chan chan error
	pool    sync.Pool
}

func newFIFO() *fifo {
	f := &fifo{waiters: make(chan chan error, 4096)}
	f.pool.New = func() any { return make(chan error, 1) }
	return f
}

func (f *fifo) get() chan error   { return f.pool.Get().(chan error) }
func (f *fifo) put(ch chan error) { f.pool.Put(ch) }

// wait waits for ch's reply, or for the read loop to end.
func (f *fifo) wait(ch chan error, done <-chan struct{}) error {
	select {
	case err := <-ch:
		f.put(ch)
		return err
	case <-done:
		return net.ErrClosed
	}
}

// readMsg reads all of r into buf[:0], growing it as needed.
func readMsg(r io.Reader, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// ---- raw WebSocket echo on coder/websocket ----

// RawWS is the WebSocket limit: coder/websocket on both ends, the
// messages of Raw, no JSON.
type RawWS struct{}

func (RawWS) Name() string { return "raw-ws" }

// RawWSHandler serves the raw echo: each message is answered on the
// connection's own goroutine, ticks are counted in svc.
func RawWSHandler(svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		buf := make([]byte, 0, 2048)
		for {
			_, rd, err := c.Reader(ctx)
			if err != nil {
				return
			}
			if buf, err = readMsg(rd, buf); err != nil {
				return
			}
			reply, tick, err := Raw.reply(buf)
			if err != nil {
				c.Close(websocket.StatusProtocolError, err.Error())
				return
			}
			if tick {
				svc.Tick()
				continue
			}
			if err := c.Write(ctx, websocket.MessageText, reply); err != nil {
				return
			}
		}
	})
}

func (RawWS) Start(tb testing.TB, svc *Service) (Client, func()) {
	addr, closeHTTP := HTTPServer(tb, RawWSHandler(svc))
	c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/", nil)
	if err != nil {
		closeHTTP()
		tb.Fatal(err)
	}
	rc := &rawWSClient{c: c, q: newFIFO(), done: make(chan struct{})}
	go rc.readLoop()
	return rc, func() {
		c.CloseNow()
		<-rc.done
		closeHTTP()
	}
}

type rawWSClient struct {
	c    *websocket.Conn
	wmu  sync.Mutex
	q    *fifo
	done chan struct{}
}

func (rc *rawWSClient) readLoop() {
	defer close(rc.done)
	ctx := context.Background()
	buf := make([]byte, 0, 2048)
	for {
		_, rd, err := rc.c.Reader(ctx)
		if err != nil {
			return
		}
		if buf, err = readMsg(rd, buf); err != nil {
			return
		}
		(<-rc.q.waiters) <- nil
	}
}

func (rc *rawWSClient) Call(ctx context.Context, method string, _, _ any) error {
	msg, err := Raw.request(method)
	if err != nil {
		return err
	}
	ch := rc.q.get()
	rc.wmu.Lock()
	if err := rc.c.Write(ctx, websocket.MessageText, msg); err != nil {
		rc.wmu.Unlock()
		return err
	}
	rc.q.waiters <- ch
	rc.wmu.Unlock()
	return rc.q.wait(ch, rc.done)
}

func (rc *rawWSClient) Notify(ctx context.Context, method string, _ any) error {
	msg, err := Raw.request(method)
	if err != nil {
		return err
	}
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	return rc.c.Write(ctx, websocket.MessageText, msg)
}

// ---- raw framed TCP echo ----

// RawTCP is the byte-stream limit: loopback TCP with Content-Length
// header framing (or one message per line), the messages of Raw, no JSON.
type RawTCP struct{ Line bool }

func (r RawTCP) Name() string {
	if r.Line {
		return "raw-tcp-line"
	}
	return "raw-tcp-header"
}

// frame returns msg framed for the stream.
func (r RawTCP) frame(msg []byte) []byte {
	if r.Line {
		return append(append([]byte{}, msg...), '\n')
	}
	return append([]byte("Content-Length: "+strconv.Itoa(len(msg))+"\r\n\r\n"), msg...)
}

// framer reads frames from a buffered stream into a reused buffer.
type framer struct {
	line bool
	br   *bufio.Reader
	buf  []byte
}

var errBadHeader = errors.New("raw: bad header")

func (f *framer) next() ([]byte, error) {
	if f.line {
		b, err := f.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		return b[:len(b)-1], nil
	}
	n := -1
	for {
		line, err := f.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n = 0
			for _, d := range v {
				if d < '0' || d > '9' {
					return nil, errBadHeader
				}
				n = n*10 + int(d-'0')
			}
		}
	}
	if n < 0 {
		return nil, errBadHeader
	}
	if cap(f.buf) < n {
		f.buf = make([]byte, n)
	}
	f.buf = f.buf[:n]
	if _, err := io.ReadFull(f.br, f.buf); err != nil {
		return nil, err
	}
	return f.buf, nil
}

func (r RawTCP) Start(tb testing.TB, svc *Service) (Client, func()) {
	addResp, echoResp := r.frame(Raw.AddResp), r.frame(Raw.EchoResp)
	var wg sync.WaitGroup
	addr, stopTCP := serveTCP(tb, func(c net.Conn) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			f := &framer{line: r.Line, br: bufio.NewReaderSize(c, 64<<10)}
			for {
				msg, err := f.next()
				if err != nil {
					return
				}
				reply, tick, err := Raw.reply(msg)
				if err != nil {
					return
				}
				if tick {
					svc.Tick()
					continue
				}
				if len(reply) == len(Raw.AddResp) {
					reply = addResp
				} else {
					reply = echoResp
				}
				if _, err := c.Write(reply); err != nil {
					return
				}
			}
		}()
	})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		stopTCP(true)
		tb.Fatal(err)
	}
	rc := &rawTCPClient{
		c:    nc,
		q:    newFIFO(),
		done: make(chan struct{}),
		reqs: map[string][]byte{
			MethodAdd:  r.frame(Raw.AddReq),
			MethodEcho: r.frame(Raw.EchoReq),
			MethodTick: r.frame(Raw.Tick),
		},
	}
	go rc.readLoop(&framer{line: r.Line, br: bufio.NewReaderSize(nc, 64<<10)})
	return rc, func() {
		nc.Close()
		<-rc.done
		stopTCP(true)
		wg.Wait()
	}
}

type rawTCPClient struct {
	c    net.Conn
	wmu  sync.Mutex
	q    *fifo
	done chan struct{}
	reqs map[string][]byte
}

func (rc *rawTCPClient) readLoop(f *framer) {
	defer close(rc.done)
	for {
		if _, err := f.next(); err != nil {
			return
		}
		(<-rc.q.waiters) <- nil
	}
}

func (rc *rawTCPClient) Call(_ context.Context, method string, _, _ any) error {
	msg, ok := rc.reqs[method]
	if !ok {
		return fmt.Errorf("raw: no fixed bytes for method %q", method)
	}
	ch := rc.q.get()
	rc.wmu.Lock()
	if _, err := rc.c.Write(msg); err != nil {
		rc.wmu.Unlock()
		return err
	}
	rc.q.waiters <- ch
	rc.wmu.Unlock()
	return rc.q.wait(ch, rc.done)
}

func (rc *rawTCPClient) Notify(_ context.Context, method string, _ any) error {
	msg, ok := rc.reqs[method]
	if !ok {
		return fmt.Errorf("raw: no fixed bytes for method %q", method)
	}
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	_, err := rc.c.Write(msg)
	return err
}
