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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/internal/testbin"
)

// jaegerConfig is the all-in-one's configuration: OTLP over HTTP in,
// memory storage, the query API, each on a loopback port of its own, and
// nothing else listening (no metrics, no other receiver).
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: %s
    grpc:
      endpoint: %s
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// jaeger is one Jaeger all-in-one process.
type jaeger struct {
	otlp, query string // base URLs: OTLP/HTTP receiver, query API
	out         testbin.Buffer
}

// startJaeger runs the all-in-one at bin on free loopback ports until the
// test ends, and returns once its query API answers.
func startJaeger(t *testing.T, bin string) *jaeger {
	t.Helper()
	otlp, query, grpc := freeAddr(t), freeAddr(t), freeAddr(t)
	conf := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, jaegerConfig, query, grpc, otlp), 0o600); err != nil {
		t.Fatal(err)
	}
	j := &jaeger{otlp: "http://" + otlp, query: "http://" + query}
	cmd := exec.Command(bin, "--config", "file:"+conf)
	cmd.Stdout, cmd.Stderr = &j.out, &j.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("jaeger: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("jaeger:\n%s", j.out.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(j.query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		select {
		case <-done:
			t.Fatalf("jaeger exited:\n%s", j.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger's query API not up within 60s (%v):\n%s", err, j.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jaegerSpan is a span as Jaeger's HTTP API gives it.
type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	ProcessID     string `json:"processID"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	service string
}

func (s *jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// String is how a span shows in a path: service/name(kind).
func (s *jaegerSpan) String() string {
	return fmt.Sprintf("%s/%s(%s)", s.service, s.OperationName, s.tag("span.kind"))
}

// jaegerTrace fetches trace id from Jaeger: its spans by id, nil while
// Jaeger has none of it.
func (j *jaeger) trace(t *testing.T, id string) map[string]*jaegerSpan {
	t.Helper()
	resp, err := http.Get(j.query + "/api/traces/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var body struct {
		Data []struct {
			Spans     []*jaegerSpan `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /api/traces/%s: %s: %v", id, resp.Status, err)
	}
	spans := make(map[string]*jaegerSpan)
	for _, d := range body.Data {
		for _, s := range d.Spans {
			s.service = d.Processes[s.ProcessID].ServiceName
			spans[s.SpanID] = s
		}
	}
	return spans
}

// path returns the span of service and name (and kind) in spans, and its
// ancestors up to the trace's root, root first, following parents
// (CHILD_OF) or, for a span without one, a link (FOLLOWS_FROM) within the
// trace.
func path(spans map[string]*jaegerSpan, service, name, kind string) []*jaegerSpan {
	var s *jaegerSpan
	for _, c := range spans {
		if c.service == service && c.OperationName == name && c.tag("span.kind") == kind {
			s = c
		}
	}
	var p []*jaegerSpan
	for s != nil && len(p) <= len(spans) {
		p = append(p, s)
		var up *jaegerSpan
		for _, ref := range s.References {
			if r := spans[ref.SpanID]; r != nil && (up == nil || ref.RefType == "CHILD_OF") {
				up = r
			}
		}
		s = up
	}
	slices.Reverse(p)
	return p
}

// services lists the services of a path's spans, each run of one service
// once: the hops the trace made.
func services(p []*jaegerSpan) []string {
	var hops []string
	for _, s := range p {
		if len(hops) == 0 || hops[len(hops)-1] != s.service {
			hops = append(hops, s.service)
		}
	}
	return hops
}

