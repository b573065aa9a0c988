// Tests of jsonrpc.js against a real Go server (browser_test's testServer,
// started by TestNode, which sets JSONRPC_BASE), with node's own test
// runner: node --experimental-websocket --test client.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, RPCError, AbortError, TimeoutError, ConnectionError, LSPCancel, MCPCancel } from '../jsonrpc.js';

const base = process.env.JSONRPC_BASE;
if (!base) throw new Error('JSONRPC_BASE is not set: run through go test -run TestNode ./browser');
const wsURL = (path) => base.replace(/^http/, 'ws') + path;

// control acts on the server from outside the client (see testServer).
async function control(path, body) {
  const resp = await fetch(base + '/control/' + path, { method: body === undefined && path.startsWith('outcome') ? 'GET' : 'POST', body });
  if (!resp.ok) throw new Error(`control ${path}: ${resp.status}`);
  return resp.text();
}

async function until(cond, what, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

// client starts a Client on path that records its frames and statuses,
// closed when the test ends.
async function client(t, path = '/rpc', options = {}) {
  const frames = [];
  const statuses = [];
  const rpc = new Client(wsURL(path), {
    cancel: path === '/rpc' ? LSPCancel : path === '/mcp' ? MCPCancel : null,
    minDelay: 20,
    maxDelay: 80,
    trace: (dir, text) => frames.push({ dir, msg: JSON.parse(text) }),
    ...options,
  });
  rpc.addEventListener('status', (e) => statuses.push(e.status));
  t.after(() => rpc.close());
  await rpc.start();
  return { rpc, frames, statuses };
}

const sentMethod = (frames, method) => frames.filter((f) => f.dir === 'out' && !Array.isArray(f.msg) && f.msg.method === method);

test('call resolves with the result; the ids sent are strings', async (t) => {
  const { rpc, frames } = await client(t);
  assert.deepEqual(await rpc.call('echo', { a: 1, b: [1, 'x', null] }), { a: 1, b: [1, 'x', null] });
  assert.deepEqual(await rpc.call('echo', [1, 2]), [1, 2]);
  assert.equal(typeof sentMethod(frames, 'echo')[0].msg.id, 'string');
});

test('an error reply rejects with an RPCError carrying code, message and data', async (t) => {
  const { rpc } = await client(t);
  await assert.rejects(rpc.call('fail'), (e) => e instanceof RPCError && e.code === -32050 &&
    e.message === 'refused' && e.data.why === 'test');
  await assert.rejects(rpc.call('no.such.method'), (e) => e instanceof RPCError && e.code === -32601);
  await assert.rejects(rpc.call('sleep', { ms: 'x' }), (e) => e instanceof RPCError && e.code === -32602);
});

test('batch sends one array and matches the replies by id', async (t) => {
  const { rpc, frames } = await client(t);
  const out = rpc.batch([{ method: 'echo', params: [1] }, { method: 'fail' }, { method: 'echo', params: [3], notify: true }, { method: 'echo', params: [4] }]);
  assert.equal(out[2], undefined);
  assert.deepEqual(await out[0], [1]);
  await assert.rejects(out[1], { code: -32050 });
  assert.deepEqual(await out[3], [4]);
  const batches = frames.filter((f) => f.dir === 'out' && Array.isArray(f.msg));
  assert.equal(batches.length, 1);
  assert.equal(batches[0].msg.length, 4);
  assert.ok(!('id' in batches[0].msg[2]), 'a notify element has no id');
});

test('a timeout rejects with TimeoutError, and $/cancelRequest ends the Go handler\'s ctx', async (t) => {
  const { rpc, frames } = await client(t);
  const started = Date.now();
  await assert.rejects(rpc.call('sleep', { ms: 10_000, tag: 'timeout-lsp' }, { timeout: 100 }), TimeoutError);
  assert.ok(Date.now() - started < 2000, 'rejected on time');
  assert.equal(await control('outcome?tag=timeout-lsp'), 'cancelled');
  const call = sentMethod(frames, 'sleep')[0].msg;
  assert.deepEqual(sentMethod(frames, '$/cancelRequest').map((f) => f.msg.params), [{ id: call.id }]);
});

test('an AbortSignal rejects with AbortError (cause: its reason) and the cancel reaches the handler', async (t) => {
  const { rpc } = await client(t);
  const ac = new AbortController();
  const call = rpc.call('sleep', { ms: 10_000, tag: 'abort-lsp' }, { signal: ac.signal });
  setTimeout(() => ac.abort('the user left'), 50);
  await assert.rejects(call, (e) => e instanceof AbortError && e.name === 'AbortError' && e.cause === 'the user left');
  assert.equal(await control('outcome?tag=abort-lsp'), 'cancelled');
  assert.deepEqual(await rpc.call('echo', ['still fine']), ['still fine']);
});

test('the MCP dialect sends notifications/cancelled {requestId}', async (t) => {
  const { rpc, frames } = await client(t, '/mcp');
  const ac = new AbortController();
  const call = rpc.call('sleep', { ms: 10_000, tag: 'abort-mcp' }, { signal: ac.signal });
  setTimeout(() => ac.abort(), 50);
  await assert.rejects(call, AbortError);
  assert.equal(await control('outcome?tag=abort-mcp'), 'cancelled');
  const id = sentMethod(frames, 'sleep')[0].msg.id;
  assert.deepEqual(sentMethod(frames, 'notifications/cancelled').map((f) => f.msg.params), [{ requestId: id }]);
});

test('with no cancel dialect (the default) an abort sends nothing and the handler runs to its end', async (t) => {
  const { rpc, frames } = await client(t, '/plain');
  const ac = new AbortController();
  const call = rpc.call('sleep', { ms: 300, tag: 'abort-plain' }, { signal: ac.signal });
  // The call is out (sent at once on an open connection): abort it now,
  // not after a timer that a loaded machine may run after the reply.
  assert.equal(frames.filter((f) => f.dir === 'out').length, 1);
  ac.abort();
  await assert.rejects(call, AbortError);
  assert.equal(await control('outcome?tag=abort-plain'), 'completed');
  assert.equal(frames.filter((f) => f.dir === 'out').length, 1, 'only the call went out');
});

test('a signal aborted already rejects at once and sends nothing', async (t) => {
  const { rpc, frames } = await client(t);
  await assert.rejects(rpc.call('echo', [], { signal: AbortSignal.abort() }), AbortError);
  assert.equal(frames.length, 0);
});

test('reconnect: a drop fails calls in flight, statuses go round, a call made meanwhile waits and is answered', async (t) => {
  const { rpc, statuses } = await client(t);
  const inFlight = rpc.call('sleep', { ms: 10_000, tag: 'drop' }).catch((e) => e);
  await control('refuse?on=1');
  t.after(() => control('refuse?on=0'));
  assert.equal(await control('drop'), '1');
  assert.ok(await inFlight instanceof ConnectionError);
  await until(() => statuses.includes('reconnecting'), 'reconnecting');
  let settled = false;
  const waiting = rpc.call('echo', ['after the drop']).finally(() => { settled = true; });
  assert.throws(() => rpc.notify('echo'), ConnectionError);
  await until(() => statuses.filter((s) => s === 'reconnecting').length >= 2, 'a refused attempt');
  assert.equal(settled, false, 'the call waits for a connection');
  await control('refuse?on=0');
  assert.deepEqual(await waiting, ['after the drop']);
  await until(() => rpc.status === 'connected', 'connected');
  assert.deepEqual(statuses.slice(0, 4), ['connecting', 'connected', 'reconnecting', 'connecting']);
  assert.equal(statuses.at(-1), 'connected');
  assert.equal(rpc.reconnects, 1);
});

test('a call waiting for a connection times out, and is never sent', async (t) => {
  const { rpc, frames, statuses } = await client(t);
  await control('refuse?on=1');
  t.after(() => control('refuse?on=0'));
  await control('drop');
  await until(() => statuses.includes('reconnecting'), 'reconnecting');
  await assert.rejects(rpc.call('echo', ['late'], { timeout: 100 }), TimeoutError);
  await control('refuse?on=0');
  await until(() => rpc.status === 'connected', 'connected');
  assert.deepEqual(await rpc.call('echo', ['next']), ['next']);
  assert.equal(sentMethod(frames, 'echo').length, 1, 'only the second call went out');
});

test('the server calls the page: results, errors with code/message/data, unknown methods, its cancel aborts the handler', async (t) => {
  const { rpc } = await client(t);
  let aborted = false;
  rpc.handle('page.add', ([a, b]) => a + b);
  rpc.handle('page.refuse', () => { throw new RPCError(-32070, 'no', { n: 1 }); });
  rpc.handle('page.wait', (_, { signal }) => new Promise((resolve) => {
    signal.addEventListener('abort', () => { aborted = true; resolve('too late'); });
  }));
  assert.equal(await rpc.call('callPage', { method: 'page.add', params: [2, 3] }), 5);
  await assert.rejects(rpc.call('callPage', { method: 'page.refuse' }), (e) => e.code === -32070 && e.message === 'no' && e.data.n === 1);
  await assert.rejects(rpc.call('callPage', { method: 'page.nope' }), { code: -32601 });
  await assert.rejects(rpc.call('callPage', { method: 'page.wait', timeoutMs: 100 }), { code: -32099 });
  await until(() => aborted, 'the Go caller\'s $/cancelRequest to abort the page\'s handler');
});

// subscriber subscribes to topic and records what its handlers see.
async function subscriber(rpc, topic) {
  const s = { messages: [], resets: [] };
  s.sub = await rpc.subscribe(topic, {
    onMessage: (data, meta) => s.messages.push({ data, seq: meta.seq, epoch: meta.epoch }),
    onReset: (info) => s.resets.push(info),
  });
  return s;
}
const publish = (topic, data, quiet = false) => control(`publish?topic=${topic}${quiet ? '&quiet=1' : ''}`, JSON.stringify(data));

// The subscription tests that hold for any server of the contract run
// twice: against the test-only hub (/rpc) and package topic's Hub (/real).
const servers = [['test hub', '/rpc', ''], ['package topic', '/real', '&real=1']];

for (const [name, path, real] of servers) test(`subscribe: a fresh subscription resets once, then every message comes in order (${name})`, async (t) => {
  const tag = path === '/real' ? '-real' : '';
  const { rpc } = await client(t, path);
  const s = await subscriber(rpc, `live${tag}`);
  assert.equal(s.resets.length, 1);
  assert.equal(s.resets[0].recovered, false);
  for (let i = 1; i <= 5; i++) await control(`publish?topic=live${tag}${real}`, JSON.stringify({ n: i }));
  await until(() => s.messages.length === 5, '5 messages');
  assert.deepEqual(s.messages.map((m) => [m.seq, m.data.n]), [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]]);
  assert.deepEqual(s.sub.position, { epoch: s.resets[0].epoch, seq: 5 });
});

