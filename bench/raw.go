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
	"github.com/peerwire/jsonrpc/ws"
)

// W3BatchSize is the number of calls in one W3 batch.
const W3BatchSize = 100

// The raw limits move the same bytes as a JSON-RPC exchange but parse no
// JSON: the client writes fixed request bytes, the server recognises the
// request by its first byte and its length and writes the fixed bytes of
// the real reply (or, for a tick notification, counts it). Replies come
// back in order, so the client matches them to callers with a FIFO; like
// the real clients it writes from the calling goroutine and reads on a
// read loop that hands each reply to its caller. Nothing else: a raw
// exchange is the least work a client and a server on that transport can
// do to move those bytes.

// rawKind names a fixed raw message: one of the single messages, or a
// batch of k add calls (rawBatch+k-1, k from 1 to W3BatchSize).
type rawKind int

const (
	rawAdd      rawKind = iota // add {"a":1,"b":2} (W1, W2)
	rawEcho                    // echo of EchoString (W1echo)
	rawBigEcho                 // echo of BigEchoString (W6)
	rawComplete                // complete {"n":1000} (W7)
	rawTick                    // the tick notification: no reply (W4)
	rawBatch                   // a batch of one add call; of k: rawBatch+k-1 (W3)
	rawKinds    = rawBatch + W3BatchSize
)

// RawMessages are the fixed messages of the raw limits, as a JSON-RPC
// client and server would write them: Req[k] is what the client sends,
// Reply[k] what the server answers (nil for the tick). Single requests
// have id 1; a batch of k has ids 1 to k, its reply the same ids in order.
type RawMessages struct {
	Req, Reply [rawKinds][]byte

	// single and batch map a request's length to its kind, for requests
	// that are an object or an array.
	single, batch map[int]rawKind
}

// Raw holds the messages.
var Raw = newRawMessages()

