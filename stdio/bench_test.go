package stdio

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkWriteLarge writes frames of 16 KiB, 64 KiB and 1 MiB to an
// os.Pipe (one Write call per frame, the message copied into the write
// buffer) and to loopback TCP (one writev from the message itself), with a
// goroutine draining the other end.
func BenchmarkWriteLarge(b *testing.B) {
	for _, size := range []int{16 << 10, 64 << 10, 1 << 20} {
		msg := []byte(`{"s":"` + strings.Repeat("x", size-8) + `"}`)
		for _, to := range []string{"pipe", "tcp"} {
			b.Run(to+"/"+sizeName(size), func(b *testing.B) {
				var (
					w    io.WriteCloser
					r    io.ReadCloser
					done = make(chan struct{})
				)
				if to == "pipe" {
					pr, pw, err := os.Pipe()
					if err != nil {
						b.Fatal(err)
					}
					r, w = pr, pw
				} else {
					r, w = tcpPair(b)
				}
				go func() {
					io.Copy(io.Discard, r)
					r.Close()
					close(done)
				}()
				c := NewConn(nil, w)
				b.SetBytes(int64(len(msg)))
				b.ReportAllocs()
				for b.Loop() {
					if err := c.Write(msg); err != nil {
						b.Fatal(err)
					}
				}
				c.Close()
				<-done
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + "MiB"
	}
	return strconv.Itoa(n>>10) + "KiB"
}