for (const [name, path, real] of servers) test(`subscribe: a topic the server refuses rejects with its error (${name})`, async (t) => {
  const tag = path === '/real' ? '-real' : '';
  const { rpc } = await client(t, path);
  await assert.rejects(rpc.subscribe(`forbidden-x`), (e) => e instanceof RPCError && e.code === -32001 && e.data.topic === `forbidden-x`);
});

for (const [name, path, real] of servers) test(`subscribe: what was published while disconnected is recovered on reconnect, exactly once, in order (${name})`, async (t) => {
  const tag = path === '/real' ? '-real' : '';
  const { rpc, frames, statuses } = await client(t, path);
  const s = await subscriber(rpc, `away${tag}`);
  for (let i = 1; i <= 3; i++) await control(`publish?topic=away${tag}${real}`, JSON.stringify(i));
  await until(() => s.messages.length === 3, '3 messages');
  await control('refuse?on=1');
  t.after(() => control('refuse?on=0'));
  await control('drop');
  await until(() => statuses.includes('reconnecting'), 'reconnecting');
  await control(`publish?topic=away${tag}${real}`, JSON.stringify(4));
  await control(`publish?topic=away${tag}${real}`, JSON.stringify(5));
  await control('refuse?on=0');
  await until(() => s.messages.length === 5, '5 messages');
  await control(`publish?topic=away${tag}${real}`, JSON.stringify(6));
  await until(() => s.messages.length === 6, '6 messages');
  assert.deepEqual(s.messages.map((m) => m.data), [1, 2, 3, 4, 5, 6]);
  assert.equal(s.resets.length, 1, 'no reset: recovered');
  const subscribes = sentMethod(frames, 'topic.subscribe');
  assert.deepEqual(subscribes.at(-1).msg.params, { topic: `away${tag}`, since: { epoch: s.resets[0].epoch, seq: 3 } });
  const reply = frames.find((f) => f.dir === 'in' && f.msg.id === subscribes.at(-1).msg.id).msg.result;
  assert.equal(reply.recovered, true);
  assert.deepEqual(reply.messages.map((m) => m.data), [4, 5]);
});

