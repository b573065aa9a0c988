// Drives the conformance server (examples/conformance) with the LSP client
// library vscode-jsonrpc over header framing.
//
//   go build -o /tmp/conformance ./examples/conformance
//   cd .ci/conformance && npm ci && node lsp-client.mjs /tmp/conformance
//
// vscode-jsonrpc 10 exports its Node entry point as 'vscode-jsonrpc/node'
// (the older 'vscode-jsonrpc/node.js' path is not in its exports map).
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  CancellationTokenSource,
  ResponseError,
} from 'vscode-jsonrpc/node';

const bin = process.argv[2];
if (!bin) {
  console.error('usage: node lsp-client.mjs /path/to/conformance');
  process.exit(2);
}

const child = spawn(bin, ['-transport', 'stdio', '-framing', 'header'], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
child.on('error', (err) => {
  console.error(`lsp-client: cannot run ${bin}: ${err.message}`);
  process.exit(1);
});

// Whatever happens, give up after a minute.
setTimeout(() => {
  console.error('lsp-client: hard timeout');
  child.kill('SIGKILL');
  process.exit(1);
}, 60_000).unref();

// vscode-jsonrpc reports protocol trouble (an unmatched response, a bad
// message) through its logger: collect errors to fail on them.
const loggedErrors = [];
const logger = {
  error: (m) => loggedErrors.push(String(m)),
  warn: (m) => console.error(`vscode-jsonrpc warn: ${m}`),
  info: () => {},
  log: () => {},
};
const conn = createMessageConnection(
  new StreamMessageReader(child.stdout),
  new StreamMessageWriter(child.stdin),
  logger,
);
conn.onError(([err]) => loggedErrors.push(`connection error: ${err?.message ?? err}`));
const ticks = [];
conn.onNotification('tick', (p) => ticks.push(p.seq));
conn.onRequest('client/answer', (p) => ({ got: p }));
conn.listen();

let passed = 0;
let failed = 0;

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function check(name, fn) {
  try {
    await withTimeout(fn(), 5000, name);
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err?.stack ?? err}`);
  }
}

// rejects awaits a request that must fail with a ResponseError of code.
async function rejects(promise, code) {
  let result;
  try {
    result = await promise;
  } catch (err) {
    assert.ok(err instanceof ResponseError, `want a ResponseError, got ${err}`);
    assert.equal(err.code, code, `error ${err.code} ${err.message}`);
    return err;
  }
  throw new Error(`resolved with ${JSON.stringify(result)}, want error ${code}`);
}

await check('subtract positional', async () => {
  assert.equal(await conn.sendRequest('subtract', 42, 23), 19);
});
await check('subtract named', async () => {
  assert.equal(await conn.sendRequest('subtract', { minuend: 42, subtrahend: 23 }), 19);
});
await check('sum', async () => {
  assert.equal(await conn.sendRequest('sum', 1, 2, 4.5), 7.5);
});
await check('get_data', async () => {
  assert.deepEqual(await conn.sendRequest('get_data'), ['hello', 5]);
});
await check('echo', async () => {
  const params = { a: [1, 'two', null, { b: true }], s: 'é"<&>', n: -0.5 };
  assert.deepEqual(await conn.sendRequest('echo', params), params);
});
await check('fail rejects with -32001 and data', async () => {
  const err = await rejects(conn.sendRequest('fail', { why: ['because', 1] }), -32001);
  assert.equal(err.message, 'fail');
  assert.deepEqual(err.data, { why: ['because', 1] });
});
await check('foobar rejects with -32601', async () => {
  await rejects(conn.sendRequest('foobar', { x: 1 }), -32601);
});
await check('notification update gets no reply', async () => {
  await conn.sendNotification('update', 1, 2, 3, 4, 5);
  assert.equal(await conn.sendRequest('subtract', 3, 1), 2);
  assert.deepEqual(loggedErrors, []);
});
await check('callback to the client', async () => {
  const result = await conn.sendRequest('callback', { method: 'client/answer', params: { x: [1, 'two'] } });
  assert.deepEqual(result, { got: { x: [1, 'two'] } });
});
await check('notify_me sends 3 notifications in order before the reply', async () => {
  ticks.length = 0;
  assert.equal(await conn.sendRequest('notify_me', { method: 'tick', count: 3 }), 3);
  assert.deepEqual(ticks, [0, 1, 2]);
});
await check('$/cancelRequest cancels sleep with -32800', async () => {
  const source = new CancellationTokenSource();
  const started = Date.now();
  setTimeout(() => source.cancel(), 100);
  await rejects(withTimeout(conn.sendRequest('sleep', { ms: 5000 }, source.token), 2000, 'sleep'), -32800);
  assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
});
await check('server exits 0 when its stdin closes', async () => {
  assert.deepEqual(loggedErrors, []);
  conn.dispose();
  child.stdin.end();
  assert.deepEqual(await withTimeout(exited, 3000, 'exit'), { code: 0, signal: null });
});

if (child.exitCode === null && child.signalCode === null) {
  child.kill('SIGKILL');
  await exited;
}
console.log(`lsp-client: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
