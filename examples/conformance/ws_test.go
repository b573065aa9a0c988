package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc/internal/testbin"
)

// wsConn drives a server started with -transport ws through a plain
// coder/websocket client, one message per text frame: the server's side
// is what is under test, so the client side uses nothing of this module.
type wsConn struct {
	ws    *websocket.Conn
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startWS runs the server with -transport ws, reads the URL it prints and
// connects to it.
func startWS(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{t: t, owner: t}
	proc, url := startWSServer(t, binPath, &c.stderr, args...)
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		proc.stop()
		t.Fatalf("dial %s: %v", url, err)
	}
	conn.SetReadLimit(-1)
	proc.ws = conn
	c.conn = proc
	t.Cleanup(c.stop)
	return c
}

// startWSServer starts the server binary bin and returns its process with
// the URL from the first line of its output.
func startWSServer(t *testing.T, bin string, stderr io.Writer, args ...string) (*wsConn, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-transport", "ws", "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = stderr
	cmd.Env = testbin.Env()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proc := &wsConn{cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout) // until the process exits
	}()
	select {
	case s := <-line:
		if !strings.HasPrefix(s, "ws://127.0.0.1:") {
			proc.stop()
			t.Fatalf("first line of output = %q, want the ws:// URL", s)
		}
		return proc, strings.TrimSpace(s)
	case <-time.After(readTimeout):
		proc.stop()
		t.Fatal("the server printed no URL")
		return nil, ""
	}
}

func (c *wsConn) Read() ([]byte, error) {
	typ, msg, err := c.ws.Read(context.Background()) // Close stops it
	if err == nil && typ != websocket.MessageText {
		err = fmt.Errorf("got a %v message, want text", typ)
	}
	return msg, err
}

func (c *wsConn) Write(msg []byte) error {
	return c.ws.Write(context.Background(), websocket.MessageText, msg)
}

// Close closes the WebSocket, then the server's stdin, which stops the
// server; it is killed if it has not exited within exitTimeout.
func (c *wsConn) Close() error {
	if c.ws != nil {
		c.ws.Close(websocket.StatusNormalClosure, "")
	}
	return c.stop()
}

func (c *wsConn) stop() error {
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(exitTimeout):
		c.cmd.Process.Kill()
		<-done
		return errors.New("the server did not exit after its stdin closed; killed")
	}
}

func (c *wsConn) ProcessState() *os.ProcessState { return c.cmd.ProcessState }

// TestWSOrigin pins the origin policy: a browser page from another origin
// is refused unless -origin allows it.
func TestWSOrigin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		origin string
		want   int
	}{
		{"same origin", nil, "", http.StatusSwitchingProtocols},
		{"other origin refused", nil, "http://evil.example", http.StatusForbidden},
		{"other origin allowed", []string{"-origin", "evil.example"}, "http://evil.example", http.StatusSwitchingProtocols},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr testbin.Buffer
			proc, url := startWSServer(t, binPath, &stderr, tc.args...)
			defer func() {
				if err := proc.stop(); err != nil {
					t.Errorf("server exit: %v\n%s", err, stderr.String())
				}
			}()
			h := http.Header{}
			origin := tc.origin
			if origin == "" {
				origin = "http://" + strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/")
			}
			h.Set("Origin", origin)
			ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			defer cancel()
			conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
			if conn != nil {
				conn.Close(websocket.StatusNormalClosure, "")
			}
			if resp == nil {
				t.Fatalf("no HTTP response: %v", err)
			}
			if resp.StatusCode != tc.want {
				t.Errorf("origin %s: status %d, want %d (%v)", origin, resp.StatusCode, tc.want, err)
			}
		})
	}
}