for (const [name, path, real] of servers) test(`subscribe: a history that no longer reaches back resets, and messages go on from there (${name})`, async (t) => {
  const tag = path === '/real' ? '-real' : '';
  const { rpc, statuses } = await client(t, path);
  const s = await subscriber(rpc, `long-away${tag}`);
  await control(`publish?topic=long-away${tag}${real}`, JSON.stringify(1));
  await until(() => s.messages.length === 1, 'a message');
  await control('refuse?on=1');
  t.after(() => control('refuse?on=0'));
  await control('drop');
  await until(() => statuses.includes('reconnecting'), 'reconnecting');
  for (let i = 2; i <= 12; i++) await control(`publish?topic=long-away${tag}${real}`, JSON.stringify(i)); // history keeps 8
  await control('refuse?on=0');
  await until(() => s.resets.length === 2, 'the reset');
  assert.deepEqual(s.resets[1], { topic: `long-away${tag}`, epoch: s.resets[0].epoch, seq: 12, recovered: false });
  await control(`publish?topic=long-away${tag}${real}`, JSON.stringify(13));
  await until(() => s.messages.length === 2, 'the next message');
  assert.deepEqual(s.messages.map((m) => m.data), [1, 13]);
});

test('subscribe: a message of another epoch (history lost on the server) resets', async (t) => {
  const { rpc } = await client(t);
  const s = await subscriber(rpc, 'epochs');
  await publish('epochs', 'old');
  await until(() => s.messages.length === 1, 'a message');
  await control('forget?topic=epochs');
  await publish('epochs', 'new-1');
  await until(() => s.resets.length === 2, 'the reset');
  assert.notEqual(s.resets[1].epoch, s.resets[0].epoch);
  await publish('epochs', 'new-2');
  await until(() => s.messages.length === 2, 'the next message');
  assert.deepEqual(s.messages.map((m) => [m.data, m.seq]), [['old', 1], ['new-2', 2]], 'new-1 is in the state the app refetches');
});

