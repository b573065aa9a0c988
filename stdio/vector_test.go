package stdio

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// closingRecorder is a recorder that Close can interrupt, so that the Conn
// writes to it directly (no pump), as it does to an *os.File.
type closingRecorder struct{ recorder }

func (*closingRecorder) Close() error { return nil }

// tcpPair returns the two ends of a loopback TCP connection; the test
// closes both when it ends.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept() // nil on failure
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		client.Close()
		t.Fatal("Accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestLargeWriteWireFormat: a message of minVectorWrite bytes or more
// written to a socket goes out from the caller's slice, not copied into
// the write buffer, and its frame on the wire is the one a small message
// gets; a large line with line breaks in it is still compacted. After
// Write returns, the Conn keeps no reference to the message.
func TestLargeWriteWireFormat(t *testing.T) {
	big := `{"s":"` + strings.Repeat("x", minVectorWrite) + `"}`
	spaced := "{\n \"s\": \"" + strings.Repeat("y", minVectorWrite) + "\"\r\n}"
	compact := `{"s":"` + strings.Repeat("y", minVectorWrite) + `"}`
	for _, tc := range []struct {
		framing Framing
		msg     string
		want    string
	}{
		{Header, big, "Content-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big},
		{Line, big, big + "\n"},
		{Line, spaced, compact + "\n"},
	} {
		cc, sc := tcpPair(t)
		c := NewConn(nil, cc, Options{Framing: tc.framing})
		if !c.vector {
			t.Fatalf("a Conn writing to a %T does not use vectored writes", cc)
		}
		msg := []byte(tc.msg)
		if err := c.Write(msg); err != nil {
			t.Fatalf("%v Write of %d bytes: %v", tc.framing, len(msg), err)
		}
		if c.wvec[0] != nil || c.wvec[1] != nil {
			t.Errorf("%v: the Conn still refers to the message after Write", tc.framing)
		}
		c.Close()
		got, err := io.ReadAll(sc)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%v Write of %d bytes wrote %d bytes, not its frame of %d (%.40q…)", tc.framing, len(msg), len(got), len(tc.want), got)
		}
	}
	// An all-space line is refused as on the buffer's path.
	cc, _ := tcpPair(t)
	c := NewConn(nil, cc, Options{Framing: Line})
	defer c.Close()
	if err := c.Write(bytes.Repeat([]byte(" "), minVectorWrite)); err == nil {
		t.Error("a large all-space line was written")
	}
}
