package stdio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var framings = []Framing{Header, Line}

func TestRoundTrip(t *testing.T) {
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","method":"note","params":["a\nb"]}`,
		`[{"jsonrpc":"2.0","id":2,"method":"x"},{"jsonrpc":"2.0","id":3,"method":"y"}]`,
		`"` + strings.Repeat("z", 200<<10) + `"`,
	}
	for _, f := range framings {
		t.Run(f.String(), func(t *testing.T) {
			pr, pw := io.Pipe()
			writer := NewConn(nil, pw, Options{Framing: f})
			reader := NewConn(pr, nil, Options{Framing: f})
			errc := make(chan error, 1)
			go func() {
				defer writer.Close()
				for _, m := range msgs {
					if err := writer.Write([]byte(m)); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			var got []string
			var err error
			within(t, 5*time.Second, "reading", func() { got, err = readAll(t, reader, 100) })
			if werr := <-errc; werr != nil {
				t.Fatalf("Write: %v", werr)
			}
			if err != io.EOF || !slices.Equal(got, msgs) {
				t.Fatalf("read %.60q, %v; want %.60q, EOF", got, err, msgs)
			}
			if err := reader.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

// recorder records each Write call it receives.
type recorder struct {
	mu    sync.Mutex
	calls [][]byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, bytes.Clone(p))
	return len(p), nil
}

func TestWriteWireFormat(t *testing.T) {
	tests := []struct {
		framing Framing
		msg     string
		want    string
	}{
		{Header, `{"id":1}`, "Content-Length: 8\r\n\r\n{\"id\":1}"},
		{Header, "", "Content-Length: 0\r\n\r\n"},
		{Line, `{"id":1}`, "{\"id\":1}\n"},
		{Line, "{\n  \"id\": 1,\r\n  \"a\": [ 1, 2 ]\n}\n", "{\"id\":1,\"a\":[1,2]}\n"},
		{Line, `  {"id": 1}  `, "  {\"id\": 1}  \n"},
	}
	for _, tt := range tests {
		var rec recorder
		c := NewConn(nil, &rec, Options{Framing: tt.framing})
		defer c.Close()
		if err := c.Write([]byte(tt.msg)); err != nil {
			t.Errorf("%v Write(%q): %v", tt.framing, tt.msg, err)
			continue
		}
		if len(rec.calls) != 1 || string(rec.calls[0]) != tt.want {
			t.Errorf("%v Write(%q) made calls %q, want one call %q", tt.framing, tt.msg, rec.calls, tt.want)
		}
	}
}

func TestLineWriteErrors(t *testing.T) {
	var rec recorder
	c := NewConn(nil, &rec, Options{Framing: Line})
	defer c.Close()
	for _, msg := range []string{"", " \r\n", "{\n", "not json\n"} {
		if err := c.Write([]byte(msg)); err == nil {
			t.Errorf("Write(%q) succeeded", msg)
		}
	}
	if len(rec.calls) != 0 {
		t.Errorf("failed Writes wrote %q", rec.calls)
	}
}

// TestConcurrentWrites checks that every Write reaches the writer as one
// whole frame even when Writes race.
func TestConcurrentWrites(t *testing.T) {
	for _, f := range framings {
		var rec recorder
		c := NewConn(nil, &rec, Options{Framing: f})
		defer c.Close()
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				for j := range 20 {
					msg := fmt.Sprintf(`{"id":%d,"pad":%q}`, i*100+j, strings.Repeat("p", 100*j))
					if err := c.Write([]byte(msg)); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if len(rec.calls) != 400 {
			t.Fatalf("%v: %d calls, want 400", f, len(rec.calls))
		}
		for _, call := range rec.calls {
			got, err := decode(t, call, f, 0)
			if err != io.EOF || len(got) != 1 {
				t.Fatalf("%v: call %.60q decodes to %d messages, %v", f, call, len(got), err)
			}
		}
	}
}

func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) && errors.Is(err, os.ErrClosed)
}

// TestCloseUnblocks checks that Close makes a pending Read or Write return
// promptly with a closed error, over io.Pipe and over os.Pipe.
func TestCloseUnblocks(t *testing.T) {
	pipes := map[string]func(t *testing.T) (io.ReadCloser, io.WriteCloser){
		"io.Pipe": func(*testing.T) (io.ReadCloser, io.WriteCloser) { return io.Pipe() },
		"os.Pipe": func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			return r, w
		},
	}
	for name, newPipe := range pipes {
		t.Run(name+"/Read", func(t *testing.T) {
			r, w := newPipe(t)
			defer w.Close()
			c := NewConn(r, nil)
			done := make(chan error, 1)
			go func() {
				_, err := c.Read()
				done <- err
			}()
			time.Sleep(20 * time.Millisecond)
			within(t, 2*time.Second, "Close", func() { c.Close() })
			select {
			case err := <-done:
				if !isClosedErr(err) {
					t.Errorf("Read error = %v, want a closed error", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Read still blocked after Close")
			}
		})
		t.Run(name+"/Write", func(t *testing.T) {
			r, w := newPipe(t)
			defer r.Close()
			c := NewConn(nil, w)
			done := make(chan error, 1)
			go func() { // nobody reads, so this blocks
				done <- c.Write(make([]byte, 1<<20))
			}()
			time.Sleep(20 * time.Millisecond)
			within(t, 2*time.Second, "Close", func() { c.Close() })
			select {
			case err := <-done:
				if !isClosedErr(err) {
					t.Errorf("Write error = %v, want a closed error", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Write still blocked after Close")
			}
		})
	}
}

func TestUseAfterClose(t *testing.T) {
	c := NewConn(strings.NewReader(frame("{}")), io.Discard)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(); !isClosedErr(err) {
		t.Errorf("Read after Close: %v", err)
	}
	if err := c.Write([]byte("{}")); !isClosedErr(err) {
		t.Errorf("Write after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// closer counts its Close calls.
type closer struct{ n *int }

func (c closer) Read([]byte) (int, error)    { return 0, io.EOF }
func (c closer) Write(p []byte) (int, error) { return len(p), nil }
func (c closer) Close() error                { *c.n++; return nil }

// uncomparable is an io.ReadWriteCloser whose values cannot be compared.
type uncomparable struct {
	closer
	_ []int
}

func TestCloseClosesEachOnce(t *testing.T) {
	var n, m int
	rw := &closer{&n}
	c := NewConn(rw, rw)
	c.Close()
	c.Close()
	if n != 1 {
		t.Errorf("same reader and writer closed %d times, want 1", n)
	}

	n = 0
	c = NewConn(closer{&n}, closer{&m})
	c.Close()
	if n != 1 || m != 1 {
		t.Errorf("reader closed %d times, writer %d times, want 1 and 1", n, m)
	}

	n = 0
	u := uncomparable{closer: closer{&n}}
	c = NewConn(u, u) // must not panic comparing them
	c.Close()
	if n != 2 {
		t.Errorf("uncomparable values closed %d times, want 2", n)
	}

	c = NewConn(strings.NewReader(""), io.Discard) // no closers
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestCloseConcurrent(t *testing.T) {
	pr, pw := io.Pipe()
	c := NewConn(pr, pw)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { c.Close() })
		wg.Go(func() { c.Read() })
		wg.Go(func() { c.Write([]byte("{}")) })
	}
	within(t, 5*time.Second, "concurrent calls", wg.Wait)
}

func TestInvalidFramingPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewConn with Framing(7) did not panic")
		}
	}()
	NewConn(nil, nil, Options{Framing: 7})
}
