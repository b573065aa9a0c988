//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/internal/testbin"
)

// The real nats-server processes TestChaos runs: built from the module
// this one requires, three with routes and JetStream (natsProc,
// procCluster), or one standalone.

// buildNATSServer builds the real nats-server, from the module this one
// requires, into t.TempDir(), and returns its path.
func buildNATSServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		t.Fatalf("go build nats-server: %v\n%s", err, out)
	}
	return bin
}

// natsProc is one nats-server process, restartable with its store.
type natsProc struct {
	name       string
	bin        string
	args       []string
	port, mon  int
	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
	out        testbin.Buffer
	t          *testing.T
	monitorURL string
}

// natsConf is every server's configuration file: a system account (for
// the test's JetStream meta-leader stepdowns) beside the application's,
// which clients without credentials (the demo) use.
const natsConf = `accounts {
  SYS: { users: [ { user: "sys", password: "sys" } ] }
  APP: { jetstream: enabled, users: [ { user: "app", password: "app" } ] }
}
system_account: SYS
no_auth_user: app
`

func newNATSProc(t *testing.T, bin, name string, args ...string) *natsProc {
	p := &natsProc{t: t, bin: bin, name: name, port: freePort(t), mon: freePort(t)}
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(natsConf), 0o600); err != nil {
		t.Fatal(err)
	}
	p.args = append([]string{"-c", conf, "-a", "127.0.0.1", "-p", fmt.Sprint(p.port), "-m", fmt.Sprint(p.mon),
		"-js", "-sd", t.TempDir(), "--server_name", name}, args...)
	p.monitorURL = fmt.Sprintf("http://127.0.0.1:%d/", p.mon)
	t.Cleanup(func() {
		p.signal(syscall.SIGCONT)
		p.kill()
	})
	return p
}

func (p *natsProc) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", p.port) }

// start runs the server and returns once it answers on its monitoring
// port.
func (p *natsProc) start() {
	p.t.Helper()
	p.mu.Lock()
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		p.mu.Unlock()
		p.t.Fatal(err)
	}
	done := make(chan struct{})
	p.done = done
	cmd := p.cmd
	p.mu.Unlock()
	go func() { cmd.Wait(); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get(p.monitorURL + "varz"); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s did not start within 20s:\n%s", p.name, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *natsProc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(sig)
	}
}

// stop sends sig and waits for the process to exit (SIGKILL after 10 s).
func (p *natsProc) stop(sig syscall.Signal) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

func (p *natsProc) kill() { p.stop(syscall.SIGKILL) }

// monitor decodes the JSON of a monitoring endpoint, or reports false.
func (p *natsProc) monitor(path string, v any) bool {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(p.monitorURL + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// procCluster is three nats-server processes with routes and JetStream.
type procCluster struct {
	t     *testing.T
	procs []*natsProc
}

func runProcCluster(t *testing.T, bin string) *procCluster {
	t.Helper()
	c := &procCluster{t: t}
	route := []int{freePort(t), freePort(t), freePort(t)}
	var routes []string
	for _, r := range route {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", r))
	}
	for i := range 3 {
		c.procs = append(c.procs, newNATSProc(t, bin, fmt.Sprintf("s%d", i+1),
			"--cluster_name", "demo", "--cluster", routes[i], "--routes", strings.Join(routes, ",")))
	}
	for _, p := range c.procs {
		p.start()
	}
	c.waitHealthy(30 * time.Second)
	return c
}

func (c *procCluster) url() string {
	var urls []string
	for _, p := range c.procs {
		urls = append(urls, p.url())
	}
	return strings.Join(urls, ",")
}

// waitHealthy waits until every server answers /healthz ok (JetStream
// current) and has routes to all the others.
func (c *procCluster) waitHealthy(bound time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		ok := true
		for _, p := range c.procs {
			var h struct{ Status string }
			var rz struct {
				Routes []struct {
					RemoteName string `json:"remote_name"`
				}
			}
			names := map[string]bool{}
			if p.monitor("routez", &rz) {
				for _, r := range rz.Routes {
					names[r.RemoteName] = true
				}
			}
			if !p.monitor("healthz", &h) || h.Status != "ok" || len(names) < len(c.procs)-1 {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the NATS cluster not healthy within %v", bound)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leader returns the JetStream meta-leader's process.
func (c *procCluster) leader() *natsProc {
	c.t.Helper()
	for range 100 {
		for _, p := range c.procs {
			var jz struct {
				Meta struct{ Leader string } `json:"meta_cluster"`
			}
			if p.monitor("jsz", &jz) && jz.Meta.Leader != "" {
				for _, q := range c.procs {
					if q.name == jz.Meta.Leader {
						return q
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatal("no meta-leader")
	return nil
}

// serverOf returns the process the node at base is connected to, from its
// /healthz.
func (c *procCluster) serverOf(base string) *natsProc {
	c.t.Helper()
	_, h, _ := healthOf(c.t, base)
	for _, p := range c.procs {
		if h["server"] == p.url() {
			return p
		}
	}
	c.t.Fatalf("node %s is connected to no server of the cluster: %v", base, h)
	return nil
}
