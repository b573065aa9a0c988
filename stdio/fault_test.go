package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// faultBound is how soon after a fault every waiting caller must return.
const faultBound = time.Second

var errCut = errors.New("stream cut")

// streamPeer is a Peer on a Conn over two io.Pipes, with the test at the
// other ends: it writes raw bytes to the Peer and reads what the Peer
// writes, framed, on msgs.
type streamPeer struct {
	p       *jsonrpc.Peer
	inW     *io.PipeWriter // the test writes the Peer's input here
	outR    *io.PipeReader // and reads its output here
	msgs    chan []byte
	entered chan struct{}    // the block handler started
	ended   chan time.Time   // the block handler's ctx ended
	done    chan struct{}    // the test's reader has stopped
	opts    *jsonrpc.Options // the Peer's options
	framing Framing
}

func newStreamPeer(t *testing.T, f Framing, opts *jsonrpc.Options) *streamPeer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &streamPeer{
		inW: inW, outR: outR, framing: f, opts: opts,
		msgs:    make(chan []byte, 64),
		entered: make(chan struct{}, 1),
		ended:   make(chan time.Time, 1),
		done:    make(chan struct{}),
	}
	h := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method != "block" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
		}
		s.entered <- struct{}{}
		<-ctx.Done()
		s.ended <- time.Now()
		return nil, ctx.Err()
	})
	s.p = jsonrpc.NewPeer(NewConn(inR, outW, Options{Framing: f}), peerOptions(opts, h))
	remote := NewConn(outR, nil, Options{Framing: f})
	go func() {
		defer close(s.done)
		for {
			msg, err := remote.Read()
			if err != nil {
				return
			}
			s.msgs <- msg
		}
	}()
	t.Cleanup(func() {
		s.p.Close()
		inW.Close()
		outR.Close()
		waited := make(chan struct{})
		go func() { s.p.Wait(); <-s.done; close(waited) }()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			t.Error("the Peer or the test's reader still running 5 s after Close")
		}
	})
	return s
}

// recv returns the next message the Peer wrote.
func (s *streamPeer) recv(t *testing.T) []byte {
	t.Helper()
	select {
	case msg := <-s.msgs:
		return msg
	case <-time.After(5 * time.Second):
		t.Fatal("no message from the Peer")
		return nil
	}
}

// send writes raw bytes to the Peer.
func (s *streamPeer) send(t *testing.T, raw string) {
	t.Helper()
	if _, err := s.inW.Write([]byte(raw)); err != nil {
		t.Fatalf("writing to the Peer: %v", err)
	}
}

type callOutcome struct {
	err error
	at  time.Time
}

// startCalls starts n calls from the Peer that nobody will answer.
func (s *streamPeer) startCalls(n int) <-chan callOutcome {
	out := make(chan callOutcome, n)
	ctx := context.Background() // the fault, not a timeout, must end them
	for range n {
		go func() {
			err := s.p.Call(ctx, "unanswered", nil, nil)
			out <- callOutcome{err, time.Now()}
		}()
	}
	return out
}

