package httprpc

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/peerwire/jsonrpc/internal/netaddr"
)

// postConn is the one-shot jsonrpc.Conn of a Server's request: Read returns
// the body once and then io.EOF, so that the Peer drains (serves what it
// read, writes the reply) and ends; Write keeps the reply.
//
// The Peer's only writes are its reply (one message: a response, or the
// array of a batch's responses; a body gets at most one) and what a handler
// sends, which the Server's interceptor refuses before it is encoded. A
// notification written all the same (the Cancel dialect's notice, which
// passes no interceptor, though it only follows a call of this Peer's,
// which the interceptor refused) is dropped, so that only the reply goes
// in the body.
type postConn struct {
	body   []byte
	read   bool
	mu     sync.Mutex
	reply  *replyBuf
	remote string // the request's RemoteAddr
}

func (c *postConn) Read() ([]byte, error) {
	if c.read {
		return nil, io.EOF
	}
	c.read = true
	return c.body, nil
}

func (c *postConn) Write(msg []byte) error {
	if !encodedReply(msg) {
		return nil // a handler's notification: the body carries the reply only
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reply != nil {
		return errors.New("httprpc: a second reply to one body")
	}
	c.reply = newReplyBuf(msg)
	return nil
}

func (c *postConn) Close() error { return nil }

// RemoteAddr returns the address of the client of the POST, for
// jsonrpc.RemoteAddresser; nil when it is not an IP address and port.
func (c *postConn) RemoteAddr() net.Addr { return netaddr.Parse(c.remote) }

// replyBuf is a pooled copy of a reply (a Conn must not keep what Write
// is given).
type replyBuf struct{ b []byte }

var replyBufs = sync.Pool{New: func() any { return &replyBuf{b: make([]byte, 0, 512)} }}

// maxPooledReply bounds the buffers kept for reuse.
const maxPooledReply = 64 << 10

func newReplyBuf(msg []byte) *replyBuf {
	r := replyBufs.Get().(*replyBuf)
	r.b = append(r.b[:0], msg...)
	return r
}

func (r *replyBuf) free() {
	if r != nil && cap(r.b) <= maxPooledReply {
		replyBufs.Put(r)
	}
}

// readBody reads the request body, at most max bytes (max < 0: no limit).
// It returns a status other than 0 when it could not: 413 for a body too
// long, 400 for a body cut short (the client went away, or the server's
// ReadTimeout passed).
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, int) {
	if max >= 0 && r.ContentLength > max {
		return nil, http.StatusRequestEntityTooLarge // without reading it
	}
	rd := r.Body
	if max >= 0 {
		rd = http.MaxBytesReader(w, r.Body, max)
	}
	body, err := readAll(rd, r.ContentLength)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, http.StatusRequestEntityTooLarge
		}
		return nil, http.StatusBadRequest
	}
	return body, 0
}

// readAll reads rd to its end. When its length n is known (a
// Content-Length, which net/http holds the body to) it reads into a
// buffer of that size, one allocation, up to 1 MiB at first: a claimed
// length cannot make it allocate more than arrives.
func readAll(rd io.Reader, n int64) ([]byte, error) {
	if n < 0 || n > 1<<20 {
		return io.ReadAll(rd)
	}
	buf := make([]byte, n, n+1)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, err
	}
	// The body may not end where it said (a reader other than net/http's):
	// look one byte further, and read on if it did not.
	k, err := rd.Read(buf[n : n+1])
	switch {
	case k == 0 && err == io.EOF:
		return buf, nil
	case err != nil && err != io.EOF:
		return nil, err
	}
	buf = buf[:n+int64(k)]
	rest, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}
