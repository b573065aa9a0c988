package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/coder/websocket"
	json "github.com/go-json-experiment/json/v1"
)

// The JSON floor: the raw transport plus the JSON work that any user of
// any JSON-RPC library pays, on the same JSON engine as ours
// (go-json-experiment's v1 package, which on Go 1.27 is encoding/json
// itself). Per call, the client makes one json.Marshal of the request and
// one json.Unmarshal of the reply (into an envelope whose result is the
// caller's value); the server makes one json.Unmarshal of the request
// (into an envelope whose params are the method's typed params) and one
// json.Marshal of the reply. A batch (W3) is the same with arrays: one
// Marshal and one Unmarshal of the whole array on each side. Nothing
// else: no validation pass of its own, no id matching (every call has id
// 1 and replies come back in order: a FIFO, as in the raw echo), no
// method lookup (the server tells requests apart by first byte and
// length, as the raw echo does). The transport code is the raw echo's
// (raw.go).

// floorReq is the request envelope the floor client marshals. P is the
// typed params.
type floorReq[P any] struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  P      `json:"params"`
}

// floorReply is the reply envelope the floor server marshals.
type floorReply[R any] struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Result  R      `json:"result"`
}

// floorResult is what the floor client unmarshals a reply into: Result
// holds the caller's pointer, which encoding/json decodes into.
type floorResult struct {
	Result any `json:"result"`
}

// floorServe handles one request as the floor server does and returns
// the reply to write (nil for the tick notification).
func floorServe(svc *Service, msg []byte) ([]byte, error) {
	k, err := Raw.kindOf(msg)
	if err != nil {
		return nil, err
	}
	switch {
	case k >= rawBatch:
		var rs []floorReq[AddParams]
		if err := json.Unmarshal(msg, &rs); err != nil {
			return nil, err
		}
		out := make([]floorReply[int], len(rs))
		for i, r := range rs {
			out[i] = floorReply[int]{"2.0", r.ID, svc.Add(r.Params)}
		}
		return json.Marshal(out)
	case k == rawAdd:
		var r floorReq[AddParams]
		if err := json.Unmarshal(msg, &r); err != nil {
			return nil, err
		}
		return json.Marshal(floorReply[int]{"2.0", r.ID, svc.Add(r.Params)})
	case k == rawEcho || k == rawBigEcho:
		var r floorReq[EchoParams]
		if err := json.Unmarshal(msg, &r); err != nil {
			return nil, err
		}
		return json.Marshal(floorReply[string]{"2.0", r.ID, svc.Echo(r.Params)})
	case k == rawComplete:
		var r floorReq[CompleteParams]
		if err := json.Unmarshal(msg, &r); err != nil {
			return nil, err
		}
		return json.Marshal(floorReply[[]CompletionItem]{"2.0", r.ID, svc.Complete(r.Params)})
	default: // rawTick
		var r floorReq[TickParams]
		if err := json.Unmarshal(msg, &r); err != nil {
			return nil, err
		}
		svc.Tick()
		return nil, nil
	}
}

// floorMarshal marshals a request (id 0: a notification).
func floorMarshal(id uint64, method string, params any) ([]byte, error) {
	switch p := params.(type) {
	case AddParams:
		return json.Marshal(floorReq[AddParams]{"2.0", id, method, p})
	case EchoParams:
		return json.Marshal(floorReq[EchoParams]{"2.0", id, method, p})
	case CompleteParams:
		return json.Marshal(floorReq[CompleteParams]{"2.0", id, method, p})
	case TickParams:
		return json.Marshal(floorReq[TickParams]{"2.0", id, method, p})
	}
	return json.Marshal(floorReq[any]{"2.0", id, method, params})
}

// floorBatch marshals a batch of add calls, ids 1 to len(params).
func floorBatch(method string, params []any) ([]byte, error) {
	rs := make([]floorReq[AddParams], len(params))
	for i, p := range params {
		ap, ok := p.(AddParams)
		if !ok {
			return nil, fmt.Errorf("floor: a batch of %T", p)
		}
		rs[i] = floorReq[AddParams]{"2.0", uint64(i + 1), method, ap}
	}
	return json.Marshal(rs)
}

// floorBatchResults is what the floor client unmarshals a batch reply
// into: element i's result goes to results[i] (replies come back in
// order, as the raw echo's do).
type floorBatchResults []floorResult

// floorWaiter is a caller waiting for its reply: the read loop decodes
// the reply into result and sends the outcome on done.
type floorWaiter struct {
	result any   // a call's
	batch  []any // a batch's results, in order
	done   chan error
}

// floorClient is the floor's client: a caller marshals its request and
// writes it (framed by frame) under the write lock, then queues itself;
// the read loop unmarshals each reply into the first waiter's result.
type floorClient struct {
	write   func(ctx context.Context, msg []byte) error
	frame   func(dst, msg []byte) []byte // nil: messages are not framed
	wmu     sync.Mutex
	wbuf    []byte // the framed request, under wmu
	waiters chan *floorWaiter
	pool    sync.Pool
	done    chan struct{} // closed when the read loop ends
}

func newFloorClient(write func(context.Context, []byte) error, frame func(dst, msg []byte) []byte) *floorClient {
	fc := &floorClient{write: write, frame: frame, waiters: make(chan *floorWaiter, 4096), done: make(chan struct{})}
	fc.pool.New = func() any { return &floorWaiter{done: make(chan error, 1)} }
	return fc
}

