// Pages of the realtime demo in node, traced: the real jsonrpc.js with its
// tracing hook (browser/README.md's adapter, browser/test/otel-tracing.mjs)
// on the OpenTelemetry SDK, exporting over OTLP/HTTP. TestJaegerTraces
// runs it against three nodes and a Jaeger:
//
//   node --experimental-websocket otel-page.mjs OTLP_URL NODE1 NODE2 NODE3
//
// alice (NODE1) nudges bob (NODE2): board.nudge, page.nudge through NATS;
// carol (NODE3) follows the topic "board" while alice posts a note. It
// prints one line of JSON, {"nudge": TRACE_ID, "post": TRACE_ID}: the
// traces of alice's board.nudge and board.post calls, once the spans are
// exported. Exits 1 on a failure, 3 past its hard timeout.
import { context, propagation, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Client, RPCError } from '../../../browser/jsonrpc.js';
import { otelTracing } from '../../../browser/test/otel-tracing.mjs';

const [otlp, ...nodes] = process.argv.slice(2);
if (!otlp || nodes.length !== 3) {
  console.error('usage: node --experimental-websocket otel-page.mjs OTLP_URL NODE1 NODE2 NODE3');
  process.exit(2);
}
const HARD_TIMEOUT_MS = 60_000;
setTimeout(() => {
  console.error(`FAIL: the run took over ${HARD_TIMEOUT_MS / 1000}s`);
  process.exit(3);
}, HARD_TIMEOUT_MS).unref();

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const seen = new InMemorySpanExporter(); // which trace each call's span is in
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'realtime-page' }),
  spanProcessors: [
    new BatchSpanProcessor(new OTLPTraceExporter({ url: `${otlp.replace(/\/$/, '')}/v1/traces` }), { scheduledDelayMillis: 200 }),
    new SimpleSpanProcessor(seen),
  ],
});
const tracing = otelTracing(provider.getTracer('otel-page'));

// page signs in as name on the node at base and connects, traced.
async function page(base, name) {
  const resp = await fetch(new URL('login', base), {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }),
  });
  if (!resp.ok) throw new Error(`login ${name} at ${base}: ${resp.status}`);
  const cookie = resp.headers.get('set-cookie').split(';')[0];
  const origin = new URL(base).origin;
  // A browser sends the session cookie and its Origin with the upgrade.
  class PageSocket extends WebSocket {
    constructor(url) { super(url, { headers: { cookie, origin } }); }
  }
  const url = new URL('rpc', base);
  url.protocol = 'ws:';
  const rpc = new Client(url.href, { WebSocket: PageSocket, tracing, reconnect: false, timeout: 10_000 });
  await rpc.start();
  return rpc;
}

// traceOf is the trace of the CLIENT span of method that ended without
// an error, the last one.
function traceOf(method) {
  const s = seen.getFinishedSpans().filter((x) => x.name === method && x.kind === SpanKind.CLIENT && x.status.code !== SpanStatusCode.ERROR).at(-1);
  if (!s) throw new Error(`no successful ${method} span`);
  return s.spanContext().traceId;
}

// retry calls fn until it succeeds, for at most ms, while it fails with
// code (what a cluster not yet settled answers).
async function retry(fn, code, ms) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof RPCError) || e.code !== code || Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

const clients = [];
try {
  const alice = await page(nodes[0], 'alice');
  const bob = await page(nodes[1], 'bob');
  const carol = await page(nodes[2], 'carol');
  clients.push(alice, bob, carol);

  const nudged = new Promise((resolve) => bob.handle('page.nudge', ({ from }) => { resolve(from); return true; }));
  const nudge = await retry(() => alice.call('board.nudge', { to: 'bob' }), -32014, 20_000);
  if (!nudge.seen || (await nudged) !== 'alice') throw new Error(`board.nudge: ${JSON.stringify(nudge)}`);

  const text = `traced ${Date.now()}`;
  let delivered;
  const arrived = new Promise((resolve) => { delivered = resolve; });
  await carol.subscribe('board', { onMessage: (m) => { if (m.method === 'board.posted' && m.params.text === text) delivered(); } });
  await retry(() => alice.call('board.post', { text }), -32603, 20_000);
  await arrived;

  const out = { nudge: traceOf('board.nudge'), post: traceOf('board.post') };
  await provider.forceFlush();
  console.log(JSON.stringify(out));
} catch (e) {
  console.error('FAIL:', e);
  process.exitCode = 1;
} finally {
  clients.forEach((c) => c.close());
  await provider.shutdown();
}
