package stdio

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// wantFrame is msg's frame as Write puts it on the wire.
func wantFrame(f Framing, msg string) string {
	if f == Line {
		return msg + "\n"
	}
	return "Content-Length: " + strconv.Itoa(len(msg)) + "\r\n\r\n" + msg
}

// TestLargeFrameIsOneWrite: every frame, however large, reaches a writer
// that is not a socket in exactly one call to its Write method, as Write's
// doc says, whether Close interrupts the writer (no pump: the path that
// once wrote a frame of 16 KiB or more as two calls, header then body) or
// not. A pipe's or a file's Write holds its own lock for the whole call,
// so one call is what keeps another writer's bytes out of the frame.
func TestLargeFrameIsOneWrite(t *testing.T) {
	writers := map[string]func() (io.Writer, *recorder){
		"closer": func() (io.Writer, *recorder) { r := &closingRecorder{}; return r, &r.recorder },
		"pumped": func() (io.Writer, *recorder) { r := &recorder{}; return r, r },
	}
	for name, newWriter := range writers {
		for _, f := range framings {
			for _, size := range []int{minVectorWrite - 1, minVectorWrite, 1 << 20} {
				w, rec := newWriter()
				c := NewConn(nil, w, Options{Framing: f})
				msg := `{"s":"` + strings.Repeat("x", size-8) + `"}`
				if err := c.Write([]byte(msg)); err != nil {
					t.Fatalf("%s %v Write of %d bytes: %v", name, f, len(msg), err)
				}
				c.Close()
				if n := len(rec.calls); n != 1 {
					t.Errorf("%s %v: the frame of a %d-byte message took %d calls to Write, want 1", name, f, len(msg), n)
					continue
				}
				if got := string(rec.calls[0]); got != wantFrame(f, msg) {
					t.Errorf("%s %v: Write of %d bytes wrote %.40q…, not its frame", name, f, len(msg), got)
				}
			}
		}
	}
}

// TestLargeFramesWholeBesideAnotherWriter: a Conn writing frames of 16 KiB
// and more to a pipe, while another goroutine writes its own frames to the
// same *os.File (a second Conn, a logger that shares the stream), never
// has the other writer's bytes land inside one of its frames: the reader
// gets every message of both whole.
func TestLargeFramesWholeBesideAnotherWriter(t *testing.T) {
	for _, f := range framings {
		t.Run(f.String(), func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			in := NewConn(pr, nil, Options{Framing: f})
			big := NewConn(nil, pw, Options{Framing: f})
			const rounds = 300
			bigMsg := `{"big":"` + strings.Repeat("b", minVectorWrite) + `"}`
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			wg.Go(func() {
				for range rounds {
					if err := big.Write([]byte(bigMsg)); err != nil {
						errs <- fmt.Errorf("Write: %w", err)
						return
					}
				}
			})
			wg.Go(func() { // another writer of the same file
				for i := range rounds {
					small := fmt.Sprintf(`{"small":%d}`, i)
					if _, err := pw.Write([]byte(wantFrame(f, small))); err != nil {
						errs <- fmt.Errorf("the other writer: %w", err)
						return
					}
				}
			})
			deadline := time.AfterFunc(30*time.Second, func() { in.Close() })
			err = readBigAndSmall(in, bigMsg, 2*rounds)
			deadline.Stop()
			in.Close()
			big.Close() // closes pw, so that a writer blocked on a full pipe returns
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// readBigAndSmall reads n messages from c, each either big or a small one
// of the other writer's, and says what else it found.
func readBigAndSmall(c *Conn, big string, n int) error {
	var nbig, nsmall int
	for nbig+nsmall < n {
		msg, err := c.Read()
		if err != nil {
			return fmt.Errorf("after %d big and %d small messages: %w", nbig, nsmall, err)
		}
		switch {
		case string(msg) == big:
			nbig++
		case bytes.HasPrefix(msg, []byte(`{"small":`)) && len(msg) < 32:
			nsmall++
		default:
			return fmt.Errorf("after %d big and %d small messages, a message of %d bytes that neither writer wrote: %.60q…",
				nbig, nsmall, len(msg), msg)
		}
	}
	return nil
}

// TestLargeWriteToSocketNotCopied: over a socket (a *net.TCPConn here),
// a frame of 16 KiB or more still goes out as one vectored write (writev)
// from the caller's slice, without copying the message into a buffer.
func TestLargeWriteToSocketNotCopied(t *testing.T) {
	cc, sc := tcpPair(t)
	drained := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, sc)
		sc.Close()
		drained <- n
	}()
	c := NewConn(nil, cc)
	msg := []byte(`{"s":"` + strings.Repeat("x", 256<<10) + `"}`)
	const writes = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range writes {
		if err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	c.Close()
	if n := <-drained; n != writes*int64(len(wantFrame(Header, string(msg)))) {
		t.Errorf("the other end read %d bytes, want %d frames of %d", n, writes, len(msg))
	}
	// The copying path allocates a frame's worth per Write; allow a
	// tenth of that for whatever else the runtime allocates meanwhile.
	if per := (after.TotalAlloc - before.TotalAlloc) / writes; per > uint64(len(msg)/10) {
		t.Errorf("a Write of %d bytes to a socket allocated %d bytes: the message was copied", len(msg), per)
	}
}
