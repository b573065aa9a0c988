// jsonrpc.js's heartbeat against a slow but alive Go server
// (browser/review_heartbeat_test.go starts it and sets REVIEW_BASE):
// node --experimental-websocket --test review_heartbeat.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '../jsonrpc.js';

const base = process.env.REVIEW_BASE;
if (!base) throw new Error('REVIEW_BASE is not set: run through go test -run TestNodeReviewHeartbeatBusyServer ./browser');

// The server takes 3 s per "slow" call and has two handler slots, both
// taken by the page's two calls; each call's handler sends "started"
// first, so the page has heard from the server after it last sent. The
// ping waits for a slot like any call, and the heartbeat, which waits
// heartbeatTimeout (not the call timeout) once the page has heard from
// the server since it last sent, gives the live connection up: both
// calls, well within their 10 s timeout, fail with a ConnectionError.
test('a busy but alive server is not taken for dead', async (t) => {
  let opened = 0;
  let started = 0;
  const rpc = new Client(base.replace(/^http/, 'ws') + '/rpc', {
    timeout: 10_000, heartbeat: 300, minDelay: 20, maxDelay: 80,
    trace: (dir, text) => {
      if (dir === 'in' && JSON.parse(text).method === 'started') started++;
    },
    onstatus: (s) => { if (s === 'connected') opened++; },
  });
  rpc.on('started', () => {});
  t.after(() => rpc.close());
  await rpc.start();
  const t0 = Date.now();
  const results = await Promise.allSettled([rpc.call('slow'), rpc.call('slow')]);
  const failed = results.filter((r) => r.status === 'rejected').map((r) => `${r.reason?.name}: ${r.reason?.message}`);
  assert.deepEqual(failed, [],
    `2 calls to a live server (3 s each, 10 s timeout, ${started} "started" heard): ${failed.length} failed after ${Date.now() - t0} ms (${failed.join('; ')}); connections opened: ${opened}`);
});
