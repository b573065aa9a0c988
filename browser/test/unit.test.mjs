// Wire-level tests of jsonrpc.js against a fake WebSocket (no server):
// raw JSON in, raw JSON out. node --test unit.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '../jsonrpc.js';
import { fakeWebSocket, settle } from './fakews.mjs';

const FakeWS = fakeWebSocket();

async function started(t) {
  const rpc = new Client('ws://fake/rpc', { WebSocket: FakeWS, reconnect: false });
  t.after(() => rpc.close());
  await rpc.start();
  return { rpc, socket: FakeWS.last };
}

test('replies carry the id back byte for byte: big integers, 1.0, strings, null', async (t) => {
  const { rpc, socket } = await started(t);
  rpc.handle('m', () => 'ok');
  for (const id of ['9007199254740993', '1.0', '-0', '1e3', '"9007199254740993"', '"x\\"y"', 'null', '12345678901234567890123']) {
    socket.deliver(`{"jsonrpc":"2.0","method":"m","params":{"id":1,"x":[{"id":2}]},"id":${id}}`);
  }
  await settle();
  assert.deepEqual(socket.sent.map((s) => s.match(/"id":(.*),"result"/)[1]),
    ['9007199254740993', '1.0', '-0', '1e3', '"9007199254740993"', '"x\\"y"', 'null', '12345678901234567890123']);
});

test('a batch from the other side: one array of replies, each id as it came', async (t) => {
  const { rpc, socket } = await started(t);
  rpc.handle('m', (p) => p);
  socket.deliver(' [ {"id": 9007199254740993 , "jsonrpc":"2.0","method":"m","params":[1]}, {"jsonrpc":"2.0","method":"m","params":[2]}, 5, {"jsonrpc":"2.0","method":"x","id":18446744073709551616} ] ');
  await settle();
  assert.deepEqual(socket.sent, ['[{"jsonrpc":"2.0","id":9007199254740993,"result":[1]},' +
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}},' +
    '{"jsonrpc":"2.0","id":18446744073709551616,"error":{"code":-32601,"message":"Method not found"}}]']);
});

test('a packed batch of notifications (Options.PackNotifications): each handled in order, nothing sent back', async (t) => {
  const { rpc, socket } = await started(t);
  const heard = [];
  rpc.on('n', (p) => heard.push(p[0]));
  const packed = (from, to) => `[${Array.from({ length: to - from }, (_, i) => `{"jsonrpc":"2.0","method":"n","params":[${from + i}]}`).join(',')}]`;
  socket.deliver('{"jsonrpc":"2.0","method":"n","params":[0]}');
  socket.deliver(packed(1, 65));
  socket.deliver('{"jsonrpc":"2.0","method":"n","params":[65]}');
  socket.deliver(packed(66, 100));
  await settle();
  assert.deepEqual(heard, Array.from({ length: 100 }, (_, i) => i));
  assert.deepEqual(socket.sent, []);
});

