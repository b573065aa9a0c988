package stdio

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Serve runs a Peer with opts on conn (Stdio() for a program that its
// peer launched) until the other side ends the stream or a handler calls
// Exit, and returns the status the program should exit with: the code
// given to Exit; else 0 when the stream ended cleanly, 1 when the
// connection failed. It returns once every handler has returned.
//
//	func main() {
//		os.Exit(stdio.Serve(stdio.Stdio(), jsonrpc.Options{Handler: mux}))
//	}
//
// A language server's exit notification is a handler that calls Exit.
func Serve(conn jsonrpc.Conn, opts jsonrpc.Options) int {
	st := &exitState{grace: opts.DrainTimeout}
	base := opts.BaseContext
	if base == nil {
		base = context.Background()
	}
	opts.BaseContext = context.WithValue(base, exitKey{}, st)
	p := jsonrpc.NewPeer(conn, opts)
	err := p.Wait()
	st.shutdown.Wait()
	if code, ok := st.exited(); ok {
		return code
	}
	if err != nil {
		return 1
	}
	return 0
}

// ErrNotServed is returned by Exit for a ctx that is not that of a
// handler of a Peer that Serve runs.
var ErrNotServed = errors.New("stdio: Exit needs the ctx of a handler of a Peer run by stdio.Serve")

// Exit ends the Peer that serves the handler whose ctx this is, as
// jsonrpc.Peer.Shutdown does: new calls are refused, the handlers already
// running, the calling one included, finish and their replies are
// written, for at most the Peer's Options.DrainTimeout (1 s by default),
// then the connection closes, and Serve returns code. It does not wait
// for any of that: the calling handler goes on and returns. Only the
// first call's code counts.
func Exit(ctx context.Context, code int) error {
	st, _ := ctx.Value(exitKey{}).(*exitState)
	p := jsonrpc.PeerFromContext(ctx)
	if st == nil || p == nil {
		return ErrNotServed
	}
	st.exit(p, code)
	return nil
}

// exitKey finds a Peer's exitState in its handlers' ctxs.
type exitKey struct{}

// exitState is the code a handler gave Exit, for Serve.
type exitState struct {
	grace    time.Duration  // the Peer's DrainTimeout, as given
	shutdown sync.WaitGroup // the goroutine that shuts the Peer down

	once sync.Once
	mu   sync.Mutex
	code int
	set  bool
}

// exit records code and shuts p down, the first time only.
func (st *exitState) exit(p *jsonrpc.Peer, code int) {
	st.once.Do(func() {
		st.mu.Lock()
		st.code, st.set = code, true
		st.mu.Unlock()
		grace := st.grace
		switch {
		case grace == 0:
			grace = time.Second
		case grace < 0:
			grace = 0
		}
		// On a goroutine of its own, so that it waits for the calling
		// handler too, as for any other: Serve returns once Wait does.
		st.shutdown.Add(1)
		go func() {
			defer st.shutdown.Done()
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			p.Shutdown(ctx)
		}()
	})
}

// exited returns the code Exit was given, if it was called.
func (st *exitState) exited() (int, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.code, st.set
}
