// jsonrpc.js's optional tracing hook (options.tracing), against a fake
// WebSocket: off, nothing on the wire changes; on, through the adapter for
// @opentelemetry/api that browser/README.md shows (otel-tracing.mjs), with
// the OpenTelemetry SDK's in-memory exporter. node --test tracing.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { context, propagation, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Client, RPCError } from '../jsonrpc.js';
import { fakeWebSocket, settle } from './fakews.mjs';
import { otelTracing } from './otel-tracing.mjs';

const FakeWS = fakeWebSocket();

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('tracing.test');

async function started(t, options) {
  const rpc = new Client('ws://fake/rpc', { WebSocket: FakeWS, reconnect: false, heartbeat: 0, ...options });
  t.after(() => rpc.close());
  await rpc.start();
  return { rpc, socket: FakeWS.last };
}

// exchange makes the same calls, notifications, batch and served call and
// notification on a client, and returns every frame it sent.
async function exchange(t, options) {
  const { rpc, socket } = await started(t, options);
  rpc.handle('page.ask', (p) => p.q);
  rpc.on('board.news', () => {});
  const calls = [
    rpc.call('a', { x: 1, _meta: { progressToken: 7 } }),
    rpc.call('b', [1, 2]),
    rpc.call('c'),
    ...rpc.batch([{ method: 'd', params: { y: 2 } }, { method: 'e', params: { z: 3 }, notify: true }]).filter(Boolean),
  ];
  rpc.notify('f', { w: 4 });
  rpc.notify('g', [5]);
  socket.deliver('{"jsonrpc":"2.0","id":9,"method":"page.ask","params":{"q":"?","_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}');
  socket.deliver('{"jsonrpc":"2.0","method":"board.news","params":{"n":1}}');
  await settle();
  for (const m of socket.sent.map((s) => JSON.parse(s)).flat()) {
    if (m.id && m.method) socket.deliver(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: true }));
  }
  await Promise.all(calls);
  return socket.sent;
}

const offWire = [
  '{"jsonrpc":"2.0","method":"a","params":{"x":1,"_meta":{"progressToken":7}},"id":"1"}',
  '{"jsonrpc":"2.0","method":"b","params":[1,2],"id":"2"}',
  '{"jsonrpc":"2.0","method":"c","id":"3"}',
  '[{"jsonrpc":"2.0","method":"d","params":{"y":2},"id":"4"},{"jsonrpc":"2.0","method":"e","params":{"z":3}}]',
  '{"jsonrpc":"2.0","method":"f","params":{"w":4}}',
  '{"jsonrpc":"2.0","method":"g","params":[5]}',
  '{"jsonrpc":"2.0","id":9,"result":"?"}',
];

test('tracing off (the default), empty, or a hook with no span: the wire is byte for byte the same', async (t) => {
  assert.deepEqual(await exchange(t, {}), offWire);
  assert.deepEqual(await exchange(t, { tracing: null }), offWire);
  assert.deepEqual(await exchange(t, { tracing: {} }), offWire);
  assert.deepEqual(await exchange(t, { tracing: { send: () => undefined, receive: () => undefined } }), offWire);
  assert.deepEqual(await exchange(t, { tracing: { send: () => ({ meta: {}, end() {} }) } }), offWire);
});

test('tracing on: traceparent merged into object params\' _meta only; spans of calls, notifications, batch elements and what is served', async (t) => {
  exporter.reset();
  const sent = (await exchange(t, { tracing: otelTracing(tracer) })).map((s) => JSON.parse(s)).flat();
  const byMethod = Object.fromEntries(sent.filter((m) => m.method).map((m) => [m.method, m]));
  const spans = exporter.getFinishedSpans();
  const span = (name, kind) => spans.find((s) => s.name === name && s.kind === kind);
  const parentOf = (s) => s.parentSpanContext?.spanId;

  for (const method of ['a', 'd', 'e', 'f']) {
    const s = span(method, SpanKind.CLIENT);
    assert.ok(s, `a CLIENT span for ${method}`);
    const tp = byMethod[method].params._meta.traceparent;
    assert.equal(tp, `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`, `${method}'s traceparent names its span`);
    assert.equal(s.attributes['rpc.system.name'], 'jsonrpc');
    assert.equal(s.attributes['rpc.method'], method);
  }
  assert.equal(byMethod.a.params._meta.progressToken, 7, 'what _meta held is kept');
  assert.equal(byMethod.a.params.x, 1);
  assert.equal(span('a', SpanKind.CLIENT).attributes['jsonrpc.request.id'], '1');
  assert.deepEqual(byMethod.b.params, [1, 2], 'array params carry none');
  assert.equal('params' in byMethod.c, false, 'no params: none added');
  assert.deepEqual(byMethod.g.params, [5]);
  assert.ok(span('b', SpanKind.CLIENT) && span('c', SpanKind.CLIENT) && span('g', SpanKind.CLIENT), 'spans without trace context on the wire too');

  const served = span('page.ask', SpanKind.SERVER);
  assert.equal(served.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c', 'the served call joins the caller\'s trace');
  assert.equal(parentOf(served), 'b7ad6b7169203331');
  assert.equal(served.attributes['jsonrpc.request.id'], '9');
  assert.ok(span('board.news', SpanKind.SERVER), 'a SERVER span for the notification received');
  assert.equal(spans.length, 9);
});

