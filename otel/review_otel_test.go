package otel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"github.com/peerwire/jsonrpc/topic"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// hostilePair returns a Peer with the rig's Telemetry (o) and a remote
// Peer serving h with no telemetry, over a Pipe; both closed at cleanup.
func (r *rig) hostilePair(t *testing.T, o otel.Options, h jsonrpc.Handler) (local *jsonrpc.Peer) {
	t.Helper()
	a, b := jsonrpc.Pipe()
	local = jsonrpc.NewPeer(a, jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{r.telemetry(t, o).Interceptor()}})
	remote := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: h})
	t.Cleanup(func() {
		local.Close()
		remote.Close()
		local.Wait()
		remote.Wait()
	})
	return local
}

// TestClientDurationErrorTypeBoundedAgainstRemoteCodes: the remote side
// chooses the error codes it answers with; rpc.client.call.duration's
// error.type and rpc.response.status_code must stay a bounded set, or one
// hostile remote (a page a server calls back into, a server a client
// calls) makes a metric series per code it invents.
func TestClientDurationErrorTypeBoundedAgainstRemoteCodes(t *testing.T) {
	r := newRig(t)
	mux := jsonrpc.NewMux()
	var n int64
	mux.HandleFunc("m", func(context.Context, *jsonrpc.Request) (any, error) {
		n++ // served one at a time: the caller waits for each reply
		return nil, jsonrpc.NewError(1_000_000+n, "chosen by the remote", nil)
	})
	local := r.hostilePair(t, otel.Options{Methods: []string{"m"}}, mux)
	const calls = 50
	for i := 0; i < calls; i++ {
		if err := local.Call(context.Background(), "m", nil, nil); err == nil {
			t.Fatal("the call succeeded, want the remote's error")
		}
	}
	counts, _ := r.histograms(t)
	series := counts["rpc.client.call.duration"]
	// The codes the JSON-RPC spec and the library define, and _OTHER: a
	// fixed set, whatever the remote sends.
	const bound = 12
	if len(series) > bound {
		t.Errorf("rpc.client.call.duration has %d series after %d failed calls whose codes the remote chose (want at most %d); e.g. %v",
			len(series), calls, bound, firstKeys(series, 2))
	}
}

func firstKeys(m map[string]uint64, n int) []string {
	var out []string
	for k := range m {
		if len(out) == n {
			break
		}
		out = append(out, k)
	}
	return out
}

// TestClientSpanStatusBoundedAgainstRemoteError: the remote side chooses
// its error's message and data; the CLIENT span's status description is
// err.Error(), kept whole. The SDK's SpanLimits do not apply to a status
// description, so only the module can bound it.
func TestClientSpanStatusBoundedAgainstRemoteError(t *testing.T) {
	r := newRig(t)
	big := strings.Repeat("x", 256<<10)
	mux := jsonrpc.NewMux()
	mux.HandleFunc("m", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(-32000, big, big)
	})
	local := r.hostilePair(t, otel.Options{Methods: []string{"m"}}, mux)
	if err := local.Call(context.Background(), "m", nil, nil); err == nil {
		t.Fatal("the call succeeded, want the remote's error")
	}
	spans := r.waitSpans(t, 1)
	const bound = 4 << 10
	if d := spans[0].Status().Description; len(d) > bound {
		t.Errorf("the CLIENT span keeps a status description of %d bytes the remote chose (want at most %d)", len(d), bound)
	}
}

// TestServerSpanAttributesBoundedAgainstHostileMethodAndID: a remote sends
// a call whose method and string id are 200 KB each; the SERVER span keeps
// rpc.method_original and jsonrpc.request.id whole (the SDK's default
// SpanLimits leave attribute values unlimited), so every span queued for
// export retains what the client chose.
func TestServerSpanAttributesBoundedAgainstHostileMethodAndID(t *testing.T) {
	r := newRig(t)
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(b, jsonrpc.Options{
		Handler:      jsonrpc.NewMux(),
		Interceptors: []jsonrpc.Interceptor{r.telemetry(t, otel.Options{}).Interceptor()},
	})
	defer func() {
		a.Close()
		server.Close()
		server.Wait()
	}()
	big := strings.Repeat("m", 200<<10)
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","method":"%s"}`, big, big)
	if err := a.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(); err != nil { // the Method not found reply
		t.Fatal(err)
	}
	spans := r.waitSpans(t, 1)
	got := attrs(spans[0].Attributes())
	const bound = 4 << 10
	retained := len(got["rpc.method_original"]) + len(got["jsonrpc.request.id"])
	if len(got["rpc.method_original"]) > bound || len(got["jsonrpc.request.id"]) > bound {
		t.Errorf("the SERVER span retains %d bytes of client-chosen attributes (rpc.method_original %d, jsonrpc.request.id %d; want each at most %d)",
			retained, len(got["rpc.method_original"]), len(got["jsonrpc.request.id"]), bound)
	}
}

