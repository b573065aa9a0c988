// jsonrpc.js's lifecycle (start, close) against a fake socket
// (fakews.mjs): node --test lifecycle.test.mjs. The module is imported
// whole so that, before the errors these tests name existed, they failed
// on what the client did rather than on a missing import.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as js from '../jsonrpc.js';
import { fakeWebSocket, settle } from './fakews.mjs';

const isNotStarted = (e) => e?.name === 'NotStartedError' && /start\(\)/.test(e.message) && e instanceof js.NotStartedError;

// Issue 31, point 5: a call made before start() fails at once, saying so,
// instead of waiting out its timeout to say "no reply within 2000 ms".
test('a call before start fails at once with NotStartedError', async (t) => {
  const WS = fakeWebSocket();
  const rpc = new js.Client('ws://fake/rpc', { WebSocket: WS, timeout: 2000 });
  t.after(() => rpc.close());
  const began = Date.now();
  const outcome = await rpc.call('board.post', { text: 'hi' }).catch((e) => e);
  assert.ok(isNotStarted(outcome), `call before start: ${outcome}, want a NotStartedError saying to call start()`);
  assert.match(outcome.message, /board\.post/, 'the error names the method');
  assert.ok(Date.now() - began < 1000, `the call took ${Date.now() - began} ms to fail, want at once`);
  const [a] = rpc.batch([{ method: 'a' }, { method: 'b', notify: true }]);
  assert.ok(isNotStarted(await a.catch((e) => e)), 'a batch before start fails at once too');
  assert.throws(() => rpc.notify('typing'), isNotStarted, 'notify before start throws NotStartedError');
  assert.ok(isNotStarted(await rpc.subscribe('board').catch((e) => e)), 'subscribe before start fails at once too');
  assert.equal(WS.all.length, 0, 'nothing was opened');
  // Started, the same client works.
  await rpc.start();
  const call = rpc.call('echo', [1]);
  await settle();
  const sent = JSON.parse(WS.last.sent.at(-1));
  WS.last.deliver(JSON.stringify({ jsonrpc: '2.0', id: sent.id, result: [1] }));
  assert.deepEqual(await call, [1]);
});

// Issue 31, point 9: start() after close() is an error, not a silent
// reconnection of a client whose subscriptions close() ended; calls after
// close() reject with the same ClosedError, a ConnectionError.
test('start after close rejects with ClosedError', async (t) => {
  const WS = fakeWebSocket();
  const rpc = new js.Client('ws://fake/rpc', { WebSocket: WS });
  t.after(() => rpc.close());
  await rpc.start();
  rpc.close();
  const again = await rpc.start().then(() => 'started', (e) => e);
  assert.ok(again instanceof Error && again.name === 'ClosedError' && again instanceof js.ConnectionError,
    `start after close: ${again}, want a ClosedError (a ConnectionError)`);
  assert.match(again.message, /new Client/, 'the error says what to do');
  await settle();
  assert.equal(WS.all.length, 1, 'start after close opened another connection');
  assert.equal(rpc.status, 'closed');
  const call = await rpc.call('x').catch((e) => e);
  assert.equal(call.name, 'ClosedError', `a call after close: ${call}`);
  assert.throws(() => rpc.notify('x'), (e) => e.name === 'ClosedError');
});

// start() while started is the same start: one connection, not two (the
// first of which would be left open and unowned).
test('start twice opens one connection', async (t) => {
  const WS = fakeWebSocket();
  const rpc = new js.Client('ws://fake/rpc', { WebSocket: WS });
  t.after(() => rpc.close());
  await Promise.all([rpc.start(), rpc.start()]);
  await rpc.start();
  assert.equal(WS.all.length, 1);
  assert.equal(rpc.status, 'connected');
});

// A first start that failed may be tried again (nothing retries it).
test('a start that failed can be tried again', async (t) => {
  const WS = fakeWebSocket();
  const rpc = new js.Client('ws://fake/rpc', { WebSocket: WS });
  t.after(() => rpc.close());
  WS.refuse = true;
  await assert.rejects(rpc.start(), js.ConnectionError);
  assert.ok(isNotStarted(await rpc.call('x').catch((e) => e)), 'after a failed start, calls say it is not started');
  WS.refuse = false;
  await rpc.start();
  assert.equal(rpc.status, 'connected');
});

// close() during the first start: start rejects, and stays closed.
test('close during start ends it', async (t) => {
  const WS = fakeWebSocket();
  const rpc = new js.Client('ws://fake/rpc', { WebSocket: WS });
  t.after(() => rpc.close());
  const starting = rpc.start().catch((e) => e);
  rpc.close();
  const e = await starting;
  assert.ok(e instanceof js.ConnectionError, `start, closed during it: ${e}`);
  await settle();
  assert.equal(rpc.status, 'closed');
  assert.ok(WS.all.every((s) => s.readyState === 3), 'the socket opened meanwhile is closed');
});
