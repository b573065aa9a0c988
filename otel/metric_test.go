package otel_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// histograms collects the rig's duration histograms: by metric name, the
// count of each attribute set (as its text).
func (r *rig) histograms(t *testing.T) (map[string]map[string]uint64, map[string]metricdata.Metrics) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]map[string]uint64{}
	found := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				continue
			}
			found[m.Name] = m
			counts[m.Name] = map[string]uint64{}
			for _, dp := range h.DataPoints {
				var kv []string
				for _, a := range dp.Attributes.ToSlice() {
					kv = append(kv, string(a.Key)+"="+a.Value.String())
				}
				counts[m.Name][fmtSet(kv)] += dp.Count
			}
		}
	}
	return counts, found
}

func fmtSet(kv []string) string {
	slices.Sort(kv)
	out := ""
	for i, s := range kv {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}

// TestDurationMetrics pins rpc.client.call.duration and
// rpc.server.call.duration: seconds, the advised bucket boundaries, one
// point per call by rpc.system.name and rpc.method, error.type and
// rpc.response.status_code on failure, and no method off the allow-list.
func TestDurationMetrics(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{Methods: []string{"add", "fail"}}, jsonrpc.Options{})
	ctx := context.Background()
	for range 3 {
		if err := client.Call(ctx, "add", [2]int{1, 2}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Call(ctx, "fail", map[string]string{"kind": "invalid"}, nil); err == nil {
		t.Fatal("fail succeeded")
	}
	if err := client.Call(ctx, "echo", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
	r.waitSpans(t, 10) // the server records its point before its span ends
	counts, found := r.histograms(t)
	want := map[string]uint64{
		"rpc.method=add rpc.system.name=jsonrpc":                                                    3,
		"error.type=-32602 rpc.method=fail rpc.response.status_code=-32602 rpc.system.name=jsonrpc": 1,
		"rpc.method=_OTHER rpc.system.name=jsonrpc":                                                 1,
	}
	bounds := []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	for _, name := range []string{"rpc.client.call.duration", "rpc.server.call.duration"} {
		if !maps.Equal(counts[name], want) {
			t.Errorf("%s: %v, want %v", name, counts[name], want)
		}
		m := found[name]
		if m.Unit != "s" {
			t.Errorf("%s: unit %q, want s", name, m.Unit)
		}
		for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			if !slices.Equal(dp.Bounds, bounds) {
				t.Errorf("%s: bounds %v, want %v", name, dp.Bounds, bounds)
			}
		}
	}
}
