// Drives examples/mcptool with the official MCP TypeScript SDK, as a
// desktop agent would: Client over StdioClientTransport, which starts the
// server as a child and speaks newline-delimited JSON-RPC on its stdin and
// stdout; or, with --http, Client over StreamableHTTPClientTransport
// against mcptool -http, as a remote agent would.
//
//   go build -o /tmp/mcptool ./examples/mcptool
//   cd .ci/mcp && npm ci && node client.mjs /tmp/mcptool
//   node client.mjs --http /tmp/mcptool
//
// Over HTTP the SDK reaches the server through a TCP proxy of this
// script's, which cuts every connection in the middle of a call once: the
// SDK must resume the call's event stream (GET with Last-Event-ID) and get
// the rest of its progress and its result, nothing lost, nothing twice. It
// also checks the session id, a foreign Origin (403), and that a session
// ended with DELETE is gone (404).
//
// It initializes (declaring roots and sampling), lists the tools, calls
// each one and checks its result, answers the server's roots/list with a
// temporary directory and its sampling/createMessage with a deterministic
// stub model, counts the progress notifications of summarize_file, and
// aborts a long wait: the call must reject at once, and the tool must say,
// in a notifications/message and on its stderr, that it stopped.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  LATEST_PROTOCOL_VERSION,
} from '@modelcontextprotocol/sdk/types.js';

const overHTTP = process.argv[2] === '--http';
const bin = process.argv[overHTTP ? 3 : 2];
if (!bin) {
  console.error('usage: node client.mjs [--http] /path/to/mcptool');
  process.exit(2);
}

// Whatever happens, give up after a minute.
setTimeout(() => {
  console.error('mcp-client: hard timeout');
  process.exit(1);
}, 60_000).unref();

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}${detail ? `: ${detail}` : ''}`);
  }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// until polls cond every 10 ms for up to ms.
async function until(cond, ms) {
  for (const end = Date.now() + ms; !cond() && Date.now() < end; ) await sleep(10);
  return cond();
}
const text = (res) => (res.content ?? []).map((c) => c.text).join('');

// The root the client lists, with a secret beside it.
const base = mkdtempSync(join(tmpdir(), 'mcp-client-'));
const root = join(base, 'root');
mkdirSync(join(root, 'docs'), { recursive: true });
writeFileSync(join(root, 'notes.txt'), 'Buy milk.\nCall the plumber about the leak.\nShip the release.\n');
writeFileSync(join(root, 'docs', 'guide.md'), '# Guide\n\nStart with go run.\n');
writeFileSync(join(base, 'secret.txt'), 'not for tools\n');

const client = new Client(
  { name: 'peerwire-ci', version: '1.0.0' },
  { capabilities: { sampling: {}, roots: { listChanged: true } } },
);

let rootsAsked = 0;
client.setRequestHandler(ListRootsRequestSchema, async () => {
  rootsAsked++;
  return { roots: [{ uri: pathToFileURL(root).href, name: 'ci root' }] };
});

// The stub model: its answer depends only on the request, so the test can
// predict it, and it shows that the file's text reached the model.
const samples = [];
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  samples.push(req.params);
  const prompt = req.params.messages.at(-1).content.text;
  const words = prompt.trim().split(/\s+/);
  return {
    role: 'assistant',
    model: 'stub-model-1',
    stopReason: 'endTurn',
    content: { type: 'text', text: `stub summary: ${words.length} words, the last "${words.at(-1)}"` },
  };
});

const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  logs.push(n.params.data);
});
const protocolErrors = [];
let errorsBeforeDelete = Infinity; // set by httpChecks before its DELETE
client.onerror = (err) => protocolErrors.push(err.message);

let stderr = '';
let transport;
let child; // mcptool -http, started here
let proxy; // the cutting proxy in front of it
if (overHTTP) {
  // Over HTTP -root is required: it bounds the roots a client lists (ours is within it).
  child = spawn(bin, ['-log-level', 'info', '-http', '127.0.0.1:0', '-root', root], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (b) => (stderr += b));
  const found = await until(() => /serving MCP at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.test(stderr), 10_000);
  if (!found) {
    console.error(`mcp-client: mcptool -http printed no address:\n${stderr}`);
    child.kill('SIGKILL');
    process.exit(1);
  }
  const target = new URL(stderr.match(/serving MCP at (\S+)/)[1]);
  proxy = await cuttingProxy(Number(target.port));
  transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${proxy.port}/mcp`), {
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 2, maxRetries: 5 },
  });
} else {
  transport = new StdioClientTransport({ command: bin, args: ['-log-level', 'info'], stderr: 'pipe' });
  transport.stderr.on('data', (b) => (stderr += b));
}

