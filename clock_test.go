package jsonrpc

// Time-dependent behaviour on a fake clock: each test runs in a
// testing/synctest bubble over a Pipe, so timeouts and timers fire at
// exact fake times, in microseconds of real time, without flakes on a
// loaded machine.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestDrainTimeoutOnFakeClock: after the remote side ends its stream, a
// handler that runs on is cancelled exactly DrainTimeout later, and the
// Peer ends then.
func TestDrainTimeoutOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelledAfter := make(chan time.Duration, 1)
		started := make(chan time.Time, 1)
		h := mux(t, map[string]HandlerFunc{"run": func(ctx context.Context, req *Request) (any, error) {
			started <- time.Now()
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		c1, c2 := Pipe()
		p := NewPeer(c1, Options{Handler: h, DrainTimeout: 3 * time.Second})
		if err := c2.Write([]byte(`{"jsonrpc":"2.0","method":"run","id":1}`)); err != nil {
			t.Fatal(err)
		}
		<-started
		eof := time.Now()
		c2.Close()
		go func() {
			<-p.Done()
			cancelledAfter <- time.Since(eof)
		}()
		if d := <-cancelledAfter; d != 3*time.Second {
			t.Errorf("the Peer ended %v after the remote's end, want DrainTimeout, 3s", d)
		}
		p.Wait()
	})
}

// TestWriteTimeoutOnFakeClock: a remote side that takes no data ends the
// connection exactly WriteTimeout into the write, with ErrWriteTimeout.
func TestWriteTimeoutOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c1, c2 := Pipe() // c2 is never read
		defer c2.Close()
		p := NewPeer(c1, Options{WriteTimeout: 7 * time.Second})
		start := time.Now()
		err := p.Notify(context.Background(), "n", nil)
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Notify = %v, want ErrClosed", err)
		}
		<-p.Done()
		if d := time.Since(start); d != 7*time.Second {
			t.Errorf("ended after %v, want WriteTimeout, 7s", d)
		}
		if err := p.Wait(); !errors.Is(err, ErrWriteTimeout) {
			t.Errorf("Wait = %v, want ErrWriteTimeout", err)
		}
	})
}

// TestBatchHelpersJoinPerTick: the elements of an inbound batch that block
// get one helper per batchTick without an element finishing, up to
// BatchConcurrency.
func TestBatchHelpersJoinPerTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var running atomic.Int32
		h := mux(t, map[string]HandlerFunc{"block": func(ctx context.Context, req *Request) (any, error) {
			running.Add(1)
			<-release
			return nil, nil
		}})
		c1, c2 := Pipe()
		p := NewPeer(c1, Options{Handler: h, BatchConcurrency: 3})
		go func() {
			for {
				if _, err := c2.Read(); err != nil {
					return
				}
			}
		}()
		batch := `[{"jsonrpc":"2.0","method":"block","id":1},{"jsonrpc":"2.0","method":"block","id":2},` +
			`{"jsonrpc":"2.0","method":"block","id":3},{"jsonrpc":"2.0","method":"block","id":4}]`
		if err := c2.Write([]byte(batch)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for tick, want := range []int32{1, 2, 3, 3, 3} {
			if got := running.Load(); got != want {
				t.Errorf("after %d ticks: %d elements running, want %d", tick, got, want)
			}
			time.Sleep(batchTick)
			synctest.Wait()
		}
		close(release)
		synctest.Wait()
		if got := running.Load(); got != 4 {
			t.Errorf("%d elements ran, want 4", got)
		}
		p.Close()
		c2.Close()
		p.Wait()
	})
}

// TestHandlerCallCtxOnFakeClock: with every slot held, a handler's Call
// with a 100 ms ctx returns at exactly 100 ms (see
// TestHandlerCallCtxBoundsSlotWait), and no queued call starts while the
// handler goes on over MaxConcurrent.
func TestHandlerCallCtxOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		returned := make(chan time.Duration, 1)
		var slow, late atomic.Int32
		server := mux(t, map[string]HandlerFunc{
			"slow": func(ctx context.Context, req *Request) (any, error) {
				slow.Add(1)
				<-release
				return nil, nil
			},
			"late": func(ctx context.Context, req *Request) (any, error) {
				late.Add(1)
				return nil, nil
			},
			"caller": func(ctx context.Context, req *Request) (any, error) {
				cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := PeerFromContext(ctx).Call(cctx, "pong", nil, nil)
				returned <- time.Since(start)
				<-release // goes on, over the limit, until released
				return nil, err
			},
		})
		client := mux(t, map[string]HandlerFunc{"pong": func(ctx context.Context, req *Request) (any, error) {
			time.Sleep(50 * time.Millisecond) // the slow calls take the slots meanwhile
			return nil, nil
		}})
		c1, c2 := Pipe()
		s := NewPeer(c1, Options{Handler: server, MaxConcurrent: 2})
		c := NewPeer(c2, Options{Handler: client})
		ctx := context.Background()
		go c.Call(ctx, "caller", nil, nil)
		synctest.Wait() // the caller parks, giving its slot back
		go c.Call(ctx, "slow", nil, nil)
		go c.Call(ctx, "slow", nil, nil)
		synctest.Wait()
		if n := slow.Load(); n != 2 {
			t.Fatalf("%d slow handlers running, want 2", n)
		}
		if d := <-returned; d != 100*time.Millisecond {
			t.Errorf("the handler's Call returned after %v, want 100ms", d)
		}
		go c.Call(ctx, "late", nil, nil)
		synctest.Wait()
		if n := late.Load(); n != 0 {
			t.Errorf("a queued call started while three handlers held two slots")
		}
		close(release)
		synctest.Wait()
		if n := late.Load(); n != 1 {
			t.Errorf("the queued call did not run once the lane was back under the limit")
		}
		c.Close()
		s.Close()
		c.Wait()
		s.Wait()
	})
}
