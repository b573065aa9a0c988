package otel_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
	"github.com/peerwire/jsonrpc/otel"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// state collects the rig's state metrics: by name, the value summed over
// its points.
func (r *rig) state(t *testing.T) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					out[m.Name] += float64(dp.Value)
				}
			case metricdata.Sum[float64]:
				for _, dp := range d.DataPoints {
					out[m.Name] += dp.Value
				}
			}
		}
	}
	return out
}

// waitState collects (bounded: 10 s) until ok holds.
func (r *rig) waitState(t *testing.T, what string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := r.state(t)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s: %v", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStateMetrics pins the state metrics of observed Peers: connections,
// budgets, bytes queued, handlers active and parked, calls pending, and the
// push-back time; an ended Peer leaves connections and keeps its push-back.
func TestStateMetrics(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	release := make(chan struct{})
	mux := jsonrpc.NewMux()
	mux.HandleFunc("hold", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		<-release
		return nil, nil
	})
	a, b := jsonrpc.Pipe()
	client := jsonrpc.NewPeer(a, jsonrpc.Options{OnConnect: tel.Observe})
	server := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux, MaxQueuedBytes: 4096, OnConnect: tel.Observe})
	released := false
	defer func() {
		if !released {
			close(release)
		}
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}()
	errc := make(chan error, 1)
	go func() { errc <- client.Call(context.Background(), "hold", nil, nil) }()
	s := r.waitState(t, "a call held", func(s map[string]float64) bool {
		return s["peerwire.jsonrpc.handlers.active"] == 1 && s["peerwire.jsonrpc.calls.pending"] == 1
	})
	want := map[string]float64{
		"peerwire.jsonrpc.connections":     2,
		"peerwire.jsonrpc.inbound.limit":   4096 + 4<<20,
		"peerwire.jsonrpc.outbound.limit":  2 * 4 << 20,
		"peerwire.jsonrpc.handlers.parked": 0,
	}
	for k, v := range want {
		if s[k] != v {
			t.Errorf("%s = %v, want %v", k, s[k], v)
		}
	}
	if s["peerwire.jsonrpc.inbound.queued"] <= 0 {
		t.Errorf("inbound.queued %v, want the held call's bytes", s["peerwire.jsonrpc.inbound.queued"])
	}
	// Notifications over the server's budget: its read loop pushes back,
	// and the client's writes wait (bounded by nctx).
	nctx, ncancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ncancel()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range 8 {
			if client.Notify(nctx, "hold", []string{string(make([]byte, 1024))}) != nil {
				return
			}
		}
	}()
	defer func() { <-sent }()
	r.waitState(t, "pushing back", func(s map[string]float64) bool { return s["peerwire.jsonrpc.push_back.duration"] > 0 })
	close(release)
	released = true
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	server.Close()
	server.Wait()
	// Closing one end of a Pipe ends both.
	s = r.waitState(t, "both gone", func(s map[string]float64) bool { return s["peerwire.jsonrpc.connections"] == 0 })
	if s["peerwire.jsonrpc.push_back.duration"] <= 0 || s["peerwire.jsonrpc.inbound.limit"] != 0 {
		t.Errorf("after both ended: %v, want push_back.duration kept and no limits", s)
	}
}

// TestSessionsMetric: the sessions of an observed SessionServer.
func TestSessionsMetric(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	mux := jsonrpc.NewMux()
	mux.HandleFunc("initialize", func(context.Context, *jsonrpc.Request) (any, error) { return "ok", nil })
	srv := &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: mux}}
	tel.ObserveSessions(srv)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	p, err := httprpc.Dial(context.Background(), hs.URL, httprpc.DialOptions{HTTPClient: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	defer p.Close()
	if err := p.Call(context.Background(), "initialize", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	r.waitState(t, "one session", func(s map[string]float64) bool { return s["peerwire.jsonrpc.sessions"] == 1 })
}

// TestCloseUnregistersState: after Close, a Telemetry's state metrics are
// no longer collected, and a second Telemetry on the same MeterProvider
// reports its own Peers only (two Telemetry on one provider summed their
// Peers, with no way to stop one, before Close existed: the newcomer's
// client and server in one process read connections = 2).
func TestCloseUnregistersState(t *testing.T) {
	r := newRig(t)
	first := r.telemetry(t, otel.Options{})
	a, b := jsonrpc.Pipe()
	pa, pb := jsonrpc.NewPeer(a), jsonrpc.NewPeer(b)
	defer func() {
		pa.Close()
		pb.Close()
		pa.Wait()
		pb.Wait()
	}()
	first.Observe(pa)
	r.waitState(t, "one connection observed", func(s map[string]float64) bool { return s["peerwire.jsonrpc.connections"] == 1 })
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	second := r.telemetry(t, otel.Options{})
	defer second.Close()
	second.Observe(pb)
	if s := r.state(t); s["peerwire.jsonrpc.connections"] != 1 {
		t.Errorf("connections = %v after the first Telemetry closed and the second observed one Peer, want 1", s["peerwire.jsonrpc.connections"])
	}
}