test('subscribe: a live message lost on the way (a gap) is fetched with since', async (t) => {
  const { rpc, frames } = await client(t);
  const s = await subscriber(rpc, 'gap');
  await publish('gap', 1);
  await publish('gap', 2, true); // into the history only
  await publish('gap', 3);
  await until(() => s.messages.length === 3, '3 messages');
  assert.deepEqual(s.messages.map((m) => m.data), [1, 2, 3]);
  assert.equal(s.resets.length, 1);
  assert.deepEqual(sentMethod(frames, 'topic.subscribe').at(-1).msg.params.since.seq, 1);
});

test('unsubscribe: no more messages', async (t) => {
  const { rpc, frames } = await client(t);
  const s = await subscriber(rpc, 'bye');
  await s.sub.unsubscribe();
  await publish('bye', 1);
  await rpc.call('echo', []); // anything sent before would have arrived by now
  assert.equal(s.messages.length, 0);
  assert.equal(frames.filter((f) => f.dir === 'in' && f.msg.method === 'topic.message').length, 0);
});

test('close rejects pending and waiting calls with ConnectionError and stops', async (t) => {
  const { rpc, statuses } = await client(t);
  const pending = rpc.call('sleep', { ms: 10_000, tag: 'close' });
  await new Promise((r) => setTimeout(r, 20));
  rpc.close();
  await assert.rejects(pending, ConnectionError);
  await assert.rejects(rpc.call('echo'), ConnectionError);
  assert.equal(statuses.at(-1), 'closed');
  assert.equal(rpc.status, 'closed');
});

// Issue 31.10: presence against package topic's Hub (presence on
// "presence-*", the user from ?user=): a page sees another user join and
// leave through onPresence, once per user however many tabs, and
// sub.presence() lists who is there.
test('subscribe: onPresence sees users join and leave, presence() lists them (package topic)', async (t) => {
  const { rpc: bob } = await client(t, '/real?user=bob');
  const events = [];
  const sub = await bob.subscribe('presence-room', { onPresence: (e) => events.push(e) });
  await until(() => events.length === 1, 'bob\'s own join');
  assert.deepEqual([events[0].joined, events[0].left, events[0].count], [['bob'], [], 1]);
  const { rpc: alice1 } = await client(t, '/real?user=alice');
  const { rpc: alice2 } = await client(t, '/real?user=alice');
  await alice1.subscribe('presence-room');
  await alice2.subscribe('presence-room');
  await until(() => events.length === 2, 'alice\'s join');
  assert.deepEqual([events[1].joined, events[1].count], [['alice'], 2]);
  const p = await sub.presence();
  assert.deepEqual([p.topic, p.members, p.count, p.more], ['presence-room', ['alice', 'bob'], 2, false]);
  assert.ok(p.version >= events[1].version);
  alice1.close();
  alice2.close();
  await until(() => events.length === 3, 'alice\'s leave, once for her two tabs');
  assert.deepEqual([events[2].joined, events[2].left, events[2].count], [[], ['alice'], 1]);
  assert.equal(events.filter((e) => e.joined.includes('alice')).length, 1);
  // A topic without presence: presence() rejects with the server's refusal.
  const quiet = await bob.subscribe('quiet-room-real');
  await assert.rejects(quiet.presence(), (e) => e instanceof RPCError && e.code === -32001);
});