// readLoop runs until next, which reads one reply, fails.
func (fc *floorClient) readLoop(next func() ([]byte, error)) {
	defer close(fc.done)
	for {
		msg, err := next()
		if err != nil {
			return
		}
		w := <-fc.waiters
		if w.batch != nil {
			rs := make(floorBatchResults, len(w.batch))
			for i := range rs {
				rs[i].Result = w.batch[i]
			}
			w.done <- json.Unmarshal(msg, &rs)
			continue
		}
		r := floorResult{Result: w.result}
		w.done <- json.Unmarshal(msg, &r)
	}
}

// send writes a request; under wmu.
func (fc *floorClient) send(ctx context.Context, msg []byte) error {
	if fc.frame != nil {
		fc.wbuf = fc.frame(fc.wbuf[:0], msg)
		msg = fc.wbuf
	}
	return fc.write(ctx, msg)
}

func (fc *floorClient) Call(ctx context.Context, method string, params, result any) error {
	w := fc.pool.Get().(*floorWaiter)
	w.result = result
	fc.wmu.Lock()
	// Every call has id 1: replies come back in order, and the server
	// tells requests apart by their length, as the raw echo's does.
	msg, err := floorMarshal(1, method, params)
	return fc.roundTrip(ctx, w, msg, err)
}

// Batch sends len(params) add calls in one array, ids 1 to n, and
// unmarshals the reply array into results in order.
func (fc *floorClient) Batch(ctx context.Context, method string, params []any, results []any) error {
	w := fc.pool.Get().(*floorWaiter)
	w.batch = results
	fc.wmu.Lock()
	msg, err := floorBatch(method, params)
	return fc.roundTrip(ctx, w, msg, err)
}

// roundTrip sends msg (unless err) and waits for w's reply; called with
// wmu held, which it releases.
func (fc *floorClient) roundTrip(ctx context.Context, w *floorWaiter, msg []byte, err error) error {
	if err == nil {
		err = fc.send(ctx, msg)
	}
	if err != nil {
		fc.wmu.Unlock()
		return err
	}
	fc.waiters <- w
	fc.wmu.Unlock()
	select {
	case err = <-w.done:
		w.result, w.batch = nil, nil
		fc.pool.Put(w)
		return err
	case <-fc.done:
		return net.ErrClosed
	}
}

func (fc *floorClient) Notify(ctx context.Context, method string, params any) error {
	msg, err := floorMarshal(0, method, params)
	if err != nil {
		return err
	}
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	return fc.send(ctx, msg)
}

// ---- over WebSocket ----

// FloorWS is the JSON floor over coder/websocket, the raw-ws echo's
// transport.
type FloorWS struct{}

func (FloorWS) Name() string { return "floor-ws" }

// FloorWSHandler serves the floor: each message is read into a reused
// buffer, handled by floorServe, and answered on the connection's
// goroutine.
func FloorWSHandler(svc *Service) http.Handler {
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
			reply, err := floorServe(svc, buf)
			if err != nil {
				c.Close(websocket.StatusProtocolError, err.Error())
				return
			}
			if reply == nil {
				continue
			}
			if err := c.Write(ctx, websocket.MessageText, reply); err != nil {
				return
			}
		}
	})
}

func (FloorWS) Start(tb testing.TB, svc *Service) (Client, func()) {
	addr, closeHTTP := HTTPServer(tb, FloorWSHandler(svc))
	c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/", nil)
	if err != nil {
		closeHTTP()
		tb.Fatal(err)
	}
	c.SetReadLimit(rawWSReadLimit)
	fc := newFloorClient(func(ctx context.Context, msg []byte) error {
		return c.Write(ctx, websocket.MessageText, msg)
	}, nil)
	buf := make([]byte, 0, 2048)
	go fc.readLoop(func() ([]byte, error) {
		_, rd, err := c.Reader(context.Background())
		if err != nil {
			return nil, err
		}
		buf, err = readMsg(rd, buf)
		return buf, err
	})
	return fc, func() {
		c.CloseNow()
		<-fc.done
		closeHTTP()
	}
}

// ---- over framed TCP ----

// FloorTCP is the JSON floor over loopback TCP with Content-Length header
// framing (or one message per line), the raw TCP echo's transport.
type FloorTCP struct{ Line bool }

func (f FloorTCP) Name() string {
	if f.Line {
		return "floor-tcp-line"
	}
	return "floor-tcp-header"
}

// frame appends msg, framed, to dst.
func (f FloorTCP) frame(dst, msg []byte) []byte {
	if f.Line {
		return append(append(dst, msg...), '\n')
	}
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(msg)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, msg...)
}

func (f FloorTCP) Start(tb testing.TB, svc *Service) (Client, func()) {
	var wg sync.WaitGroup
	addr, stopTCP := serveTCP(tb, func(c net.Conn) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			fr := &framer{line: f.Line, br: bufio.NewReaderSize(c, 64<<10)}
			var out []byte
			for {
				msg, err := fr.next()
				if err != nil {
					return
				}
				reply, err := floorServe(svc, msg)
				if err != nil {
					return
				}
				if reply == nil {
					continue
				}
				out = f.frame(out[:0], reply)
				if _, err := c.Write(out); err != nil {
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
	fc := newFloorClient(func(_ context.Context, msg []byte) error {
		_, err := nc.Write(msg)
		return err
	}, f.frame)
	fr := &framer{line: f.Line, br: bufio.NewReaderSize(nc, 64<<10)}
	go fc.readLoop(fr.next)
	return fc, func() {
		nc.Close()
		<-fc.done
		stopTCP(true)
		wg.Wait()
	}
}