// TestForgedTraceparentCannotForceSampling: with MCPTraceContext, a remote
// that sends a traceparent with the sampled flag makes the server's span
// sampled and a child of the trace it chose, even when the server's
// sampler samples nothing of its own (ParentBased(NeverSample), the
// ratio samplers' usual wrapper). Nothing in the module lets a server
// treat the remote's context as a link rather than a parent, nor do its
// docs say that a client decides the sampling of what it calls.
func TestForgedTraceparentCannotForceSampling(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	defer tp.Shutdown(context.Background())
	tel, err := otel.New(otel.Options{TracerProvider: tp, TraceContext: otel.MCPTraceContext, Methods: []string{"echo"}})
	if err != nil {
		t.Fatal(err)
	}
	const forged = "4bf92f3577b34da6a3ce929d0e0e4736"
	mux := jsonrpc.NewMux()
	mux.HandleFunc("echo", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		sc := trace.SpanContextFromContext(ctx)
		return sc.TraceID().String() == forged && sc.IsSampled(), nil
	})
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux, Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}})
	client := jsonrpc.NewPeer(a)
	defer func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}()
	const calls = 20
	inForged := 0
	for i := 0; i < calls; i++ {
		params := map[string]any{"_meta": map[string]string{"traceparent": "00-" + forged + "-00f067aa0ba902b7-01"}}
		var sampled bool
		if err := client.Call(context.Background(), "echo", params, &sampled); err != nil {
			t.Fatal(err)
		}
		if sampled {
			inForged++
		}
	}
	if inForged > 0 {
		t.Errorf("%d of %d calls ran their handler in a sampled span of the trace the client chose (%s), with a sampler that samples nothing of its own (%d spans recorded for export)",
			inForged, calls, forged, len(rec.Ended()))
	}
}

// TestInjectKeepsParamsBytes: injecting the trace context into params
// whose _meta exists (MCP's progressToken) must change only _meta; today
// the whole object is decoded into a map and marshalled again, so its
// members come out sorted, '<' '>' '&' HTML-escaped and repeated keys
// collapsed to their last value.
func TestInjectKeepsParamsBytes(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{TraceContext: otel.MCPTraceContext, Methods: []string{"echo"}}, jsonrpc.Options{})
	ctx, root := r.tp.Tracer("test").Start(context.Background(), "root")
	defer root.End()
	params := json.RawMessage(`{"z":"<a&b>","a":1,"_meta":{"progressToken":"t"}}`)
	var echoed json.RawMessage
	if err := client.Call(ctx, "echo", params, &echoed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(echoed), `"z":"<a&b>","a":1`) {
		t.Errorf("params as served: %s; want the members other than _meta as sent: %s", echoed, `"z":"<a&b>","a":1`)
	}
}

// TestObserveAfterEndCountsSlowConsumerOnce: "Observing a Peer twice
// counts it once": a Peer that a Group dropped (ErrSlowConsumer), observed
// twice after it ended, adds one to peerwire.jsonrpc.slow_consumers.
func TestObserveAfterEndCountsSlowConsumerOnce(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	a, b := jsonrpc.Pipe()
	defer b.Close()
	slow := jsonrpc.NewPeer(a)
	dropAsSlow(t, slow)
	tel.Observe(slow)
	r.waitState(t, "the first count", func(s map[string]float64) bool { return s["peerwire.jsonrpc.slow_consumers"] >= 1 })
	tel.Observe(slow)
	// The second end hook runs on a goroutine of its own: give it 2 s to
	// count wrongly (bounded; a correct Observe waits them out).
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r.state(t)["peerwire.jsonrpc.slow_consumers"] > 1 {
			break
		}
	}
	if s := r.state(t); s["peerwire.jsonrpc.slow_consumers"] != 1 {
		t.Errorf("slow_consumers = %v after observing one ended Peer twice, want 1", s["peerwire.jsonrpc.slow_consumers"])
	}
}

