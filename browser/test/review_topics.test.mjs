// jsonrpc.js's unsubscribes against package topic's Hub over a slow
// history (browser/review_topics_test.go starts it and sets REVIEW_BASE):
// node --experimental-websocket --test review_topics.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, TimeoutError, LSPCancel } from '../jsonrpc.js';

const base = process.env.REVIEW_BASE;
if (!base) throw new Error('REVIEW_BASE is not set: run through go test -run TestNodeReviewUnsubscribeOverlap ./browser');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function control(path, method = 'POST', body) {
  const resp = await fetch(base + '/control/' + path, { method, body });
  if (!resp.ok) throw new Error(`control ${path}: ${resp.status}`);
  return resp.text();
}

async function until(cond, what, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

// client starts a Client counting the topic.message frames it receives.
async function client(t, options = {}) {
  const got = { messages: 0 };
  const rpc = new Client(base.replace(/^http/, 'ws') + '/rpc', {
    cancel: LSPCancel, minDelay: 20, maxDelay: 80,
    trace: (dir, text) => { if (dir === 'in' && JSON.parse(text).method === 'topic.message') got.messages++; },
    ...options,
  });
  t.after(() => rpc.close());
  await rpc.start();
  return { rpc, got };
}

// The first subscribe that times out rejects, and topics.js "takes it
// back" with a topic.unsubscribe sent at once; but it timed out because
// the server had not answered yet, and the Hub makes an unsubscribe that
// overlaps a subscribe in progress a no-op: the server keeps the topic
// the page gave up, and sends every message of it, for the connection's
// life. (With the cancel dialect set, the cancel ends the server's
// subscribe first and this holds; jsonrpc.js's default is no dialect.)
test('a subscribe that timed out is taken back on the server', async (t) => {
  const { rpc, got } = await client(t, { timeout: 150, cancel: null });
  await assert.rejects(rpc.subscribe('slow-a'), TimeoutError);
  await sleep(800); // the server's subscribe is done; the take-back long answered
  const subs = Number(await control('subscribers?topic=slow-a', 'GET'));
  for (let i = 1; i <= 5; i++) await control('publish?topic=slow-a', 'POST', JSON.stringify(i));
  await sleep(300);
  assert.ok(subs === 0 && got.messages === 0,
    `after the timed-out subscribe was taken back: ${subs} subscriber(s) on the server, ${got.messages} of 5 later messages sent to the page`);
});

// A Subscription's unsubscribe() while its topic's subscribe on a new
// connection is in flight (sent by the reconnection) resolves, but the
// Hub, which runs the two concurrently, makes it a no-op: the page goes
// on receiving the topic it left.
test('an unsubscribe while the resubscribe is in flight unsubscribes', async (t) => {
  const { rpc, got } = await client(t, { timeout: 5000 });
  let connected = 0;
  rpc.addEventListener('status', (e) => { if (e.status === 'connected') connected++; });
  const sub = await rpc.subscribe('slow-b', {});
  await control('drop');
  await until(() => connected === 1, 'the reconnection');
  await sub.unsubscribe(); // the resubscribe's reply is still some 400 ms away
  await sleep(800);
  const subs = Number(await control('subscribers?topic=slow-b', 'GET'));
  const before = got.messages;
  for (let i = 1; i <= 5; i++) await control('publish?topic=slow-b', 'POST', JSON.stringify(i));
  await sleep(300);
  const after = got.messages - before;
  assert.ok(subs === 0 && after === 0,
    `after unsubscribe() resolved: ${subs} subscriber(s) on the server, ${after} of 5 later messages sent to the page`);
});
