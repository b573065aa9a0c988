// jsonrpc.js's heartbeat and its close against a real Go server
// (browser_test's testServer, /pushback; started by TestNode, which sets
// JSONRPC_BASE): node --experimental-websocket --test liveness.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '../jsonrpc.js';

const base = process.env.JSONRPC_BASE;
if (!base) throw new Error('JSONRPC_BASE is not set: run through go test -run TestNode ./browser');
const wsURL = (path) => base.replace(/^http/, 'ws') + path;

async function outcome(tag) {
  const resp = await fetch(`${base}/control/outcome?tag=${tag}`);
  if (!resp.ok) throw new Error(`outcome: ${resp.status}`);
  return resp.text();
}

// Issue 31, point 10: a Go server that pushes back (reads nothing while
// its handler catches up with the page's notifications, 64 KiB queued at
// most) for longer than the heartbeat's window answers no ping meanwhile;
// the page, whose data waits to be taken, stays connected instead of
// dropping to reconnecting and losing what it sent.
test('a Go server pushing back does not make the page reconnect', async (t) => {
  const statuses = [];
  const rpc = new Client(wsURL('/pushback?tag=pushback'), {
    heartbeat: 200, heartbeatTimeout: 1000, timeout: 30_000, minDelay: 20, maxDelay: 80,
    onstatus: (s) => statuses.push(s),
  });
  t.after(() => rpc.close());
  await rpc.start();
  const pad = 'x'.repeat(256 << 10);
  for (let i = 0; i < 40; i++) rpc.notify('slow.note', { ms: 150, pad }); // 10 MiB, 6 s of the handler's time
  const sent = Date.now();
  // A call that comes while the queue is full is refused at once
  // (-32000): a reply all the same, once the server reads it.
  const reply = await rpc.call('echo', ['after'], { timeout: 60_000 }).catch((e) => e);
  const took = Date.now() - sent;
  assert.ok(Array.isArray(reply) || reply?.code === -32000, `the call after the notifications: ${reply}`);
  assert.ok(took >= 1200, `the server pushed back for ${took} ms after the page had sent, want longer than the heartbeat's window (1.2 s) for this test to mean anything`);
  assert.deepEqual(statuses, ['connecting', 'connected'], `statuses while the server pushed back for ${took} ms`);
});

// Issue 31, point 9: when the page gives up a connection it takes for
// dead (here: the browser went offline) it closes with 4001 "gone"; a Go
// server counts that as a clean end (OnDisconnect's cause is nil), not an
// error.
test('the page\'s own close is a clean end for the Go server', async (t) => {
  const net = new EventTarget();
  globalThis.addEventListener = net.addEventListener.bind(net);
  globalThis.removeEventListener = net.removeEventListener.bind(net);
  t.after(() => { delete globalThis.addEventListener; delete globalThis.removeEventListener; });
  const rpc = new Client(wsURL('/pushback?tag=gone'), { minDelay: 60_000, maxDelay: 60_000 });
  t.after(() => rpc.close());
  await rpc.start();
  assert.deepEqual(await rpc.call('echo', [1]), [1]);
  net.dispatchEvent(new Event('offline'));
  assert.equal(rpc.status, 'reconnecting');
  assert.equal(await outcome('gone'), 'clean', 'the server\'s OnDisconnect cause for the page\'s close 4001 "gone"');
});
