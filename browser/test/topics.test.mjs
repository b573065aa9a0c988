// jsonrpc.js's topics against a fake socket (fakews.mjs), the server's
// side played frame by frame: node --test topics.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, TimeoutError, KickedError } from '../jsonrpc.js';
import { fakeWebSocket, settle, sleep, until } from './fakews.mjs';

async function started(t, options = {}) {
  const WS = fakeWebSocket();
  const rpc = new Client('ws://fake/rpc', { WebSocket: WS, minDelay: 5, maxDelay: 20, ...options });
  t.after(() => rpc.close());
  await rpc.start();
  return { rpc, WS };
}

const reply = (socket, id, result) => socket.deliver(JSON.stringify({ jsonrpc: '2.0', id, result }));
const live = (socket, topic, epoch, seq, data = seq) =>
  socket.deliver(JSON.stringify({ jsonrpc: '2.0', method: 'topic.message', params: { topic, epoch, seq, data } }));
const empty = (topic, epoch, seq, recovered = false) => ({ topic, epoch, seq, recovered, messages: [] });

// Issue 30, finding 7: what a topic buffered on a connection that dropped
// is not carried to the next one: a message of the old server's epoch no
// longer makes the client subscribe again and again to a restarted one.
test('a restart does not make the page subscribe in a loop', async (t) => {
  const { rpc, WS } = await started(t);
  const resets = [];
  const sub = rpc.subscribe('t', { onReset: (i) => resets.push(i.epoch) });
  reply(WS.last, WS.last.calls('topic.subscribe')[0].id, empty('t', 'old', 3));
  await sub;
  live(WS.last, 't', 'old', 5); // a gap: subscribe again, 5 held meanwhile
  assert.equal(WS.last.calls('topic.subscribe').length, 2);
  WS.last.close(); // the server goes, the reply never comes
  await until(() => WS.all.length === 2 && WS.last.readyState === 1, 'the next connection');
  const again = WS.last.calls('topic.subscribe');
  assert.deepEqual(again.map((c) => c.params.since), [{ epoch: 'old', seq: 3 }]);
  // A restarted server: another epoch, for every subscribe, for 300 ms.
  const answered = new Set();
  const end = Date.now() + 300;
  while (Date.now() < end) {
    for (const c of WS.last.calls('topic.subscribe')) {
      if (!answered.has(c.id)) {
        answered.add(c.id);
        reply(WS.last, c.id, empty('t', 'new', 0));
      }
    }
    await sleep(1);
  }
  assert.equal(answered.size, 1, `${answered.size} subscribes on the new connection in 300 ms, want 1`);
  assert.deepEqual(resets, ['old', 'new']);
});

// Issue 30, finding 8: the first subscribe that gets no reply in time
// settles (rejects with the TimeoutError); a later one that times out is
// tried again after a growing delay, not at once.
test('a subscribe that times out settles, or backs off', async (t) => {
  const { rpc, WS } = await started(t, { timeout: 50, minDelay: 40, maxDelay: 400 });
  const started_ = Date.now();
  await assert.rejects(rpc.subscribe('slow'), TimeoutError);
  assert.ok(Date.now() - started_ < 2000);
  await sleep(200);
  assert.equal(WS.last.calls('topic.subscribe').length, 1, 'a first subscribe that timed out is not sent again');
  assert.equal(WS.last.calls('topic.unsubscribe').length, 1, 'and is taken back, in case the server applied it late');

  const sub = rpc.subscribe('t');
  reply(WS.last, WS.last.calls('topic.subscribe').at(-1).id, empty('t', 'E', 1));
  await sub;
  live(WS.last, 't', 'E', 3); // a gap; its subscribes get no reply in time
  await sleep(1000);
  const n = WS.last.calls('topic.subscribe').filter((c) => c.params.topic === 't').length - 1;
  assert.ok(n >= 1 && n <= 6, `${n} subscribes in a second for a gap whose replies never come, want a few, backing off`);
});

// Issue 30, finding 19: a second subscribe of a topic on one Client is
// refused, and the first keeps its messages; after its unsubscribe, the
// topic can be subscribed again.
test('a second subscribe of a topic is refused', async (t) => {
  const { rpc, WS } = await started(t);
  const seen = [];
  const first = rpc.subscribe('board', { onMessage: (d) => seen.push(d) });
  reply(WS.last, WS.last.calls('topic.subscribe')[0].id, empty('board', 'E', 0));
  const sub = await first;
  await assert.rejects(rpc.subscribe('board', { onMessage: () => {} }), /already subscribed/);
  for (let s = 1; s <= 5; s++) live(WS.last, 'board', 'E', s);
  assert.deepEqual(seen, [1, 2, 3, 4, 5]);
  const leaving = sub.unsubscribe();
  await settle();
  reply(WS.last, WS.last.calls('topic.unsubscribe')[0].id, true);
  await leaving;
  const again = rpc.subscribe('board');
  await settle();
  reply(WS.last, WS.last.calls('topic.subscribe').at(-1).id, empty('board', 'E', 5));
  await again;
});

