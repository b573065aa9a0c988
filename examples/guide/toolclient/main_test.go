package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestToolClientBothTransports builds examples/guide/tools and runs the
// client against it as a child process, then against it serving
// Streamable HTTP: the same progress and result each way.
func TestToolClientBothTransports(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "tools")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../tools").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	want := "progress {\"progress\":1,\"total\":2,\"progressToken\":"
	check := func(name string, args []string) {
		var out bytes.Buffer
		if err := run(ctx, args, "one two\nthree", &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s := out.String(); !strings.Contains(s, want) || !strings.HasSuffix(s, "words: 3\n") || strings.Count(s, "progress ") != 2 {
			t.Fatalf("%s printed:\n%s", name, s)
		}
	}
	check("stdio", []string{bin})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := exec.Command(bin, "-http", addr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	for { // until it listens
		res, err := http.Get("http://" + addr + "/mcp")
		if err == nil {
			res.Body.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the server never listened: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	check("http", []string{"http://" + addr + "/mcp"})
}