test('a reply matches only the exact id sent: our ids are strings, a number never matches', async (t) => {
  const { rpc, socket } = await started(t);
  let done = false;
  const call = rpc.call('m', [], { timeout: 0 }).then((v) => { done = true; return v; });
  const id = JSON.parse(socket.sent[0]).id;
  assert.equal(typeof id, 'string');
  socket.deliver(`{"jsonrpc":"2.0","id":${Number(id)},"result":"wrong"}`);
  await settle();
  assert.equal(done, false);
  socket.deliver(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":"right"}`);
  assert.equal(await call, 'right');
});

test('parse errors, invalid requests, empty batches, notifications never answered', async (t) => {
  const { rpc, socket } = await started(t);
  const heard = [];
  rpc.on('n', (p) => heard.push(p));
  socket.deliver('{nope');
  socket.deliver('[]');
  socket.deliver('{"jsonrpc":"2.0","method":"m","params":3,"id":4}');
  socket.deliver('{"jsonrpc":"1.0","method":"m","id":5}');
  socket.deliver('{"jsonrpc":"2.0","method":"n","params":{"a":1}}');
  socket.deliver('[{"jsonrpc":"2.0","method":"n","params":[2]}]');
  socket.deliver('{"jsonrpc":"2.0","params":[3]}'); // neither a request nor a reply
  socket.deliver('{"jsonrpc":"2.0","method":"n","id":{"a":1}}'); // an id must be a string, number or null
  socket.deliver('{"jsonrpc":"2.0","method":7}'); // invalid, without an id: still answered
  await settle();
  assert.deepEqual(socket.sent, [
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
    '{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid Request"}}',
    '{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request"}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
  ]);
  assert.deepEqual(heard, [{ a: 1 }, [2]]);
});

test('subscribe: a live message before the subscribe reply is buffered and deduped', async (t) => {
  const { rpc, socket } = await started(t);
  const seen = [];
  const sub = rpc.subscribe('t', { onMessage: (d, m) => seen.push([d, m.seq]) });
  const req = JSON.parse(socket.sent[0]);
  assert.deepEqual(req.params, { topic: 't' });
  // seq 6 arrives live before the reply whose snapshot ends at 5.
  socket.deliver('{"jsonrpc":"2.0","method":"topic.message","params":{"topic":"t","epoch":"e","seq":6,"data":"six"}}');
  socket.deliver(`{"jsonrpc":"2.0","id":"${req.id}","result":{"topic":"t","epoch":"e","seq":5,"recovered":false,"messages":[]}}`);
  await sub;
  socket.deliver('{"jsonrpc":"2.0","method":"topic.message","params":{"topic":"t","epoch":"e","seq":6,"data":"dup"}}');
  socket.deliver('{"jsonrpc":"2.0","method":"topic.message","params":{"topic":"t","epoch":"e","seq":7,"data":"seven"}}');
  assert.deepEqual(seen, [['six', 6], ['seven', 7]]);
});

test('subscribe: past maxBuffered, live messages held during a subscribe are dropped and fetched again with since', async (t) => {
  const rpc = new Client('ws://fake/rpc', { WebSocket: FakeWS, reconnect: false, maxBuffered: 2 });
  t.after(() => rpc.close());
  await rpc.start();
  const socket = FakeWS.last;
  const seen = [];
  const sub = rpc.subscribe('t', { onMessage: (d) => seen.push(d) });
  const first = JSON.parse(socket.sent[0]);
  for (const seq of [2, 3, 4]) { // 4 is one too many
    socket.deliver(`{"jsonrpc":"2.0","method":"topic.message","params":{"topic":"t","epoch":"e","seq":${seq},"data":${seq}}}`);
  }
  socket.deliver(`{"jsonrpc":"2.0","id":"${first.id}","result":{"topic":"t","epoch":"e","seq":1,"recovered":false,"messages":[]}}`);
  await sub;
  assert.deepEqual(seen, [2, 3]);
  const again = JSON.parse(socket.sent[1]);
  assert.deepEqual(again.params, { topic: 't', since: { epoch: 'e', seq: 3 } });
  socket.deliver(`{"jsonrpc":"2.0","id":"${again.id}","result":{"topic":"t","epoch":"e","seq":4,"recovered":true,"messages":[{"seq":4,"data":4}]}}`);
  await settle();
  assert.deepEqual(seen, [2, 3, 4]);
});

test('subscribe: a re-subscription that fails for now (-32603) is tried again; a refusal ends it with onError', async (t) => {
  const rpc = new Client('ws://fake/rpc', { WebSocket: FakeWS, reconnect: false, minDelay: 5, maxDelay: 10 });
  t.after(() => rpc.close());
  await rpc.start();
  const socket = FakeWS.last;
  const seen = [];
  const errors = [];
  const reply = (id, result) => socket.deliver(JSON.stringify({ jsonrpc: '2.0', id, result }));
  const fail = (id, code) => socket.deliver(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message: 'x' } }));
  const last = () => JSON.parse(socket.sent.at(-1));
  const sub = rpc.subscribe('t', { onMessage: (d) => seen.push(d), onError: (e) => errors.push(e.code) });
  reply(last().id, { topic: 't', epoch: 'e', seq: 1, recovered: false, messages: [] });
  await sub;
  socket.deliver('{"jsonrpc":"2.0","method":"topic.message","params":{"topic":"t","epoch":"e","seq":3,"data":3}}'); // a gap
  const gap = last();
  assert.deepEqual(gap.params.since, { epoch: 'e', seq: 1 });
  fail(gap.id, -32603);
  await new Promise((r) => setTimeout(r, 30));
  const retry = last();
  assert.notEqual(retry.id, gap.id, 'subscribed again after the delay');
  assert.deepEqual(retry.params.since, { epoch: 'e', seq: 1 });
  reply(retry.id, { topic: 't', epoch: 'e', seq: 3, recovered: true, messages: [{ seq: 2, data: 2 }, { seq: 3, data: 3 }] });
  await settle();
  assert.deepEqual(seen, [2, 3]);
  socket.deliver('{"jsonrpc":"2.0","method":"topic.message","params":{"topic":"t","epoch":"e","seq":5,"data":5}}');
  fail(last().id, -32001);
  await settle();
  assert.deepEqual(errors, [-32001]);
  socket.deliver('{"jsonrpc":"2.0","method":"topic.message","params":{"topic":"t","epoch":"e","seq":6,"data":6}}');
  assert.deepEqual(seen, [2, 3], 'the subscription ended');
});
