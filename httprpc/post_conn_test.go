package httprpc

import (
	"io"
	"testing"
)

// TestPostConnKeepsOnlyTheReply: the one-shot Conn returns the body once,
// then io.EOF; a notification written to it is dropped, the reply kept
// (a copy), and a second reply refused.
func TestPostConnKeepsOnlyTheReply(t *testing.T) {
	c := &postConn{body: []byte(`{"jsonrpc":"2.0","id":1,"method":"m"}`)}
	if b, err := c.Read(); err != nil || string(b) != string(c.body) {
		t.Fatalf("first Read: %q %v", b, err)
	}
	if _, err := c.Read(); err != io.EOF {
		t.Fatalf("second Read: %v, want io.EOF", err)
	}
	if err := c.Write([]byte(`{"jsonrpc":"2.0","method":"$/progress","params":{}}`)); err != nil || c.reply != nil {
		t.Fatalf("a notification: %v, kept %v", err, c.reply)
	}
	reply := []byte(`{"jsonrpc":"2.0","id":1,"result":3}`)
	if err := c.Write(reply); err != nil {
		t.Fatal(err)
	}
	reply[0] = 'x'
	if string(c.reply.b) != `{"jsonrpc":"2.0","id":1,"result":3}` {
		t.Fatalf("kept %q, not a copy of the reply", c.reply.b)
	}
	if err := c.Write([]byte(`[{"jsonrpc":"2.0","id":2,"result":3}]`)); err == nil {
		t.Fatal("a second reply was taken")
	}
}