// TestNoopExtractSkipsParamsWithEscapes: with no-op providers and
// MCPTraceContext, the Interceptor "decodes no params that hold no
// traceparent" (TestNoopAllocations); but any backslash in the params (a
// "\n" in a tool's text argument, a Windows path) makes it decode the
// whole params into a map on every served call, a cost that grows with
// the params a client sends.
func TestNoopExtractSkipsParamsWithEscapes(t *testing.T) {
	o := otel.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider(), TraceContext: otel.MCPTraceContext}
	tel, err := otel.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ic := tel.Interceptor()
	next := func(context.Context) (any, error) { return nil, nil }
	var b strings.Builder
	b.WriteString(`{"text":"line 1\nline 2"`)
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, `,"k%d":%d`, i, i)
	}
	b.WriteString(`}`)
	for _, params := range []string{`{"name":"x","arguments":{"text":"line 1\nline 2"}}`, b.String()} {
		info := &jsonrpc.CallInfo{Method: "tools/call", ID: jsonrpc.Int64ID(1), Params: json.RawMessage(params)}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := ic(context.Background(), info, next); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("params of %d bytes with no traceparent and one escape: %v allocations a served call, want 0", len(params), allocs)
		}
	}
}

// TestClientSpanForCallsThatFailBeforeSending: a call whose ctx has ended
// before it is sent has its CLIENT span, with error.type
// "context.Canceled"; one whose params cannot be marshalled fails before
// the interceptors run and has none, as the package doc says ("A CLIENT
// span covers a call from the moment its params are marshalled"). The
// review found the second undocumented; the doc now states it, and this
// test holds both halves.
func TestClientSpanForCallsThatFailBeforeSending(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{Methods: []string{"add"}}, jsonrpc.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errCtx := client.Call(ctx, "add", []int{1, 2}, nil)
	errParams := client.Call(context.Background(), "add", make(chan int), nil)
	if errCtx == nil || errParams == nil {
		t.Fatalf("calls succeeded: %v, %v", errCtx, errParams)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(r.spans.Ended()) < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a second span, were there one, would have ended by now
	var kinds []string
	for _, s := range r.spans.Ended() {
		if s.SpanKind() == trace.SpanKindClient {
			kinds = append(kinds, attrs(s.Attributes())["error.type"])
		}
	}
	if len(kinds) != 1 || kinds[0] != "context.Canceled" {
		t.Errorf("CLIENT spans of a call with an ended ctx and one with params that cannot be marshalled: error.type %q; want one, context.Canceled", kinds)
	}
}

// TestRemoteTraceStateNotRelayedToSubscribers: with MCPTraceContext, a
// client's call carries a tracestate of its choosing (32 members of 256
// bytes each parse as valid); the handler publishes to a topic, and every
// subscriber's topic.message carries that tracestate in _meta, in
// addition to the data the Hub bounds: bytes one client chose, fanned out
// to every other client with each publish.
func TestRemoteTraceStateNotRelayedToSubscribers(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{TraceContext: otel.MCPTraceContext, Methods: []string{"post"}})
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: tel.TopicHook()}
	defer hub.Close()
	sub := subscriber(t, hub, "board")
	mux := jsonrpc.NewMux()
	mux.HandleFunc("post", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		_, err := hub.Publish(ctx, "board", 1)
		return nil, err
	})
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux, Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}})
	client := jsonrpc.NewPeer(a)
	defer func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}()
	var members []string
	for i := 0; i < 32; i++ {
		members = append(members, fmt.Sprintf("k%02d%s=%s", i, strings.Repeat("k", 252), strings.Repeat("v", 256)))
	}
	chosen := strings.Join(members, ",")
	params := map[string]any{"_meta": map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":  chosen,
	}}
	if err := client.Call(context.Background(), "post", params, nil); err != nil {
		t.Fatal(err)
	}
	m := receive(t, sub)
	var p struct {
		Meta struct {
			Tracestate string `json:"tracestate"`
		} `json:"_meta"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(m, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Meta.Tracestate) > 0 {
		t.Errorf("a subscriber's topic.message of %d bytes (data %s) carries %d bytes of tracestate a client chose (sent %d)", len(m), p.Data, len(p.Meta.Tracestate), len(chosen))
	}
}

// TestServerDurationErrorTypeBoundedAgainstForwardedCodes: a handler that
// forwards the error a remote answered its own call with
// (jsonrpc.Forward, as the core documents for a proxy) answers with that
// remote's code, and rpc.server.call.duration takes it as error.type: a
// hostile client that the handler calls back makes a server series per
// code it invents.
func TestServerDurationErrorTypeBoundedAgainstForwardedCodes(t *testing.T) {
	r := newRig(t)
	var n int64
	hostile := jsonrpc.NewMux()
	hostile.HandleFunc("ask", func(context.Context, *jsonrpc.Request) (any, error) {
		n++ // one at a time: each relay call waits for its ask
		return nil, jsonrpc.NewError(2_000_000+n, "chosen by the client", nil)
	})
	mux := jsonrpc.NewMux()
	mux.HandleFunc("relay", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.Forward(jsonrpc.PeerFromContext(ctx).Call(ctx, "ask", nil, nil))
	})
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux, Interceptors: []jsonrpc.Interceptor{r.telemetry(t, otel.Options{Methods: []string{"relay", "ask"}}).Interceptor()}})
	client := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: hostile})
	defer func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}()
	const calls = 50
	for i := 0; i < calls; i++ {
		if err := client.Call(context.Background(), "relay", nil, nil); err == nil {
			t.Fatal("relay succeeded, want the forwarded error")
		}
	}
	counts, _ := r.histograms(t)
	const bound = 12
	if s := counts["rpc.server.call.duration"]; len(s) > bound {
		t.Errorf("rpc.server.call.duration has %d series after %d relayed failures whose codes the client chose (want at most %d); rpc.client.call.duration %d",
			len(s), calls, bound, len(counts["rpc.client.call.duration"]))
	}
}

// TestRemoteCodesDoNotPushOtherSeriesIntoOverflow: the SDK's default
// cardinality limit (2,000 attribute sets an instrument) is what bounds
// the series of TestClientDurationErrorTypeBoundedAgainstRemoteCodes; a
// remote that answers 2,000 calls with invented codes fills it, and a
// later call of another method, succeeding, is recorded only under the
// SDK's overflow set (otel.metric.overflow=true): its series is lost.
func TestRemoteCodesDoNotPushOtherSeriesIntoOverflow(t *testing.T) {
	r := newRig(t)
	mux := jsonrpc.NewMux()
	var n int64
	mux.HandleFunc("m", func(context.Context, *jsonrpc.Request) (any, error) {
		n++
		return nil, jsonrpc.NewError(3_000_000+n, "chosen by the remote", nil)
	})
	mux.HandleFunc("ok", func(context.Context, *jsonrpc.Request) (any, error) { return 1, nil })
	local := r.hostilePair(t, otel.Options{Methods: []string{"m", "ok"}}, mux)
	const calls = 2000
	for i := 0; i < calls; i++ {
		if err := local.Call(context.Background(), "m", nil, nil); err == nil {
			t.Fatal("the call succeeded, want the remote's error")
		}
	}
	if err := local.Call(context.Background(), "ok", nil, nil); err != nil {
		t.Fatal(err)
	}
	counts, _ := r.histograms(t)
	series := counts["rpc.client.call.duration"]
	if series["rpc.method=ok rpc.system.name=jsonrpc"] != 1 {
		t.Errorf("after %d failures with codes the remote chose (%d series), the successful call of ok has no series of its own (overflow count %d)",
			calls, len(series), series["otel.metric.overflow=true"])
	}
}

// TestObserveTopicsTwiceCountsOnce: Observe counts a Peer observed twice
// once; ObserveTopics (and ObserveSessions, ObserveWebSockets) append the
// counter each time, with no way to stop observing: a Hub observed twice
// doubles peerwire.jsonrpc.topics, and a closed Hub stays reachable from
// the Telemetry for its life.
func TestObserveTopicsTwiceCountsOnce(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	hub := &topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	subscriber(t, hub, "board") // one topic open
	tel.ObserveTopics(hub)
	tel.ObserveTopics(hub)
	s := r.waitState(t, "a topic open", func(s map[string]float64) bool { return s["peerwire.jsonrpc.topics"] >= 1 })
	if got, want := s["peerwire.jsonrpc.topics"], float64(hub.Topics()); got != want {
		t.Errorf("peerwire.jsonrpc.topics = %v for one Hub observed twice holding %v topics", got, want)
	}
}