// cuttingProxy forwards 127.0.0.1:<its port> to 127.0.0.1:port, and its
// cut() destroys every connection it carries, as a dropped link would.
async function cuttingProxy(port) {
  const socks = new Set();
  const srv = createServer((down) => {
    const up = connect(port, '127.0.0.1');
    for (const s of [down, up]) {
      socks.add(s);
      s.on('close', () => socks.delete(s));
      s.on('error', () => {});
    }
    down.pipe(up);
    up.pipe(down);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: srv.address().port,
    cut() {
      const n = socks.size;
      for (const s of socks) s.destroy();
      return n;
    },
    close: () => new Promise((r) => { for (const s of socks) s.destroy(); srv.close(r); }),
  };
}

try {
  await client.connect(transport);
  check('initialize: server info', client.getServerVersion()?.name === 'mcptool', JSON.stringify(client.getServerVersion()));
  check('initialize: tools capability', client.getServerCapabilities()?.tools !== undefined);
  // The SDK would have refused a version it does not support; the server
  // logs the one it agreed to (stderr is read on its own stream, so wait).
  const agreed = await until(() => stderr.includes(`agreed=${LATEST_PROTOCOL_VERSION}`), 2000);
  check(`initialize: the server agreed to ${LATEST_PROTOCOL_VERSION}`, agreed, stderr);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).join(' ');
  check('tools/list', names === 'list_files read_file summarize_file wait', names);

  await client.ping();
  check('ping', true);

  let res = await client.callTool({ name: 'list_files', arguments: {} });
  check('list_files', text(res) === 'docs/guide.md (28 bytes)\nnotes.txt (61 bytes)' && !res.isError, JSON.stringify(res));
  check('roots/list: asked once, answered by the client', rootsAsked === 1, `${rootsAsked} times`);

  res = await client.callTool({ name: 'read_file', arguments: { path: 'notes.txt' } });
  check('read_file', text(res) === 'Buy milk.\nCall the plumber about the leak.\nShip the release.\n', JSON.stringify(res));

  res = await client.callTool({ name: 'read_file', arguments: { path: '../secret.txt' } });
  check('read_file outside the root: a tool error', res.isError === true && text(res).includes('path escapes from parent'), JSON.stringify(res));

  try {
    await client.callTool({ name: 'no_such_tool', arguments: {} });
    check('unknown tool: a protocol error', false, 'the call succeeded');
  } catch (err) {
    check('unknown tool: a protocol error', err.code === -32602 && err.message.includes('unknown tool: no_such_tool'), err.message);
  }

  const progress = [];
  res = await client.callTool({ name: 'summarize_file', arguments: { path: 'notes.txt', maxTokens: 64 } }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  check('summarize_file: the sampled text is the result', text(res) === 'stub summary: 18 words, the last "release."', JSON.stringify(res));
  check('summarize_file: one sampling request, with the file and maxTokens',
    samples.length === 1 && samples[0].maxTokens === 64 && samples[0].messages[0].content.text.includes('Call the plumber'),
    JSON.stringify(samples));
  // Progress for the steps before the last; the result is the last.
  check('summarize_file: progress 1/3 (read), 2/3 (asking the model)',
    progress.map((p) => `${p.progress}/${p.total} ${p.message}`).join(', ') ===
      '1/3 read notes.txt: 61 bytes, 2/3 asking the client\'s model for a summary',
    JSON.stringify(progress));

  res = await client.callTool({ name: 'wait', arguments: { seconds: 0.2 } });
  check('wait (short)', text(res) === 'waited 200ms', JSON.stringify(res));

  // Cancellation: abort a 30 s wait after 1.5 s (one progress, at 1 s).
  const waitProgress = [];
  const ac = new AbortController();
  const started = Date.now();
  setTimeout(() => ac.abort('the user pressed stop'), 1500);
  try {
    await client.callTool({ name: 'wait', arguments: { seconds: 30 } }, undefined, {
      signal: ac.signal,
      onprogress: (p) => waitProgress.push(p),
    });
    check('wait cancelled: the call rejects', false, 'the call succeeded');
  } catch (err) {
    const took = Date.now() - started;
    check('wait cancelled: the call rejects at once', took < 3000 && String(err.message).includes('the user pressed stop'), `${err.message} after ${took} ms`);
  }
  check('wait cancelled: progress before the abort', waitProgress.length === 1 && waitProgress[0].progress === 1, JSON.stringify(waitProgress));
  const stopped = await until(() => logs.some((l) => /^wait: cancelled after [\d.]+m?s of 30s; stopped$/.test(l)), 3000);
  check('wait cancelled: the tool says it stopped (notifications/message)', stopped, JSON.stringify(logs));
  await until(() => /wait: cancelled after [\d.]+m?s of 30s; stopped/.test(stderr), 3000);
  check('wait cancelled: the tool says it stopped (stderr)', /wait: cancelled after [\d.]+m?s of 30s; stopped/.test(stderr), stderr);

  await client.ping();
  check('the server still answers after the cancellation', true);

  if (overHTTP) {
    await httpChecks();
  }
} catch (err) {
  check('session', false, err.stack ?? String(err));
} finally {
  await client.close();
  rmSync(base, { recursive: true, force: true });
  if (overHTTP) {
    await proxy.close();
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
  }
}

// MCP says a server should not answer a call it was told to cancel, and
// jsonrpc.MCPCancel has the Peer send no reply to it: any protocol error
// the SDK reports (a late reply to an unknown id among them) is a failure.
// The cut makes the SDK report its event streams' end, and any attempt
// to resume them that fails before one succeeds (undici may first reuse a
// pooled connection the cut destroyed): those are expected, no other.
const cutNotice = /^(SSE stream disconnected|fetch failed|Failed to reconnect SSE stream: fetch failed)/;
const unexpected = protocolErrors.slice(0, errorsBeforeDelete).filter((m) => !(overHTTP && cutNotice.test(m)));
check('no protocol errors', unexpected.length === 0, unexpected.join('; '));

console.log(`\n${passed} passed, ${failed} failed`);
if (failed > 0) {
  console.log(`\nmcptool's stderr:\n${stderr}`);
}
process.exit(failed > 0 ? 1 : 0);

// httpChecks runs what only Streamable HTTP has: a call whose event stream
// is cut and resumed, the session id, Origin, and DELETE.
async function httpChecks() {
  const sid = transport.sessionId;
  check('session: the server gave a session id of visible ASCII', typeof sid === 'string' && /^[\x21-\x7e]{16,}$/.test(sid), String(sid));

  // A 3 s wait reports progress at 1 s and 2 s, then returns: cut every
  // connection just after the first progress. The SDK resumes the POST's
  // stream from its last event id; progress 2 and the result must arrive
  // once each.
  const seen = [];
  let cutConns = -1;
  const res = await client.callTool({ name: 'wait', arguments: { seconds: 3 } }, undefined, {
    timeout: 20_000,
    onprogress: (p) => {
      seen.push(p.progress);
      if (p.progress === 1) cutConns = proxy.cut();
    },
  });
  check('resume: connections cut mid-call', cutConns > 0, `${cutConns} cut`);
  check('resume: the result arrives after the cut', text(res) === 'waited 3s', JSON.stringify(res));
  check('resume: every progress once, in order', seen.join(',') === '1,2', seen.join(','));
  await client.ping();
  check('resume: the session goes on after the cut', true);

  const base = `http://127.0.0.1:${proxy.port}/mcp`;
  const init = {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
  };
  let r = await fetch(base, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', origin: 'http://evil.example' },
    body: JSON.stringify(init),
  });
  await r.arrayBuffer();
  check('origin: a foreign Origin is refused with 403', r.status === 403, `status ${r.status}`);

  // From here on the session is gone on purpose: the SDK's standalone
  // stream ends with it, and its attempts to resume that stream until
  // close() (aborted then) are the SDK's business, not protocol errors.
  errorsBeforeDelete = protocolErrors.length;
  await transport.terminateSession();
  r = await fetch(base, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-session-id': sid, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'ping' }),
  });
  await r.arrayBuffer();
  check('delete: a session ended with DELETE is gone (404)', r.status === 404, `status ${r.status}`);
}