// Issue 30, finding 6 (the page's side): a subscribe made while the same
// topic's unsubscribe is in flight goes out after its reply, so that the
// server cannot apply them the other way round.
test('a subscribe waits for the same topic\'s unsubscribe', async (t) => {
  const { rpc, WS } = await started(t);
  const first = rpc.subscribe('t');
  reply(WS.last, WS.last.calls('topic.subscribe')[0].id, empty('t', 'E', 0));
  const sub = await first;
  const leaving = sub.unsubscribe();
  const again = rpc.subscribe('t');
  await settle();
  assert.equal(WS.last.calls('topic.unsubscribe').length, 1);
  assert.equal(WS.last.calls('topic.subscribe').length, 1, 'the second subscribe went out before the unsubscribe\'s reply');
  reply(WS.last, WS.last.calls('topic.unsubscribe')[0].id, true);
  await leaving;
  await settle();
  const subs = WS.last.calls('topic.subscribe');
  assert.equal(subs.length, 2);
  reply(WS.last, subs[1].id, empty('t', 'E', 0));
  await again;
});

// A catch-up in pages: a reply that says more is followed by the next
// page at once, the live messages held meanwhile, each applied once.
test('a paged catch-up is read to its end', async (t) => {
  const { rpc, WS } = await started(t);
  const seen = [];
  const sub = rpc.subscribe('t', { onMessage: (d) => seen.push(d) });
  reply(WS.last, WS.last.calls('topic.subscribe')[0].id, empty('t', 'E', 2));
  await sub;
  WS.last.close();
  await until(() => WS.all.length === 2 && WS.last.calls('topic.subscribe').length === 1, 'the resubscribe');
  const page = (id, from, to, more) => reply(WS.last, id, {
    topic: 't', epoch: 'E', seq: to, recovered: true, more,
    messages: Array.from({ length: to - from + 1 }, (_, i) => ({ seq: from + i, data: from + i })),
  });
  page(WS.last.calls('topic.subscribe')[0].id, 3, 5, true);
  await settle();
  const next = WS.last.calls('topic.subscribe');
  assert.deepEqual(next.map((c) => c.params.since), [{ epoch: 'E', seq: 2 }, { epoch: 'E', seq: 5 }], 'the next page asked for at once');
  live(WS.last, 't', 'E', 9); // live, past the pages: held
  page(next[1].id, 6, 8, false);
  await settle();
  assert.deepEqual(seen, [3, 4, 5, 6, 7, 8, 9]);
});

// A topic that had no message (its reply said seq 0) goes on with the
// first message of another epoch, live or held while the subscribe was in
// flight: nothing came before seq 1 of any epoch. The JetStream store
// answers the epoch "none" until a topic's first publish makes its
// stream; the page reset there and never saw the first message.
for (const held of [false, true]) {
  test(`the first message after an empty topic is applied (held: ${held})`, async (t) => {
    const { rpc, WS } = await started(t);
    const seen = [];
    const resets = [];
    const sub = rpc.subscribe('t', {
      onMessage: (data, m) => seen.push(`${m.epoch}:${m.seq}`),
      onReset: (i) => resets.push(`${i.epoch}:${i.seq}`),
    });
    if (held) live(WS.last, 't', 'E2', 1);
    reply(WS.last, WS.last.calls('topic.subscribe')[0].id, empty('t', 'none', 0));
    await sub;
    if (!held) live(WS.last, 't', 'E2', 1);
    live(WS.last, 't', 'E2', 2);
    await settle();
    assert.deepEqual(seen, ['E2:1', 'E2:2']);
    assert.deepEqual(resets, ['none:0']);
    assert.equal(WS.last.calls('topic.subscribe').length, 1, 'no subscribe again');
  });
}

// Issue 31.10: subscribe(topic, {history: N}) asks for the last N
// messages with the first subscribe; the reply's backlog follows onReset
// (at the position before its first message) through onMessage, in
// order, before the live messages held meanwhile, each once. A
// resubscribe whose position the server cannot recover asks again.
test('history on the first subscription', async (t) => {
  const { rpc, WS } = await started(t);
  const seen = [];
  const resets = [];
  const sub = rpc.subscribe('chat', { history: 3, onMessage: (d, m) => seen.push(m.seq), onReset: (i) => resets.push(i.seq) });
  const first = WS.last.calls('topic.subscribe')[0];
  assert.deepEqual(first.params, { topic: 'chat', history: 3 });
  live(WS.last, 'chat', 'E', 11); // live before the reply: held
  live(WS.last, 'chat', 'E', 10); // a duplicate of the backlog's last
  reply(WS.last, first.id, {
    topic: 'chat', epoch: 'E', seq: 10, recovered: false,
    messages: [{ seq: 8, data: 8 }, { seq: 9, data: 9 }, { seq: 10, data: 10 }],
  });
  await sub;
  live(WS.last, 'chat', 'E', 12);
  assert.deepEqual(resets, [7]);
  assert.deepEqual(seen, [8, 9, 10, 11, 12]);
  WS.last.close();
  await until(() => WS.all.length === 2 && WS.last.calls('topic.subscribe').length === 1, 'the resubscribe');
  const again = WS.last.calls('topic.subscribe')[0];
  assert.deepEqual(again.params, { topic: 'chat', since: { epoch: 'E', seq: 12 }, history: 3 });
  reply(WS.last, again.id, { topic: 'chat', epoch: 'F', seq: 2, recovered: false, messages: [{ seq: 1, data: 'a' }, { seq: 2, data: 'b' }] });
  await settle();
  assert.deepEqual(resets, [7, 0]);
  assert.deepEqual(seen, [8, 9, 10, 11, 12, 1, 2]);
  await assert.rejects(rpc.subscribe('bad', { history: -1 }), /history/);
  await assert.rejects(rpc.subscribe('bad', { history: 1.5 }), /history/);
});

