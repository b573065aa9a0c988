// Unit tests of static/rpc.js against a fake socket, with node's own test
// runner (no npm package needed): node --test rpc.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Peer, Reconnecting, RPCError } from '../static/rpc.js';

// FakeSocket stands in for a WebSocket: it records what the peer sends,
// and deliver() plays a frame from the other side.
class FakeSocket extends EventTarget {
  sent = [];
  send(text) { this.sent.push(JSON.parse(text)); }
  close() { this.dispatchEvent(new Event('close')); }
  deliver(msg) {
    const event = new Event('message');
    event.data = typeof msg === 'string' ? msg : JSON.stringify(msg);
    this.dispatchEvent(event);
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

function setup() {
  const socket = new FakeSocket();
  return { socket, peer: new Peer(socket) };
}

test('call resolves with the result of the reply with its id', async () => {
  const { socket, peer } = setup();
  const first = peer.call('add', [1, 2]);
  const second = peer.call('now');
  assert.deepEqual(socket.sent, [
    { jsonrpc: '2.0', method: 'add', params: [1, 2], id: 1 },
    { jsonrpc: '2.0', method: 'now', id: 2 }, // no params member for no params
  ]);
  socket.deliver({ jsonrpc: '2.0', id: 2, result: 'noon' });
  socket.deliver({ jsonrpc: '2.0', id: 1, result: 3 });
  assert.equal(await first, 3);
  assert.equal(await second, 'noon');
});

test('call rejects with an RPCError carrying code, message and data', async () => {
  const { socket, peer } = setup();
  const call = peer.call('board.post', { text: '' });
  socket.deliver({ jsonrpc: '2.0', id: 1, error: { code: -32010, message: 'too short', data: { length: 0 } } });
  await assert.rejects(call, (e) => e instanceof RPCError && e instanceof Error &&
    e.code === -32010 && e.message === 'too short' && e.data.length === 0);
});

test('notify sends no id', () => {
  const { socket, peer } = setup();
  peer.notify('hello', { who: 'me' });
  assert.deepEqual(socket.sent, [{ jsonrpc: '2.0', method: 'hello', params: { who: 'me' } }]);
});

test('batch sends one array and matches replies by id', async () => {
  const { socket, peer } = setup();
  const outcomes = peer.batch([{ method: 'a' }, { method: 'log', params: ['x'], notify: true }, { method: 'b', params: {} }]);
  assert.equal(socket.sent.length, 1);
  assert.deepEqual(socket.sent[0], [
    { jsonrpc: '2.0', method: 'a', id: 1 },
    { jsonrpc: '2.0', method: 'log', params: ['x'] },
    { jsonrpc: '2.0', method: 'b', params: {}, id: 2 },
  ]);
  assert.equal(outcomes[1], undefined);
  socket.deliver([
    { jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'Method not found' } },
    { jsonrpc: '2.0', id: 1, result: 'A' },
  ]);
  assert.equal(await outcomes[0], 'A');
  await assert.rejects(outcomes[2], { code: -32601 });
  assert.equal(socket.sent.length, 1, 'replies are never answered');
});

test('serves the methods the other side calls', async () => {
  const { socket, peer } = setup();
  peer.handle('page.name', () => 'alice');
  peer.handle('slow', async ([x]) => x * 2);
  peer.handle('nothing', () => undefined);
  peer.handle('refuse', () => { throw new RPCError(-32050, 'no', { why: 'test' }); });
  peer.handle('broken', () => { throw new TypeError('bug'); });
  const quiet = console.error;
  console.error = () => {};
  try {
    for (const [id, method, params] of [[1, 'page.name'], ['s', 'slow', [21]], [3, 'nothing'], [4, 'refuse'], [5, 'broken'], [6, 'nope']]) {
      socket.deliver({ jsonrpc: '2.0', id, method, params });
    }
    await settle();
  } finally {
    console.error = quiet;
  }
  const byID = Object.fromEntries(socket.sent.map((r) => [r.id, r]));
  assert.deepEqual(byID[1], { jsonrpc: '2.0', id: 1, result: 'alice' });
  assert.deepEqual(byID.s, { jsonrpc: '2.0', id: 's', result: 42 });
  assert.deepEqual(byID[3], { jsonrpc: '2.0', id: 3, result: null });
  assert.deepEqual(byID[4], { jsonrpc: '2.0', id: 4, error: { code: -32050, message: 'no', data: { why: 'test' } } });
  assert.deepEqual(byID[5], { jsonrpc: '2.0', id: 5, error: { code: -32603, message: 'Internal error' } });
  assert.deepEqual(byID[6], { jsonrpc: '2.0', id: 6, error: { code: -32601, message: 'Method not found' } });
});

test('an incoming batch gets one array of replies; notifications none', async () => {
  const { socket, peer } = setup();
  const seen = [];
  peer.handle('echo', (p) => p);
  peer.on('tick', (p) => seen.push(p.n));
  socket.deliver([
    { jsonrpc: '2.0', method: 'tick', params: { n: 1 } },
    { jsonrpc: '2.0', id: 7, method: 'echo', params: ['x'] },
    { jsonrpc: '2.0', id: 8, method: 'missing' },
    42,
  ]);
  socket.deliver([{ jsonrpc: '2.0', method: 'tick', params: { n: 2 } }]);
  socket.deliver([]);
  await settle();
  assert.deepEqual(seen, [1, 2]);
  assert.deepEqual(socket.sent, [
    { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } }, // for []
    [
      { jsonrpc: '2.0', id: 7, result: ['x'] },
      { jsonrpc: '2.0', id: 8, error: { code: -32601, message: 'Method not found' } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } },
    ],
  ]);
});