// TestJaegerTraces is issue 33's end-to-end check, against a real
// collector: Jaeger v1.76.0's all-in-one receives the traces of the demo
// run as three nodes on NATS with -otlp, and of pages in node running the
// real jsonrpc.js with its tracing hook on the OpenTelemetry SDK
// (e2e/otel-page.mjs). It queries Jaeger's HTTP API and finds one trace
// for each path, its spans in the right services with parent/child (or
// link) relations:
//
//   - a cross-node call: alice's page → board.nudge on node 1 → its
//     cluster call page.nudge → NATS → node 2 serving it → page.nudge on
//     bob's page;
//   - a topic publish: alice's page → board.post on node 1 → its publish
//     on the topic "board" (to JetStream) → the topic's process span on
//     node 3 → the topic.message carol's page gets there.
//
// .ci/run builds Jaeger (.ci/jaeger) and sets JAEGER_BIN; with it set the
// test fails, never skips, when anything it needs is missing. Without it,
// it skips with a message.
func TestJaegerTraces(t *testing.T) {
	bin := os.Getenv("JAEGER_BIN")
	if bin == "" {
		t.Skip("JAEGER_BIN is not set: build Jaeger with GOWORK=off go -C .ci/jaeger build -o /tmp/jaeger github.com/jaegertracing/jaeger/cmd/jaeger and set JAEGER_BIN=/tmp/jaeger")
	}
	for _, need := range []string{bin,
		filepath.Join("e2e", "node_modules", "@opentelemetry", "exporter-trace-otlp-http", "package.json"),
		filepath.Join("..", "..", "browser", "test", "node_modules", "@opentelemetry", "api", "package.json")} {
		if _, err := os.Stat(need); err != nil {
			t.Fatalf("JAEGER_BIN is set but %v: run npm ci in examples/realtime/e2e and browser/test", err)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("JAEGER_BIN is set but node is not installed: %v", err)
	}
	j := startJaeger(t, bin)
	demo := buildDemo(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100") // the nodes' spans reach Jaeger within 0.1 s
	nats := freeAddr(t)
	nodes := []*node{startNode(t, demo, "n1", "-nats-embed", "-nats-addr", nats, "-otlp", j.otlp, "-otlp-service", "realtime-1")}
	for i := 2; i <= 3; i++ {
		nodes = append(nodes, startNode(t, demo, fmt.Sprint("n", i), "-nats", "nats://"+nats, "-otlp", j.otlp, "-otlp-service", fmt.Sprint("realtime-", i)))
	}

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--experimental-websocket", "otel-page.mjs", j.otlp, nodes[0].url, nodes[1].url, nodes[2].url)
	cmd.Dir = "e2e"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr testbin.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("otel-page.mjs: %v\n%s%s", err, out, stderr.String())
	}
	var ids struct{ Nudge, Post string }
	if err := json.Unmarshal(out, &ids); err != nil || ids.Nudge == "" || ids.Post == "" {
		t.Fatalf("otel-page.mjs printed %q: %v\n%s", out, err, stderr.String())
	}

	for _, want := range []struct {
		what, id string
		end      [3]string // service, name, kind of the last span of the path
		hops     []string  // the services the path goes through, in order
		ops      []string  // service/name(kind) spans the path must hold
	}{
		{"the cross-node call", ids.Nudge, [3]string{"realtime-page", "page.nudge", "server"},
			[]string{"realtime-page", "realtime-1", "realtime-2", "realtime-page"},
			[]string{"realtime-page/board.nudge(client)", "realtime-1/board.nudge(server)", "realtime-1/page.nudge(client)",
				"realtime-2/page.nudge(server)", "realtime-2/page.nudge(client)"}},
		{"the topic publish", ids.Post, [3]string{"realtime-page", "topic.message", "server"},
			[]string{"realtime-page", "realtime-1", "realtime-3", "realtime-page"},
			[]string{"realtime-page/board.post(client)", "realtime-1/board.post(server)", "realtime-1/publish board(producer)",
				"realtime-3/process board(consumer)"}},
	} {
		var p []*jaegerSpan
		var spans map[string]*jaegerSpan
		deadline := time.Now().Add(30 * time.Second)
		for {
			spans = j.trace(t, want.id)
			p = path(spans, want.end[0], want.end[1], want.end[2])
			if slices.Equal(services(p), want.hops) || time.Now().After(deadline) {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		var all []string
		for _, s := range spans {
			all = append(all, s.String())
		}
		slices.Sort(all)
		if !slices.Equal(services(p), want.hops) {
			t.Errorf("%s: trace %s in Jaeger goes %v (%v), want through %v; its spans: %s",
				want.what, want.id, services(p), p, want.hops, strings.Join(all, ", "))
			continue
		}
		var got []string
		for _, s := range p {
			got = append(got, s.String())
		}
		for _, op := range want.ops {
			if !slices.Contains(got, op) {
				t.Errorf("%s: the path %v lacks %s", want.what, got, op)
			}
		}
		t.Logf("%s: trace %s: %s", want.what, want.id, strings.Join(got, " → "))
	}
}
