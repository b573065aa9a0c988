package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	jotel "github.com/peerwire/jsonrpc/otel"
	"github.com/peerwire/jsonrpc/topic"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otlpConfig is what the -otlp flags say.
type otlpConfig struct {
	// Endpoint is the OTLP/HTTP base URL the traces go to (its path gets
	// /v1/traces, as OTEL_EXPORTER_OTLP_ENDPOINT's does), or "": then
	// the environment decides (see telemetryOn).
	Endpoint string
	// Service is service.name; "" takes OTEL_SERVICE_NAME, else "realtime".
	Service string
}

// flushTimeout bounds the export of what is left at shutdown.
const flushTimeout = 5 * time.Second

// methods are the names the demo's spans and metrics record as
// rpc.method: what its pages call, what it calls and sends to them, and
// the topic protocol's. Any other is _OTHER (a page chooses what it sends).
var methods = []string{
	"board.list", "board.stats", "board.post", "board.like", "board.clear", "board.nudge",
	"board.posted", "board.liked", "board.cleared", "page.confirm", "page.nudge",
	"topic.subscribe", "topic.unsubscribe", "topic.members", "topic.message", "topic.kicked", "topic.presence",
	"rpc.discover",
}

// telemetry is the node's OpenTelemetry: nil when it is off, which costs
// the node nothing.
type telemetry struct {
	tel *jotel.Telemetry
	tp  *sdktrace.TracerProvider
}

// telemetryOn reports whether traces are exported: with -otlp, or with
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set,
// unless OTEL_SDK_DISABLED is true.
func telemetryOn(cfg otlpConfig) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return cfg.Endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// startTelemetry installs the OpenTelemetry SDK with an OTLP/HTTP trace
// exporter, as the global tracer provider and W3C propagator, for the
// node serving at addr (service.instance.id), when telemetryOn; else it
// returns nil. The exporter takes the other OTEL_EXPORTER_OTLP_*
// variables (headers, timeout, compression, certificates), the SDK
// OTEL_TRACES_SAMPLER and OTEL_BSP_*, the resource OTEL_RESOURCE_ATTRIBUTES.
func startTelemetry(cfg otlpConfig, addr string) (*telemetry, error) {
	if !telemetryOn(cfg) {
		return nil, nil
	}
	var opts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("realtime demo: -otlp %q: want the collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318", cfg.Endpoint)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("realtime demo: cannot make the OTLP exporter: %w", err)
	}
	service := cfg.Service
	if service == "" {
		service = os.Getenv("OTEL_SERVICE_NAME")
	}
	if service == "" {
		service = "realtime"
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", service), attribute.String("service.instance.id", addr)))
	if err != nil {
		return nil, fmt.Errorf("realtime demo: the telemetry resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	tel, err := jotel.New(jotel.Options{TracerProvider: tp, Methods: methods, Topics: []string{boardTopic},
		// The pages are this demo's own: their calls join their traces
		// (page -> node -> NATS -> node -> page, TestJaegerTraces). An
		// endpoint that anyone can call leaves RemoteParent unset.
		TraceContext: jotel.MCPTraceContext, RemoteParent: true})
	if err != nil {
		tp.Shutdown(context.Background())
		return nil, err
	}
	return &telemetry{tel: tel, tp: tp}, nil
}

// peerOptions adds the telemetry to the options of the pages' Peers: the
// interceptor first (the others run in its span), state metrics as they
// connect.
func (t *telemetry) peerOptions(o jsonrpc.Options) jsonrpc.Options {
	if t == nil {
		return o
	}
	o.Interceptors = append([]jsonrpc.Interceptor{t.tel.Interceptor()}, o.Interceptors...)
	o.OnConnect = t.tel.Observe
	return o
}

// clusterHook is the hook of the node's cluster.Node and HistoryStore:
// spans of the broadcasts, calls and history across NATS, with the trace
// context in the NATS headers. nil when off.
func (t *telemetry) clusterHook() cluster.Hook {
	if t == nil {
		return nil
	}
	return t.tel.ClusterHook()
}

// topicHook is the hook of the topic "board"'s Hub: a span of each
// publish and of each delivery, which carries the trace to the pages.
// nil when off.
func (t *telemetry) topicHook() topic.Hook {
	if t == nil {
		return nil
	}
	return t.tel.TopicHook()
}

// shutdown exports what is left, within flushTimeout.
func (t *telemetry) shutdown() error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("realtime demo: the last traces not exported within %v: %w", flushTimeout, err)
	}
	return nil
}