test('notifications reach every listener in order and are never answered', async () => {
  const { socket, peer } = setup();
  const seen = [];
  peer.on('board.posted', (n) => seen.push(`a${n.id}`));
  peer.on('board.posted', (n) => seen.push(`b${n.id}`));
  socket.deliver({ jsonrpc: '2.0', method: 'board.posted', params: { id: 1 } });
  socket.deliver({ jsonrpc: '2.0', method: 'unheard.of' });
  socket.deliver({ jsonrpc: '2.0', method: 'board.posted', params: { id: 2 } });
  await settle();
  assert.deepEqual(seen, ['a1', 'b1', 'a2', 'b2']);
  assert.deepEqual(socket.sent, []);
});

test('garbage gets a parse error; a bad request an invalid request error', async () => {
  const { socket } = setup();
  socket.deliver('{not json');
  socket.deliver({ jsonrpc: '1.0', id: 9, method: 'x' });
  await settle();
  assert.deepEqual(socket.sent, [
    { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } },
    { jsonrpc: '2.0', id: 9, error: { code: -32600, message: 'Invalid Request' } },
  ]);
});

test('closing rejects pending and later calls and calls onclose', async () => {
  const { socket, peer } = setup();
  let closed = 0;
  peer.onclose = () => closed++;
  const pending = peer.call('wait');
  socket.close();
  await assert.rejects(pending, /connection closed/);
  await assert.rejects(peer.call('late'), /connection closed/);
  assert.equal(closed, 1);
  assert.equal(socket.sent.length, 1, 'nothing is sent once closed');
});

test('a reply nobody waits for is dropped', async () => {
  const { socket, peer } = setup();
  const warn = console.warn;
  let warned = 0;
  console.warn = () => warned++;
  try {
    socket.deliver({ jsonrpc: '2.0', id: 99, result: 1 });
  } finally {
    console.warn = warn;
  }
  assert.equal(warned, 1);
  assert.equal(socket.sent.length, 0);
  assert.equal(peer.pending.size, 0);
});

// fakeServer hands out a Peer on a new FakeSocket for every open(), and
// can refuse the next ones.
function fakeServer() {
  const s = { sockets: [], refuse: 0, opens: 0 };
  s.open = async () => {
    s.opens++;
    if (s.refuse > 0) {
      s.refuse--;
      throw new Error('cannot connect');
    }
    const socket = new FakeSocket();
    s.sockets.push(socket);
    return new Peer(socket);
  };
  return s;
}

const until = async (cond, what) => {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(cond(), `timed out waiting for ${what}`);
};

test('Reconnecting: a drop rejects the calls in flight, reconnects with backoff, runs onconnect again, keeps handlers and listeners', async () => {
  const server = fakeServer();
  const states = [];
  let onconnects = 0;
  let prepares = 0;
  const rpc = new Reconnecting('ws://x/rpc', {
    open: server.open,
    prepare: async () => { prepares++; },
    onconnect: async () => { onconnects++; },
    onstate: (s, info) => states.push(info ? `${s} ${info.attempt}` : s),
    minDelay: 4,
    maxDelay: 16,
  });
  const heard = [];
  rpc.handle('page.confirm', () => true);
  rpc.on('board.posted', (n) => heard.push(n.id));
  await rpc.start();
  assert.deepEqual(states, ['connecting', 'connected']);

  const first = server.sockets[0];
  first.deliver({ jsonrpc: '2.0', method: 'board.posted', params: { id: 1 } });
  const inFlight = rpc.call('board.list');
  server.refuse = 1; // the first reconnection attempt fails
  first.close();
  await assert.rejects(inFlight, /connection closed before the reply came/);
  await assert.rejects(rpc.call('board.list'), /not connected \(reconnecting\)/);

  await until(() => server.sockets.length === 2 && states.at(-1) === 'connected', 'the reconnection');
  assert.deepEqual(states, ['connecting', 'connected', 'reconnecting 1', 'connecting', 'reconnecting 2', 'connecting', 'connected']);
  assert.equal(onconnects, 2);
  assert.equal(prepares, 2);
  assert.equal(rpc.reconnects, 1);

  const second = server.sockets[1];
  second.deliver({ jsonrpc: '2.0', method: 'board.posted', params: { id: 2 } });
  second.deliver({ jsonrpc: '2.0', id: 7, method: 'page.confirm', params: {} });
  await settle();
  assert.deepEqual(heard, [1, 2], 'listeners carried over');
  assert.deepEqual(second.sent.at(-1), { jsonrpc: '2.0', id: 7, result: true }, 'handlers carried over');
  const call = rpc.call('board.stats');
  const sent = second.sent.at(-1);
  second.deliver({ jsonrpc: '2.0', id: sent.id, result: { notes: 0 } });
  assert.deepEqual(await call, { notes: 0 });

  rpc.close();
  assert.equal(states.at(-1), 'closed');
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(server.sockets.length, 2, 'no reconnection after close');
});

test('Reconnecting: a connection that drops during onconnect is not used, and another is tried', async () => {
  const server = fakeServer();
  let n = 0;
  const rpc = new Reconnecting('ws://x/rpc', {
    open: server.open,
    onconnect: async (peer) => {
      n++;
      if (n === 2) { // the first reconnection drops while it fetches the state
        const p = peer.call('board.list');
        peer.socket.close();
        await p;
      }
    },
    minDelay: 2,
    maxDelay: 4,
  });
  await rpc.start();
  server.sockets[0].close();
  await until(() => server.sockets.length === 3 && rpc.peer !== null, 'a usable connection');
  assert.equal(rpc.peer.socket, server.sockets[2]);
  assert.equal(rpc.reconnects, 1);
  rpc.close();
});