test('a call made by a handler, after an await, is a child of the served call\'s span', async (t) => {
  exporter.reset();
  const { rpc, socket } = await started(t, { tracing: otelTracing(tracer) });
  rpc.handle('page.nudge', async () => {
    await settle();
    return rpc.call('board.ack', { ok: true });
  });
  socket.deliver('{"jsonrpc":"2.0","id":"n1","method":"page.nudge","params":{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}');
  await settle();
  await settle();
  const ack = socket.calls('board.ack')[0];
  assert.ok(ack, 'the handler called board.ack');
  socket.deliver(JSON.stringify({ jsonrpc: '2.0', id: ack.id, result: 'fine' }));
  await settle();
  await settle();
  const spans = exporter.getFinishedSpans();
  const served = spans.find((s) => s.name === 'page.nudge');
  const child = spans.find((s) => s.name === 'board.ack');
  assert.ok(served && child);
  assert.equal(child.spanContext().traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.equal(child.parentSpanContext?.spanId, served.spanContext().spanId);
  assert.equal(ack.params._meta.traceparent, `00-4bf92f3577b34da6a3ce929d0e0e4736-${child.spanContext().spanId}-01`);
  assert.equal(socket.sent.at(-1), '{"jsonrpc":"2.0","id":"n1","result":"fine"}');
});

test('errors: an error reply, a timeout and a handler\'s throw end their spans with status Error', async (t) => {
  exporter.reset();
  const { rpc, socket } = await started(t, { tracing: otelTracing(tracer) });
  rpc.handle('page.fail', () => { throw new RPCError(-32010, 'no'); });
  const failed = rpc.call('x', {});
  const late = rpc.call('y', {}, { timeout: 5 });
  socket.deliver(`{"jsonrpc":"2.0","id":"${socket.calls('x')[0].id}","error":{"code":-32601,"message":"Method not found"}}`);
  socket.deliver('{"jsonrpc":"2.0","id":1,"method":"page.fail","params":{}}');
  await assert.rejects(failed, RPCError);
  await assert.rejects(late, { name: 'TimeoutError' });
  await settle();
  const spans = exporter.getFinishedSpans();
  const x = spans.find((s) => s.name === 'x');
  assert.equal(x.status.code, SpanStatusCode.ERROR);
  assert.equal(x.attributes['rpc.status_code'], '-32601');
  assert.equal(spans.find((s) => s.name === 'y').attributes['error.type'], 'TimeoutError');
  const fail = spans.find((s) => s.name === 'page.fail');
  assert.equal(fail.kind, SpanKind.SERVER);
  assert.equal(fail.attributes['rpc.status_code'], '-32010');
});

test('a hook that throws costs its span only: the call goes out and settles', async (t) => {
  const { rpc, socket } = await started(t, { tracing: { send() { throw new Error('broken'); }, receive: () => ({ end() { throw new Error('broken'); } }) } });
  rpc.handle('m', () => 1);
  const call = rpc.call('a', { x: 1 });
  assert.equal(socket.sent[0], '{"jsonrpc":"2.0","method":"a","params":{"x":1},"id":"1"}');
  socket.deliver('{"jsonrpc":"2.0","id":"1","result":2}');
  assert.equal(await call, 2);
  socket.deliver('{"jsonrpc":"2.0","id":3,"method":"m"}');
  await settle();
  assert.equal(socket.sent.at(-1), '{"jsonrpc":"2.0","id":3,"result":1}');
});

test('browser/README.md shows otel-tracing.mjs\'s adapter as it is', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const file = readFileSync(new URL('./otel-tracing.mjs', import.meta.url), 'utf8');
  const code = file.slice(file.indexOf('import {'));
  assert.ok(readme.includes(code), 'README.md\'s adapter differs from test/otel-tracing.mjs');
});
