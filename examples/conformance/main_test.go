package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/internal/testbin"
	"github.com/peerwire/jsonrpc/stdio"
)

const (
	readTimeout = 10 * time.Second // bounds every read from the server
	exitTimeout = 5 * time.Second  // how long the server may take to exit
)

// binPath is the server binary that TestMain builds.
var binPath string

func TestMain(m *testing.M) { testbin.Main(m, "conformance", &binPath) }

// framings are the transports every conformance test runs over: stdio with
// each framing, and WebSocket.
var framings = []string{"header", "line", "ws"}

// eachFraming runs fn in a parallel subtest per framing, each with its own
// server process.
func eachFraming(t *testing.T, fn func(t *testing.T, c *child), args ...string) {
	for _, f := range framings {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			fn(t, start(t, f, args...))
		})
	}
}

// child is a running server process driven with raw wire text.
type child struct {
	t        *testing.T // the test the helpers report to
	owner    *testing.T // the test that started the server; stop reports to it
	conn     serverConn
	stderr   testbin.Buffer
	stopOnce sync.Once
	seq      int
	broken   bool // a read or write failed: the connection is gone
}

// serverConn is a raw connection to a server process: *stdio.Conn, or
// wsConn for the WebSocket transport. Close ends the process too.
type serverConn interface {
	Read() ([]byte, error)
	Write(msg []byte) error
	Close() error
	ProcessState() *os.ProcessState
}

// start runs the server with the given framing ("ws" for the WebSocket
// transport) and extra flags. The test's cleanup stops it and checks that
// it exited with status 0.
func start(t *testing.T, framing string, args ...string) *child {
	t.Helper()
	if framing == "ws" {
		return startWS(t, args...)
	}
	f := stdio.Header
	if framing == "line" {
		f = stdio.Line
	}
	c := &child{t: t, owner: t}
	cmd := exec.Command(binPath, append([]string{"-transport", "stdio", "-framing", framing}, args...)...)
	cmd.Stderr = &c.stderr
	cmd.Env = testbin.Env()
	conn, err := stdio.Command(cmd, stdio.Options{Framing: f, GracePeriod: exitTimeout})
	if err != nil {
		t.Fatal(err)
	}
	c.conn = conn
	t.Cleanup(c.stop)
	return c
}

// stop closes the server's stdin and waits for it to exit, killing it after
// exitTimeout. It reports an error unless the server exited with status 0
// on its own, without a data race.
func (c *child) stop() {
	c.stopOnce.Do(func() {
		t := c.owner
		if err := c.conn.Close(); err != nil {
			t.Errorf("server did not exit cleanly: %v", err)
		}
		if st := c.conn.ProcessState(); st == nil || st.ExitCode() != 0 {
			t.Errorf("server exit state: %v, want exit status 0", st)
		}
		if strings.Contains(c.stderr.String(), "DATA RACE") {
			t.Errorf("the race detector fired in the server")
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", c.stderr.String())
		}
	})
}

// run runs fn as a sequential subtest of t that drives c.
// Once the connection is gone, later subtests are not run.
func (c *child) run(t *testing.T, name string, fn func(t *testing.T)) {
	if c.broken {
		return
	}
	t.Run(name, func(st *testing.T) {
		c.t = st
		defer func() { c.t = t }()
		fn(st)
	})
}

// send writes one raw message.
func (c *child) send(msg string) {
	c.t.Helper()
	timer := time.AfterFunc(readTimeout, func() { c.conn.Close() }) // Close stops a stuck write
	defer timer.Stop()
	if err := c.conn.Write([]byte(msg)); err != nil {
		c.broken = true
		c.t.Fatalf("write %s: %v", msg, err)
	}
}

// recv reads the next raw message, failing the test after readTimeout.
func (c *child) recv() string {
	c.t.Helper()
	timer := time.AfterFunc(readTimeout, func() { c.conn.Close() }) // Close stops a stuck read
	defer timer.Stop()
	msg, err := c.conn.Read()
	if err != nil {
		c.broken = true
		c.t.Fatalf("read: %v", err)
	}
	return string(msg)
}

// call sends msg and returns the next message read.
func (c *child) call(msg string) string {
	c.t.Helper()
	c.send(msg)
	return c.recv()
}

// callMsg is call with the reply decoded.
func (c *child) callMsg(msg string) wireMsg {
	c.t.Helper()
	return decode(c.t, c.call(msg))
}

// noReply checks that nothing was sent for what went before: it makes a
// call and requires the next message read to be its reply.
func (c *child) noReply() {
	c.t.Helper()
	c.seq++
	id := fmt.Sprintf(`"sync-%d"`, c.seq)
	got := c.call(`{"jsonrpc":"2.0","id":` + id + `,"method":"get_data"}`)
	want := `{"jsonrpc":"2.0","id":` + id + `,"result":["hello",5]}`
	if canon(c.t, got) != canon(c.t, want) {
		c.t.Fatalf("expected no reply before the sync call's, got %s", got)
	}
}

