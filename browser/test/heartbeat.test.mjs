// jsonrpc.js's heartbeat and prepare against a fake socket (fakews.mjs),
// on node's mock clock where time matters: node --test heartbeat.test.mjs
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { Client, TimeoutError, LSPCancel } from '../jsonrpc.js';
import { fakeWebSocket, settle, until } from './fakews.mjs';

// started starts a client on a fake socket with the mock clock (setTimeout
// and Date; the fake socket opens on setImmediate, which stays real).
async function started(t, options = {}) {
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  t.after(() => mock.timers.reset());
  const WS = fakeWebSocket();
  const statuses = [];
  const rpc = new Client('ws://fake/rpc', { WebSocket: WS, minDelay: 60_000, maxDelay: 60_000, onstatus: (s) => statuses.push(s), ...options });
  t.after(() => rpc.close());
  await rpc.start();
  return { rpc, WS, statuses };
}

// tick advances the mock clock by ms, a second at a time, letting the
// client's promises settle in between.
async function tick(ms) {
  for (let left = ms; left > 0; left -= 1000) {
    mock.timers.tick(Math.min(1000, left));
    await settle();
  }
}

const note = (socket) => socket.deliver('{"jsonrpc":"2.0","method":"board.stats","params":{}}');

// Issue 31, point 10: the heartbeat is on by default. A black-holed
// connection (nothing comes, nothing fails) is found and reconnected
// within 12 s of the last thing heard: a ping after 4 s of silence, then
// 8 s for anything to come.
test('the heartbeat is on by default and finds a silent connection', async (t) => {
  const { rpc, WS, statuses } = await started(t);
  await tick(3000);
  assert.equal(WS.last.calls('rpc.ping').length, 0, 'no ping before 4 s of silence');
  await tick(1000);
  assert.equal(WS.last.calls('rpc.ping').length, 1, 'a ping after 4 s of silence');
  await tick(7000);
  assert.equal(rpc.status, 'connected', 'still connected 11 s after the last thing heard');
  await tick(1000);
  assert.equal(rpc.status, 'reconnecting', `a connection silent for 12 s is taken as lost: ${statuses}`);
});

// The heartbeat's ping sends no cancel when it times out, whatever the
// cancel dialect: the cancel was page data, so the heartbeat then waited
// a whole call timeout (30 s) before it took a dead connection as lost
// (TestChromium's page B failed 3 runs in 4 after the heartbeat came on).
test('a ping that times out sends no cancel, and a dead connection is still found', async (t) => {
  const { rpc, WS, statuses } = await started(t, { cancel: LSPCancel });
  await tick(4000);
  assert.equal(WS.last.calls('rpc.ping').length, 1, 'a ping after 4 s of silence');
  await tick(8000);
  assert.equal(WS.last.calls('$/cancelRequest').length, 0, 'no cancel for the heartbeat\'s ping');
  assert.equal(rpc.status, 'reconnecting', `a connection silent for 12 s is taken as lost: ${statuses}`);
});

// Liveness is judged by anything that comes, not only by the ping's reply:
// a server that notifies and never answers the ping keeps the connection;
// one that answers keeps it too; heartbeat: 0 turns the heartbeat off.
test('any message is a sign of life', async (t) => {
  const { rpc, WS } = await started(t);
  for (let s = 0; s < 60; s += 3) {
    note(WS.last);
    await tick(3000);
  }
  assert.equal(WS.last.calls('rpc.ping').length, 0, 'no ping while messages come');
  await tick(4000);
  const [ping] = WS.last.calls('rpc.ping');
  assert.ok(ping, 'a ping after 4 s of silence');
  await tick(2000);
  note(WS.last); // not the ping's reply, but the server is there
  // Then a server that answers the pings (-32601, as a Go server does)
  // and sends nothing else.
  const answered = new Set([ping.id]);
  for (let s = 0; s < 60; s++) {
    await tick(1000);
    for (const p of WS.last.calls('rpc.ping')) {
      if (answered.has(p.id)) continue;
      answered.add(p.id);
      WS.last.deliver(JSON.stringify({ jsonrpc: '2.0', id: p.id, error: { code: -32601, message: 'Method not found' } }));
    }
  }
  assert.equal(rpc.status, 'connected');
  assert.equal(WS.all.length, 1);
  assert.ok(answered.size >= 10, `${answered.size} pings in a minute of silence but for their replies, want one every 4 s or so`);
});