// checkCalls checks that n calls failed with ErrClosed wrapping cause,
// within faultBound of fault.
func checkCalls(t *testing.T, out <-chan callOutcome, n int, cause error, fault time.Time) {
	t.Helper()
	for range n {
		select {
		case o := <-out:
			if !errors.Is(o.err, jsonrpc.ErrClosed) || !errors.Is(o.err, cause) {
				t.Errorf("pending Call = %v, want ErrClosed wrapping %v", o.err, cause)
			}
			if d := o.at.Sub(fault); d > faultBound {
				t.Errorf("a pending Call returned %v after the fault, want within %v", d, faultBound)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a pending Call did not return after the fault")
		}
	}
}

// TestStreamFaults breaks the stream under a Peer with Header framing while
// it has calls waiting for replies and a handler running: a frame cut short
// in its header or its body (io.ErrUnexpectedEOF), a failing read, a
// failing write. Every pending Call, and one made after the fault, fails
// within a second with ErrClosed wrapping the cause; the handler's ctx ends;
// Wait returns the cause.
func TestStreamFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, s *streamPeer)
		cause error
	}{
		{"cut in the body", func(t *testing.T, s *streamPeer) {
			s.send(t, "Content-Length: 100\r\n\r\n"+`{"jsonrpc":"2.0","id":"x","method":"blo`)
			s.inW.Close()
		}, io.ErrUnexpectedEOF},
		{"cut in a header line", func(t *testing.T, s *streamPeer) {
			s.send(t, "Content-Len")
			s.inW.Close()
		}, io.ErrUnexpectedEOF},
		{"cut before the blank line", func(t *testing.T, s *streamPeer) {
			s.send(t, "Content-Length: 41\r\nContent-Type: application/vscode-jsonrpc\r\n")
			s.inW.Close()
		}, io.ErrUnexpectedEOF},
		{"cut after a whole frame", func(t *testing.T, s *streamPeer) {
			s.send(t, frame(`{"jsonrpc":"2.0","method":"note"}`)+"Content-Length: 2\r\n\r\n{")
			s.inW.Close()
		}, io.ErrUnexpectedEOF},
		{"read error", func(t *testing.T, s *streamPeer) {
			s.inW.CloseWithError(errCut)
		}, errCut},
		{"write error", func(t *testing.T, s *streamPeer) {
			s.outR.CloseWithError(errCut) // the next write fails
		}, errCut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStreamPeer(t, Header, nil)
			const n = 3
			out := s.startCalls(n)
			for range n {
				s.recv(t)
			}
			s.send(t, frame(`{"jsonrpc":"2.0","id":"in","method":"block"}`))
			select {
			case <-s.entered:
			case <-time.After(5 * time.Second):
				t.Fatal("the handler did not start")
			}

			fault := time.Now()
			tc.fault(t, s)
			late := s.startCalls(1) // a call made after the fault
			checkCalls(t, out, n, tc.cause, fault)
			checkCalls(t, late, 1, tc.cause, fault)
			select {
			case at := <-s.ended:
				if d := at.Sub(fault); d > faultBound {
					t.Errorf("the handler's ctx ended %v after the fault", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the handler's ctx did not end")
			}
			waitErr := make(chan error, 1)
			go func() { waitErr <- s.p.Wait() }()
			select {
			case err := <-waitErr:
				if !errors.Is(err, tc.cause) {
					t.Errorf("Wait = %v, want the cause %v", err, tc.cause)
				}
			case <-time.After(faultBound):
				t.Fatalf("Wait did not return within %v of the fault", faultBound)
			}
		})
	}
}

// TestLineTruncatedLastLine: Line framing cannot tell a message cut short
// from a last line without its newline, which it accepts. A stream that
// ends in the middle of a message is a clean end after a message that is
// not valid JSON: the fragment is answered with a Parse error, the pending
// calls fail at once with ErrClosed wrapping io.EOF, and Wait returns nil.
func TestLineTruncatedLastLine(t *testing.T) {
	s := newStreamPeer(t, Line, nil)
	const n = 3
	out := s.startCalls(n)
	for range n {
		s.recv(t)
	}
	fault := time.Now()
	s.send(t, `{"jsonrpc":"2.0","id":7,"method":"ech`)
	s.inW.Close()
	checkCalls(t, out, n, io.EOF, fault)
	var reply struct {
		ID    json.RawMessage
		Error *jsonrpc.Error
	}
	if err := json.Unmarshal(s.recv(t), &reply); err != nil || string(reply.ID) != "null" ||
		reply.Error == nil || reply.Error.Code != jsonrpc.CodeParseError {
		t.Errorf("reply to the fragment: %+v, %v; want a Parse error with id null", reply, err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- s.p.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Errorf("Wait = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return")
	}
}

// peerOptions returns *o (the defaults if o is nil) serving h.
func peerOptions(o *jsonrpc.Options, h jsonrpc.Handler) jsonrpc.Options {
	var c jsonrpc.Options
	if o != nil {
		c = *o
	}
	c.Handler = h
	return c
}