// wireMsg is a decoded message; raw members keep the exact bytes sent, and
// are nil when absent.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *wireError      `json:"error"`
}

type wireError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func decode(t *testing.T, msg string) wireMsg {
	t.Helper()
	var m wireMsg
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatalf("not a message object: %s: %v", msg, err)
	}
	if m.JSONRPC != "2.0" {
		t.Fatalf(`jsonrpc is not "2.0" in %s`, msg)
	}
	return m
}

// wantResult checks that m is a result reply for id (raw JSON) whose result
// is the JSON value want.
func wantResult(t *testing.T, m wireMsg, id, want string) {
	t.Helper()
	if m.Error != nil || m.Result == nil {
		t.Fatalf("want result %s, got %+v (error %+v)", want, m, m.Error)
	}
	if string(m.ID) != id {
		t.Errorf("id = %s, want %s", m.ID, id)
	}
	if canon(t, string(m.Result)) != canon(t, want) {
		t.Errorf("result = %s, want %s", m.Result, want)
	}
}

// wantError checks that m is an error reply for id with the given code.
func wantError(t *testing.T, m wireMsg, id string, code int64) *wireError {
	t.Helper()
	if m.Error == nil || m.Result != nil {
		t.Fatalf("want error %d, got result %s", code, m.Result)
	}
	if string(m.ID) != id {
		t.Errorf("id = %s, want %s", m.ID, id)
	}
	if m.Error.Code != code {
		t.Errorf("error = %+v, want code %d", *m.Error, code)
	}
	return m.Error
}

// canon returns JSON text in a canonical form: objects with sorted keys,
// numbers as written, no insignificant whitespace.
func canon(t *testing.T, s string) string {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %s: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// canonBatch returns the canonical forms of a batch's elements, sorted, so
// that two batches compare equal whatever their order.
func canonBatch(t *testing.T, s string) []string {
	t.Helper()
	var elems []json.RawMessage
	if err := json.Unmarshal([]byte(s), &elems); err != nil {
		t.Fatalf("not a batch: %s: %v", s, err)
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = canon(t, string(e))
	}
	slices.Sort(out)
	return out
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-transport", "carrier-pigeon"},
		{"-framing", "morse"},
		{"-log", "loud"},
		{"-no-such-flag"},
		{"extra-arg"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, binPath, args...)
			var stdout, stderr testbin.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 2 {
				t.Errorf("exit status %d (%v), want 2", code, err)
			}
			if stdout.String() != "" {
				t.Errorf("wrote to stdout: %q", stdout.String())
			}
			if stderr.String() == "" {
				t.Errorf("no usage message on stderr")
			}
		})
	}
}

// TestExitOnStdinClose checks that closing stdin ends the server promptly
// with status 0 even with a call in flight, whose handler is cancelled.
func TestExitOnStdinClose(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"ms":60000}}`)
		c.noReply() // the sleep has started
		begin := time.Now()
		c.stop() // fails the test unless the exit status is 0
		if d := time.Since(begin); d > 3*time.Second {
			t.Errorf("server took %v to exit", d)
		}
	})
}

func TestLogLevels(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		c := start(t, "line", "-log", "off")
		wantError(t, c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"panic"}`), "1", -32603)
		c.stop()
		if s := c.stderr.String(); s != "" {
			t.Errorf("-log off wrote to stderr: %s", s)
		}
	})
	t.Run("debug", func(t *testing.T) {
		c := start(t, "header", "-log", "debug")
		wantError(t, c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"panic"}`), "1", -32603)
		c.stop()
		if s := c.stderr.String(); !strings.Contains(s, "panicked") || !strings.Contains(s, "level=") {
			t.Errorf("-log debug: no text log of the panic on stderr: %s", s)
		}
	})
}

// TestRepliesAfterStdinCloses pins what `printf '…' | conformance` needs:
// calls written just before the input closes are still answered, and the
// server then exits 0.
func TestRepliesAfterStdinCloses(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"sleep","params":{"ms":200}}` + "\n" +
		`{"jsonrpc":"2.0","method":"update","params":[1]}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"callback","params":{"method":"x"}}` + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "-framing", "line")
	cmd.Stdin = strings.NewReader(in)
	cmd.Env = testbin.Env()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID     json.RawMessage
			Method string
			Result json.RawMessage
			Error  *struct{ Code int }
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad reply %q: %v", line, err)
		}
		if m.Method != "" {
			// The callback's own request to the client: it goes out if
			// the handler runs before the server has read the end of
			// its input (its id is the server's, not one of ours).
			continue
		}
		v := string(m.Result)
		if m.Error != nil {
			v = fmt.Sprint(m.Error.Code)
		}
		got[string(m.ID)] = v
	}
	// The callback cannot be answered once the client's side has closed, so
	// it fails (with the library's -32603) rather than hang.
	want := map[string]string{"1": "19", "2": "200", "3": "-32603"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replies = %v, want %v", got, want)
	}
}