test('heartbeat: 0 turns the heartbeat off', async (t) => {
  const { rpc, WS } = await started(t, { heartbeat: 0 });
  await tick(120_000);
  assert.equal(WS.last.calls('rpc.ping').length, 0);
  assert.equal(rpc.status, 'connected');
});

// A server that pushes back (reads nothing while its handlers catch up
// with what the page sent) answers no ping for a while, but takes the
// page's data as it catches up: that is a sign of life. Once it takes
// nothing and sends nothing for heartbeat + heartbeatTimeout, the
// connection is lost.
test('a server taking the page\'s data is alive', async (t) => {
  const { rpc, WS } = await started(t);
  WS.last.bufferedAmount = 8 << 20;
  await tick(4000); // the ping, held behind 8 MiB
  for (let i = 0; i < 8; i++) {
    WS.last.bufferedAmount -= 1 << 20; // the server takes 1 MiB every 8 s
    await tick(8000);
  }
  assert.equal(rpc.status, 'connected', 'a server that takes the page\'s data is not dropped');
  assert.equal(WS.last.bufferedAmount, 0);
  await tick(12_000);
  assert.equal(rpc.status, 'reconnecting', 'then nothing comes and nothing is taken for 12 s: lost');
});

// Data that stays in the page's buffer is no sign of life, nor a reason
// to wait longer: on a dead network the ping itself stays there.
test('data stuck in the socket is no sign of life', async (t) => {
  const { rpc, WS } = await started(t);
  WS.last.bufferedAmount = 1 << 20;
  await tick(4000);
  assert.equal(WS.last.calls('rpc.ping').length, 1);
  await tick(7000);
  assert.equal(rpc.status, 'connected');
  await tick(1000);
  assert.equal(rpc.status, 'reconnecting', '8 s after the ping, nothing taken, nothing heard, nothing sent: lost');
});

// A page that has sent something since it last heard from the server may
// be pushed back by it (its data read by nobody while the server's
// handlers catch up, in the network's buffers where the page cannot see
// it): the heartbeat waits as long as a call after the ping.
test('data sent since the last sign of life waits as long as a call', async (t) => {
  const { rpc, WS } = await started(t);
  await tick(2000);
  rpc.notify('board.typing', { who: 'me' });
  await tick(2000);
  assert.equal(WS.last.calls('rpc.ping').length, 1);
  await tick(29_000);
  assert.equal(rpc.status, 'connected', '29 s after the ping, with the page\'s notification unanswered');
  await tick(1000);
  assert.equal(rpc.status, 'reconnecting', '30 s after the ping: lost');
});

// Issue 31, point 10: prepare (the hook that signs in again before each
// reconnection attempt) is bounded: one that hangs is given up after
// prepareTimeout, its AbortSignal aborted, and the client tries again.
test('a prepare that hangs is given up and the client tries again', async (t) => {
  const WS = fakeWebSocket();
  const signals = [];
  const errors = [];
  const rpc = new Client('ws://fake/rpc', {
    WebSocket: WS, minDelay: 5, maxDelay: 20, prepareTimeout: 100,
    prepare: (signal) => {
      signals.push(signal);
      return signals.length === 1 ? new Promise(() => {}) : undefined; // the first sign-in hangs
    },
    onstatus: (s, info) => { if (s === 'reconnecting' && info.error) errors.push(info.error); },
  });
  t.after(() => rpc.close());
  await rpc.start();
  WS.last.close();
  await until(() => rpc.status === 'connected' && WS.all.length === 2, 'connected again after the hung prepare', 5000);
  assert.ok(signals[0] instanceof AbortSignal && signals[0].aborted, 'the hung prepare\'s signal is aborted');
  assert.ok(signals[0].reason instanceof TimeoutError);
  assert.ok(errors[0] instanceof TimeoutError && /prepare/.test(errors[0].message), `the failed attempt's error: ${errors[0]}`);
  assert.equal(signals[1].aborted, false);
});

// close() during prepare aborts its signal: a sign-in in flight is not
// left to run for a client that is gone.
test('close aborts a prepare in flight', async (t) => {
  const WS = fakeWebSocket();
  let signal;
  const rpc = new Client('ws://fake/rpc', {
    WebSocket: WS, minDelay: 5, maxDelay: 20,
    prepare: (s) => { signal = s; return new Promise(() => {}); },
  });
  t.after(() => rpc.close());
  await rpc.start();
  WS.last.close();
  await until(() => signal !== undefined, 'prepare to run');
  rpc.close();
  assert.equal(signal.aborted, true);
  await settle();
  assert.equal(rpc.status, 'closed');
  assert.equal(WS.all.length, 1);
});
