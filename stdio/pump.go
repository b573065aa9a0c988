package stdio

import "sync"

// A pump makes the calls to a Read or Write method that Close cannot
// interrupt (the reader or writer is not an io.Closer) on a goroutine of its
// own, so that the caller can stop waiting for one when the Conn closes.
//
// The goroutine is started by the first call and serves every later one: it
// hands the caller's buffer to fn and the result back, so nothing is copied
// and nothing is allocated per call. It ends when stop is called, which
// Close does (and the Conn's Read on a final error), or, if a call to fn is
// under way then, as soon as fn returns.
//
// Calls must not be concurrent: the Conn makes them under its read or write
// lock. stop may be called at any time.
type pump struct {
	fn       func([]byte) (int, error)
	req      chan []byte
	res      chan pumpResult // 1-buffered: the goroutine never waits on it
	quit     chan struct{}   // closed by stop
	stopOnce sync.Once
	started  bool // the goroutine has been started
}

type pumpResult struct {
	n   int
	err error
}

func newPump(fn func([]byte) (int, error)) *pump {
	return &pump{
		fn:   fn,
		req:  make(chan []byte),
		res:  make(chan pumpResult, 1),
		quit: make(chan struct{}),
	}
}

// call calls fn(b) on the pump's goroutine and returns its result, or
// errClosed as soon as stop is called. In that case fn may still be using b:
// the caller must not use b again.
func (p *pump) call(b []byte) (int, error) {
	select {
	case <-p.quit:
		return 0, errClosed
	default:
	}
	if !p.started {
		p.started = true
		go p.run()
	}
	select {
	case p.req <- b:
	case <-p.quit:
		return 0, errClosed
	}
	select {
	case r := <-p.res:
		return r.n, r.err
	case <-p.quit:
		return 0, errClosed
	}
}

// run is the pump's goroutine.
func (p *pump) run() {
	for {
		select {
		case b := <-p.req:
			select {
			case <-p.quit: // the caller has gone, or will
				return
			default:
			}
			n, err := p.fn(b)
			p.res <- pumpResult{n, err}
		case <-p.quit:
			return
		}
	}
}

// stop ends the pump: a pending call returns errClosed at once, later calls
// return it without calling fn, and the goroutine ends once fn returns. It
// has no effect on a nil pump.
func (p *pump) stop() {
	if p != nil {
		p.stopOnce.Do(func() { close(p.quit) })
	}
}

// Read makes a pump over a reader an io.Reader, to put under a bufio.Reader.
func (p *pump) Read(b []byte) (int, error) { return p.call(b) }
