// jsonrpc.js's reconnection, against a fake socket (fakews.mjs):
// node --test reconnect.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, TimeoutError, AbortError } from '../jsonrpc.js';
import { fakeWebSocket, settle, sleep, until } from './fakews.mjs';

// Issue 30, finding 9: a connection that dies at once is no success: the
// backoff keeps growing towards maxDelay instead of starting again from
// minDelay on every drop.
test('the backoff grows while each connection dies just after it opens', async (t) => {
  const WS = fakeWebSocket();
  const delays = [];
  const rpc = new Client('ws://fake/rpc', {
    WebSocket: WS, minDelay: 20, maxDelay: 320,
    onstatus: (status, info) => { if (status === 'reconnecting') delays.push(info.delay); },
  });
  t.after(() => rpc.close());
  await rpc.start();
  WS.closeAfter = 5;
  WS.last.close();
  await until(() => delays.length >= 7, '7 reconnections', 10_000);
  rpc.close();
  // Each delay is drawn from the upper half of min(maxDelay, minDelay * 2^(n-1)).
  for (const [i, d] of delays.entries()) {
    const ceiling = Math.min(320, 20 * 2 ** i);
    assert.ok(d >= ceiling / 2 && d <= ceiling, `delay ${i + 1} is ${d} ms, want ${ceiling / 2}..${ceiling}; all: ${delays}`);
  }
  assert.ok(delays.at(-1) >= 160, `the last delay ${delays.at(-1)} ms never grew towards maxDelay: ${delays}`);
});

// A connection that lasted maxDelay or more was a success: the next drop
// starts from minDelay again.
test('after a connection that lasted, the backoff starts again', async (t) => {
  const WS = fakeWebSocket();
  const delays = [];
  const rpc = new Client('ws://fake/rpc', {
    WebSocket: WS, minDelay: 20, maxDelay: 80,
    onstatus: (status, info) => { if (status === 'reconnecting') delays.push(info.delay); },
  });
  t.after(() => rpc.close());
  await rpc.start();
  WS.closeAfter = 1;
  WS.last.close();
  await until(() => delays.length >= 4, '4 reconnections');
  WS.closeAfter = -1;
  await until(() => rpc.status === 'connected' && WS.last.readyState === 1, 'a connection that stays');
  await sleep(100); // past maxDelay
  const before = delays.length;
  WS.last.close();
  await until(() => delays.length > before, 'the next reconnection');
  assert.ok(delays[before] <= 20, `after a connection of 100 ms the delay is ${delays[before]} ms, want minDelay's 10..20`);
});

// Issue 30, finding 10: with heartbeat set, the browser's offline event
// still ends the connection at once, and online reconnects at once.
test('heartbeat keeps the offline and online events', async (t) => {
  const net = new EventTarget();
  globalThis.addEventListener = net.addEventListener.bind(net);
  globalThis.removeEventListener = net.removeEventListener.bind(net);
  t.after(() => { delete globalThis.addEventListener; delete globalThis.removeEventListener; });
  const WS = fakeWebSocket();
  const statuses = [];
  const rpc = new Client('ws://fake/rpc', { WebSocket: WS, heartbeat: 10_000, minDelay: 5_000, maxDelay: 10_000, onstatus: (s) => statuses.push(s) });
  t.after(() => rpc.close());
  await rpc.start();
  WS.last.deliver('{"jsonrpc":"2.0","method":"x"}'); // something came: the heartbeat's clock restarts
  WS.refuse = true;
  net.dispatchEvent(new Event('offline'));
  assert.equal(rpc.status, 'reconnecting', 'offline ends the connection at once');
  WS.refuse = false;
  net.dispatchEvent(new Event('online'));
  await until(() => rpc.status === 'connected', 'connected again at once, not after minDelay (5 s)', 2000);
  assert.equal(WS.all.length, 2);
});

// Issue 30, finding 16: calls that time out or are aborted while no
// connection is open are forgotten, not kept until one opens.
test('calls given up while disconnected are not kept', async (t) => {
  const WS = fakeWebSocket();
  const rpc = new Client('ws://fake/rpc', { WebSocket: WS, minDelay: 60_000, maxDelay: 60_000 });
  t.after(() => rpc.close());
  await rpc.start();
  WS.refuse = true;
  WS.last.close(); // reconnecting, in a minute
  const aborts = [];
  const calls = [];
  for (let i = 0; i < 5000; i++) {
    const ac = new AbortController();
    aborts.push(ac);
    calls.push(rpc.call('m', { pad: 'x'.repeat(1000) }, i % 2 ? { timeout: 5 } : { signal: ac.signal, timeout: 0 }).catch((e) => e));
  }
  const batch = rpc.batch([{ method: 'a' }, { method: 'b' }], { timeout: 5 }).map((p) => p.catch((e) => e));
  aborts.forEach((ac) => ac.abort());
  const outcomes = await Promise.all([...calls, ...batch]);
  assert.ok(outcomes.every((e) => e instanceof TimeoutError || e instanceof AbortError));
  await settle();
  assert.equal(rpc.waiting.size, 0, `${rpc.waiting.size} given-up sends still wait for a connection`);
});