func newRawMessages() *RawMessages {
	marshal := func(v any) []byte {
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
	m := &RawMessages{single: map[int]rawKind{}, batch: map[int]rawKind{}}
	set := func(k rawKind, request, reply any) {
		m.Req[k] = marshal(request)
		if reply != nil {
			m.Reply[k] = marshal(reply)
		}
	}
	set(rawAdd, req{"2.0", 1, MethodAdd, AddParams{1, 2}}, resp{"2.0", 1, 3})
	set(rawEcho, req{"2.0", 1, MethodEcho, EchoParams{EchoString}}, resp{"2.0", 1, EchoString})
	set(rawBigEcho, req{"2.0", 1, MethodEcho, EchoParams{BigEchoString}}, resp{"2.0", 1, BigEchoString})
	set(rawComplete, req{"2.0", 1, MethodComplete, CompleteParams{CompleteN}}, resp{"2.0", 1, Completions})
	set(rawTick, notif{"2.0", MethodTick, TickParams{1}}, nil)
	reqs := make([]req, W3BatchSize)
	resps := make([]resp, W3BatchSize)
	for i := range reqs {
		reqs[i] = req{"2.0", i + 1, MethodAdd, AddParams{1, 2}}
		resps[i] = resp{"2.0", i + 1, 3}
	}
	for k := 1; k <= W3BatchSize; k++ {
		set(rawBatch+rawKind(k-1), reqs[:k], resps[:k])
	}
	// The server tells requests apart by their first byte (a batch is an
	// array, as any JSON-RPC server first checks) and then their length,
	// so lengths must differ within each group.
	for k, r := range m.Req {
		idx := m.single
		if r[0] == '[' {
			idx = m.batch
		}
		if prev, dup := idx[len(r)]; dup {
			panic(fmt.Sprintf("bench: raw messages %d and %d are both %d bytes long", prev, k, len(r)))
		}
		idx[len(r)] = rawKind(k)
	}
	return m
}

// framed returns a copy of m's requests and replies, each framed with f
// (for a byte stream), without m's length index.
func (m *RawMessages) framed(f func([]byte) []byte) *RawMessages {
	fm := &RawMessages{}
	for k := range rawKinds {
		fm.Req[k] = f(m.Req[k])
		if m.Reply[k] != nil {
			fm.Reply[k] = f(m.Reply[k])
		}
	}
	return fm
}

// kindOf classifies a request as the raw server does: by its first byte,
// then its length.
func (m *RawMessages) kindOf(msg []byte) (rawKind, error) {
	idx := m.single
	if len(msg) > 0 && msg[0] == '[' {
		idx = m.batch
	}
	if k, ok := idx[len(msg)]; ok {
		return k, nil
	}
	return 0, fmt.Errorf("raw: unexpected %d-byte message", len(msg))
}

// callKind returns the kind of the call (or notification) a raw client
// sends for method and params; echo has two, told apart by the string's
// length.
func callKind(method string, params any) (rawKind, error) {
	switch method {
	case MethodAdd:
		return rawAdd, nil
	case MethodEcho:
		if p, ok := params.(EchoParams); ok {
			switch len(p.S) {
			case EchoSize:
				return rawEcho, nil
			case BigEchoSize:
				return rawBigEcho, nil
			}
		}
	case MethodComplete:
		return rawComplete, nil
	case MethodTick:
		return rawTick, nil
	}
	return 0, fmt.Errorf("raw: no fixed bytes for %s(%T)", method, params)
}

// batchKind returns the kind of a batch of k calls of method.
func batchKind(method string, k int) (rawKind, error) {
	if method != MethodAdd || k < 1 || k > W3BatchSize {
		return 0, fmt.Errorf("raw: no fixed bytes for a batch of %d %s calls", k, method)
	}
	return rawBatch + rawKind(k-1), nil
}

// fifo matches in-order replies to callers: a caller queues a pooled
// 1-buffered channel once its request is written, the read loop takes the
// first one off the queue for each reply.
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

// rawClient is the client of every raw limit: a caller writes fixed bytes
// under the write lock and waits; the read loop reads each reply (into a
// reused buffer, never looking inside) and wakes the first caller in line.
type rawClient struct {
	msgs  *RawMessages // as this transport writes them
	write func(ctx context.Context, msg []byte) error
	wmu   sync.Mutex
	q     *fifo
	done  chan struct{} // closed when the read loop ends
}

func newRawClient(msgs *RawMessages, write func(context.Context, []byte) error) *rawClient {
	return &rawClient{msgs: msgs, write: write, q: newFIFO(), done: make(chan struct{})}
}

// readLoop runs until next, which reads one reply, fails.
func (rc *rawClient) readLoop(next func() error) {
	defer close(rc.done)
	for next() == nil {
		(<-rc.q.waiters) <- nil
	}
}

// roundTrip writes msg and waits for its reply.
func (rc *rawClient) roundTrip(ctx context.Context, msg []byte) error {
	ch := rc.q.get()
	rc.wmu.Lock()
	if err := rc.write(ctx, msg); err != nil {
		rc.wmu.Unlock()
		return err
	}
	rc.q.waiters <- ch
	rc.wmu.Unlock()
	return rc.q.wait(ch, rc.done)
}

func (rc *rawClient) Call(ctx context.Context, method string, params, _ any) error {
	k, err := callKind(method, params)
	if err != nil {
		return err
	}
	return rc.roundTrip(ctx, rc.msgs.Req[k])
}

// Batch sends the fixed array of len(params) add calls and waits for the
// array of replies, which, as one message, wakes one caller.
func (rc *rawClient) Batch(ctx context.Context, method string, params []any, _ []any) error {
	k, err := batchKind(method, len(params))
	if err != nil {
		return err
	}
	return rc.roundTrip(ctx, rc.msgs.Req[k])
}

func (rc *rawClient) Notify(ctx context.Context, method string, params any) error {
	k, err := callKind(method, params)
	if err != nil {
		return err
	}
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	return rc.write(ctx, rc.msgs.Req[k])
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
// messages of Raw, no JSON. Both ends raise coder/websocket's 32 KiB
// default read limit to the 32 MiB that ours (ws.DefaultMaxMessageSize)
// and go-ethereum use, so that W6 and W7 fit.
type RawWS struct{}

func (RawWS) Name() string { return "raw-ws" }

// rawWSReadLimit is the read limit of both raw WebSocket ends.
const rawWSReadLimit = ws.DefaultMaxMessageSize

// RawWSHandler serves the raw echo: each message is read into a reused
// buffer and answered on the connection's own goroutine with c.Write;
// ticks are counted in svc.
func RawWSHandler(svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(rawWSReadLimit)
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
			k, err := Raw.kindOf(buf)
			if err != nil {
				c.Close(websocket.StatusProtocolError, err.Error())
				return
			}
			if k == rawTick {
				svc.Tick()
				continue
			}
			if err := c.Write(ctx, websocket.MessageText, Raw.Reply[k]); err != nil {
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
	c.SetReadLimit(rawWSReadLimit)
	rc := newRawClient(Raw, func(ctx context.Context, msg []byte) error {
		return c.Write(ctx, websocket.MessageText, msg)
	})
	buf := make([]byte, 0, 2048)
	go rc.readLoop(func() error {
		_, rd, err := c.Reader(context.Background())
		if err != nil {
			return err
		}
		buf, err = readMsg(rd, buf)
		return err
	})
	return rc, func() {
		c.CloseNow()
		<-rc.done
		closeHTTP()
	}
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

// rawFramed holds Raw framed for header ([0]) and line ([1]) streams,
// built on first use.
var rawFramed = [2]func() *RawMessages{
	sync.OnceValue(func() *RawMessages { return Raw.framed(RawTCP{Line: false}.frame) }),
	sync.OnceValue(func() *RawMessages { return Raw.framed(RawTCP{Line: true}.frame) }),
}

func (r RawTCP) msgs() *RawMessages {
	if r.Line {
		return rawFramed[1]()
	}
	return rawFramed[0]()
}

// framer reads frames from a buffered stream into a reused buffer.
type framer struct {
	line bool
	br   *bufio.Reader
	buf  []byte
}

var errBadHeader = errors.New("raw: bad header")

// next returns the next message, valid until the next call.
func (f *framer) next() ([]byte, error) {
	if f.line {
		return f.nextLine()
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

// nextLine returns the next line without its "\n": in place when it fits
// in the reader's buffer, else gathered into f.buf.
func (f *framer) nextLine() ([]byte, error) {
	b, err := f.br.ReadSlice('\n')
	if err == nil {
		return b[:len(b)-1], nil
	}
	f.buf = append(f.buf[:0], b...)
	for err == bufio.ErrBufferFull {
		b, err = f.br.ReadSlice('\n')
		f.buf = append(f.buf, b...)
	}
	if err != nil {
		return nil, err
	}
	return f.buf[:len(f.buf)-1], nil
}

func (r RawTCP) Start(tb testing.TB, svc *Service) (Client, func()) {
	msgs := r.msgs()
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
				k, err := Raw.kindOf(msg)
				if err != nil {
					return
				}
				if k == rawTick {
					svc.Tick()
					continue
				}
				if _, err := c.Write(msgs.Reply[k]); err != nil {
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
	rc := newRawClient(msgs, func(_ context.Context, msg []byte) error {
		_, err := nc.Write(msg)
		return err
	})
	f := &framer{line: r.Line, br: bufio.NewReaderSize(nc, 64<<10)}
	go rc.readLoop(func() error {
		_, err := f.next()
		return err
	})
	return rc, func() {
		nc.Close()
		<-rc.done
		stopTCP(true)
		wg.Wait()
	}
}
