// jsonrpc.js's handling of replies and of the other side's cancels, raw
// JSON in, against a fake socket (fakews.mjs): node --test replies.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, RPCError, InvalidResponseError, LSPCancel, MCPCancel } from '../jsonrpc.js';
import { fakeWebSocket, settle } from './fakews.mjs';

async function started(t, options = {}) {
  const WS = fakeWebSocket();
  const rpc = new Client('ws://fake/rpc', { WebSocket: WS, reconnect: false, ...options });
  t.after(() => rpc.close());
  await rpc.start();
  return { rpc, socket: WS.last };
}

// Issue 30, finding 17: the cancel of a served call finds it whatever its
// id: integers past 2^53 (which JSON.parse rounds), 1.0, strings; in
// both dialects.
for (const [name, dialect, member] of [['LSP', LSPCancel, 'id'], ['MCP', MCPCancel, 'requestId']]) {
  test(`the other side's cancel aborts the served call, big and odd ids too (${name})`, async (t) => {
    const { rpc, socket } = await started(t, { cancel: dialect });
    const aborted = new Set();
    rpc.handle('wait', (_, { id, signal }) => new Promise((resolve) => {
      signal.addEventListener('abort', () => { aborted.add(JSON.stringify(id)); resolve('aborted'); });
    }));
    const ids = ['9007199254740993', '18446744073709551615', '1.0', '"s-1"'];
    for (const id of ids) socket.deliver(`{"jsonrpc":"2.0","id":${id},"method":"wait"}`);
    // 9007199254740992 is another call's id, which only rounding would make the same.
    socket.deliver('{"jsonrpc":"2.0","id":9007199254740992,"method":"wait"}');
    for (const id of ids) socket.deliver(`{"jsonrpc":"2.0","method":"${dialect.method}","params":{"${member}":${id}}}`);
    await settle();
    assert.equal(aborted.size, 4, `${aborted.size} of 4 served calls aborted by their cancel`);
    assert.equal(socket.sent.filter((s) => s.includes('"result":"aborted"')).length, 4);
    assert.ok(socket.sent.every((s) => !s.includes('9007199254740992')), 'the call with the id only rounding makes the same was cancelled');
  });
}

// Issue 30, finding 18: a reply whose "error" is not an error object, or
// that has neither result nor error, rejects its call; "error": null
// beside a result is a result.
test('a malformed error reply rejects the call', async (t) => {
  const { rpc, socket } = await started(t);
  const outcome = async (rest) => {
    const call = rpc.call('m').then((v) => ({ ok: v }), (e) => e);
    const id = JSON.parse(socket.sent.at(-1)).id;
    socket.deliver(`{"jsonrpc":"2.0","id":"${id}"${rest}}`);
    return call;
  };
  for (const rest of [',"error":"boom"', ',"error":null', ',"error":42', ',"error":[1]', ',"error":{"message":"no code"}', '']) {
    const got = await outcome(rest);
    assert.ok(got instanceof InvalidResponseError, `a reply with ${rest || 'nothing'}: ${JSON.stringify(got)}, want an InvalidResponseError`);
    assert.equal(got.received.id, JSON.parse(socket.sent.at(-1)).id);
  }
  assert.deepEqual(await outcome(',"error":null,"result":5'), { ok: 5 });
  const e = await outcome(',"error":{"code":-32050,"message":"refused","data":{"n":1}}');
  assert.ok(e instanceof RPCError && e.code === -32050 && e.message === 'refused' && e.data.n === 1);
});
