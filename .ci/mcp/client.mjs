// Drives examples/mcptool with the official MCP TypeScript SDK, as a
// desktop agent would: Client over StdioClientTransport, which starts the
// server as a child and speaks newline-delimited JSON-RPC on its stdin and
// stdout.
//
//   go build -o /tmp/mcptool ./examples/mcptool
//   cd .ci/mcp && npm ci && node client.mjs /tmp/mcptool
//
// It initializes (declaring roots and sampling), lists the tools, calls
// each one and checks its result, answers the server's roots/list with a
// temporary directory and its sampling/createMessage with a deterministic
// stub model, counts the progress notifications of summarize_file, and
// aborts a long wait: the call must reject at once, and the tool must say,
// in a notifications/message and on its stderr, that it stopped.
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  LATEST_PROTOCOL_VERSION,
} from '@modelcontextprotocol/sdk/types.js';

const bin = process.argv[2];
if (!bin) {
  console.error('usage: node client.mjs /path/to/mcptool');
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
client.onerror = (err) => protocolErrors.push(err.message);

const transport = new StdioClientTransport({ command: bin, args: ['-log-level', 'info'], stderr: 'pipe' });
let stderr = '';
transport.stderr.on('data', (b) => (stderr += b));

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
} catch (err) {
  check('session', false, err.stack ?? String(err));
} finally {
  await client.close();
  rmSync(base, { recursive: true, force: true });
}

// MCP says a server should not answer a call it was told to cancel, and
// jsonrpc.MCPCancel has the Peer send no reply to it: any protocol error
// the SDK reports (a late reply to an unknown id among them) is a failure.
check('no protocol errors', protocolErrors.length === 0, protocolErrors.join('; '));

console.log(`\n${passed} passed, ${failed} failed`);
if (failed > 0) {
  console.log(`\nmcptool's stderr:\n${stderr}`);
}
process.exit(failed > 0 ? 1 : 0);