// Issue 31.10: the server's topic.kicked ends the subscription without
// closing the connection: onError gets a KickedError with the reason (a
// first subscribe still in flight rejects with it), later messages of
// the topic are dropped, and the next connection does not subscribe to
// it again; the other topics go on.
test('a kick ends the subscription', async (t) => {
  const { rpc, WS } = await started(t);
  const errors = [];
  const seen = [];
  const room = rpc.subscribe('room', { onMessage: (d) => seen.push(d), onError: (e) => errors.push(e) });
  const lobby = rpc.subscribe('lobby', { onMessage: (d) => seen.push(d) });
  const [r, l] = WS.last.calls('topic.subscribe');
  reply(WS.last, r.id, empty('room', 'E', 0));
  reply(WS.last, l.id, empty('lobby', 'E', 0));
  await room;
  await lobby;
  const kicked = (topic, reason) => WS.last.deliver(JSON.stringify({ jsonrpc: '2.0', method: 'topic.kicked', params: { topic, reason } }));
  kicked('room', 'removed');
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof KickedError);
  assert.equal(errors[0].topic, 'room');
  assert.equal(errors[0].reason, 'removed');
  live(WS.last, 'room', 'E', 1, 'late');
  live(WS.last, 'lobby', 'E', 1, 'lobby');
  assert.deepEqual(seen, ['lobby']);
  assert.equal(WS.last.calls('topic.unsubscribe').length, 0, 'a kicked topic needs no unsubscribe');
  // A first subscribe still in flight rejects with the kick.
  const vip = rpc.subscribe('vip');
  kicked('vip', 'no');
  await assert.rejects(vip, KickedError);
  kicked('nothing', 'ignored'); // not followed: nothing happens
  WS.last.close();
  await until(() => WS.all.length === 2 && WS.last.calls('topic.subscribe').length === 1, 'the resubscribe');
  assert.deepEqual(WS.last.calls('topic.subscribe').map((c) => c.params.topic), ['lobby']);
  // It can be subscribed again (the server's Allow decides).
  const again = rpc.subscribe('room');
  await settle();
  reply(WS.last, WS.last.calls('topic.subscribe').at(-1).id, empty('room', 'E', 1));
  await again;
});

// Issue 31.10: topic.presence reaches the subscription's onPresence (not
// another topic's, nor a topic not followed); sub.presence() calls
// topic.members and resolves to its reply, and rejects once the
// subscription has ended.
test('presence events reach onPresence, presence() asks topic.members', async (t) => {
  const { rpc, WS } = await started(t);
  const events = [];
  const room = rpc.subscribe('room', { onPresence: (e) => events.push(e) });
  const lobby = rpc.subscribe('lobby');
  const [r, l] = WS.last.calls('topic.subscribe');
  reply(WS.last, r.id, empty('room', 'E', 0));
  reply(WS.last, l.id, empty('lobby', 'E', 0));
  const sub = await room;
  await lobby;
  const presence = (params) => WS.last.deliver(JSON.stringify({ jsonrpc: '2.0', method: 'topic.presence', params }));
  presence({ topic: 'room', joined: ['alice', 7], left: [], count: 2, version: 1 });
  presence({ topic: 'lobby', joined: ['x'], left: [], count: 1, version: 1 });
  presence({ topic: 'elsewhere', joined: ['y'], left: [], count: 1, version: 1 });
  assert.deepEqual(events, [{ topic: 'room', joined: ['alice'], left: [], count: 2, more: false, version: 1 }]);
  const asked = sub.presence();
  await settle();
  const call = WS.last.calls('topic.members').at(-1);
  assert.deepEqual(call.params, { topic: 'room' });
  reply(WS.last, call.id, { topic: 'room', members: ['alice', 'bob'], count: 150, more: true, version: 1 });
  assert.deepEqual(await asked, { topic: 'room', members: ['alice', 'bob'], count: 150, more: true, version: 1 });
  const unsub = sub.unsubscribe();
  await settle();
  reply(WS.last, WS.last.calls('topic.unsubscribe').at(-1).id, true);
  await unsub;
  await assert.rejects(sub.presence(), /not subscribed/);
});
