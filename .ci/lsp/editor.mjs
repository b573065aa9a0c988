// Drives the language server examples/lsp as VS Code would, with VS Code's
// own JSON-RPC library, vscode-jsonrpc, over the server's stdin and stdout
// (LSP header framing).
//
//   go build -o /tmp/lsp ./examples/lsp
//   cd .ci/lsp && npm ci && node editor.mjs /tmp/lsp
//
// It initializes, opens a document, sends 50 didChange notifications in a
// row (each edit computed from the text the ones before left), asks for a
// hover whose answer depends on all of them, waits for the diagnostics of
// the final version, cancels a slow request, follows a slow request's
// work-done progress ($/progress against its workDoneToken, and against a
// token the server creates with window/workDoneProgress/create), streams
// document symbols as partial results (checking that every part arrives
// before the final result), then sends shutdown and exit without waiting
// between them and checks the exit status is 0. The editor's model of the text is a JavaScript
// string, so its positions are UTF-16 offsets as LSP defines them, computed
// independently of the server's Go code.
import { spawn } from 'node:child_process';
import * as rpc from 'vscode-jsonrpc/node';

const bin = process.argv[2];
if (!bin) {
  console.error('usage: node editor.mjs /path/to/lsp');
  process.exit(2);
}

// Whatever happens, give up after a minute.
setTimeout(() => {
  console.error('lsp-editor: hard timeout');
  child.kill('SIGKILL');
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

// withTimeout rejects if p does not settle within ms.
function withTimeout(p, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
child.on('error', (err) => {
  console.error(`lsp-editor: cannot run ${bin}: ${err.message}`);
  process.exit(1);
});

// vscode-jsonrpc reports protocol trouble (an unmatched response, a bad
// message) through its logger: collect the errors to fail on them.
const protocolErrors = [];
const logger = {
  error: (m) => protocolErrors.push(String(m)),
  warn: (m) => console.error(`vscode-jsonrpc warn: ${m}`),
  info: () => {},
  log: () => {},
};
const conn = rpc.createMessageConnection(
  new rpc.StreamMessageReader(child.stdout),
  new rpc.StreamMessageWriter(child.stdin),
  logger,
);
conn.onError(([err]) => protocolErrors.push(`connection error: ${err?.message ?? err}`));

const diagnostics = []; // publishDiagnostics params, as received
let diagnosticsArrived = () => {};
conn.onNotification('textDocument/publishDiagnostics', (p) => {
  diagnostics.push(p);
  diagnosticsArrived();
});
// Progress the server starts by itself: it asks for a token first.
const progressType = new rpc.ProgressType();
const created = []; // { token, kinds }
conn.onRequest('window/workDoneProgress/create', ({ token }) => {
  const c = { token, kinds: [] };
  created.push(c);
  conn.onProgress(progressType, token, (v) => c.kinds.push(v.kind));
  return null;
});
conn.listen();

// waitForDiagnostics resolves once pred holds for what has arrived.
function waitForDiagnostics(pred, ms) {
  return withTimeout(
    new Promise((resolve) => {
      diagnosticsArrived = () => pred() && resolve();
      diagnosticsArrived();
    }),
    ms,
    'diagnostics',
  );
}

// The editor's text model. JavaScript strings are UTF-16, so an index in
// the string is what LSP calls a character offset.
function positionAt(text, index) {
  const before = text.slice(0, index);
  const line = before.split('\n').length - 1;
  return { line, character: index - (before.lastIndexOf('\n') + 1) };
}
const wordPattern = /[\p{L}\p{N}\p{M}_]+/gu;
function words(text) {
  return [...text.matchAll(wordPattern)].map((m) => ({
    word: m[0],
    range: { start: positionAt(text, m.index), end: positionAt(text, m.index + m[0].length) },
  }));
}

const uri = 'file:///tmp/editor.txt';
let text = 'héllo 🙂 TODO wörld\n';
let version = 1;

// edit replaces text[start:end] (UTF-16 indexes) and returns the change.
function edit(start, end, insert) {
  const range = { start: positionAt(text, start), end: positionAt(text, end) };
  text = text.slice(0, start) + insert + text.slice(end);
  return { range, text: insert };
}

async function main() {
  const init = await withTimeout(
    conn.sendRequest('initialize', {
      processId: process.pid,
      clientInfo: { name: 'lsp-editor.mjs' },
      rootUri: null,
      capabilities: { window: { workDoneProgress: true } },
    }),
    5000,
    'initialize',
  );
  const caps = init?.capabilities ?? {};
  check(
    'initialize: incremental sync, hover, serverInfo',
    caps.textDocumentSync === 2 && caps.hoverProvider === true && typeof init.serverInfo?.name === 'string',
    JSON.stringify(init),
  );
  await conn.sendNotification('initialized', {});

  await conn.sendNotification('textDocument/didOpen', {
    textDocument: { uri, languageId: 'plaintext', version, text },
  });
  const changes = 50;
  const written = [];
  for (let i = 1; i <= changes; i++) {
    const line0End = text.indexOf('\n');
    const contentChanges = [];
    switch (i % 4) {
      case 0: // append a line, with a marker now and then
        contentChanges.push(edit(text.length, text.length, `line${i} 🙂 é${i}${i % 10 === 0 ? ' FIXME' : ''}\n`));
        break;
      case 1: // append a word to the first line
        contentChanges.push(edit(line0End, line0End, ` a${i}`));
        break;
      case 2: // prepend a word
        contentChanges.push(edit(0, 0, `b${i} `));
        break;
      case 3: { // two changes in one notification, the second after the first
        const emoji = text.indexOf('🙂') + '🙂'.length;
        contentChanges.push(edit(emoji, emoji, `x${i}`));
        contentChanges.push(edit(0, text.indexOf(' '), `c${i}`));
        break;
      }
    }
    version++;
    // Sent in a row: vscode-jsonrpc writes them in order, and nothing waits
    // for the server, or even for the writes, between them.
    written.push(conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges }));
  }

  // The hover goes at once, without waiting for any diagnostics.
  const expected = words(text);
  const target = `a${changes - 1}`; // the last word appended to line 0
  const at = text.indexOf(` ${target}\n`) + 1;
  const hoverReply = conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: positionAt(text, at + 1) });
  await Promise.all(written);
  const hover = await withTimeout(hoverReply, 5000, 'hover');
  const wantHover = `\`${target}\`\n\nThe document has ${expected.length} words.`;
  const wantRange = { start: positionAt(text, at), end: positionAt(text, at + target.length) };
  check(
    `hover after ${changes} changes: ${expected.length} words`,
    hover?.contents?.kind === 'markdown' && hover.contents.value === wantHover &&
      JSON.stringify(hover.range) === JSON.stringify(wantRange),
    `got ${JSON.stringify(hover)}, want ${JSON.stringify(wantHover)} at ${JSON.stringify(wantRange)}`,
  );

  await waitForDiagnostics(() => diagnostics.at(-1)?.version === version, 10_000);
  const versions = diagnostics.map((d) => d.version);
  check(
    `diagnostics for versions 1..${version}, in order`,
    versions.length === version && versions.every((v, i) => v === i + 1),
    `got versions ${versions.join(',')}`,
  );
  const wantDiags = expected
    .filter((w) => ['TODO', 'FIXME', 'XXX'].includes(w.word))
    .map((w) => `${w.word}@${JSON.stringify(w.range)}`);
  const gotDiags = diagnostics.at(-1).diagnostics.map((d) => `${d.code}@${JSON.stringify(d.range)}`);
  check(
    `final diagnostics: ${wantDiags.length} markers at UTF-16 positions`,
    wantDiags.length === 1 + Math.floor(changes / 20) && JSON.stringify(gotDiags) === JSON.stringify(wantDiags),
    `got ${gotDiags.join(' ')}, want ${wantDiags.join(' ')}`,
  );

  // Cancel a slow request: the server answers RequestCancelled at once.
  const cts = new rpc.CancellationTokenSource();
  const slow = conn.sendRequest('custom/slowCount', { textDocument: { uri }, delayMs: 60_000 }, cts.token);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const cancelledAt = Date.now();
  cts.cancel();
  try {
    const r = await withTimeout(slow, 2000, 'cancelled slowCount');
    check('cancelled slowCount is rejected with -32800', false, `resolved with ${JSON.stringify(r)}`);
  } catch (err) {
    check(
      'cancelled slowCount is rejected with -32800 within 2 s',
      err instanceof rpc.ResponseError && err.code === -32800 && Date.now() - cancelledAt <= 2000,
      `got ${err?.code} ${err?.message}`,
    );
  }
  const count = await withTimeout(
    conn.sendRequest('custom/slowCount', { textDocument: { uri }, delayMs: 10 }),
    5000,
    'slowCount',
  );
  check('still serving: slowCount', count?.words === expected.length, JSON.stringify(count));

  // Work-done progress against the editor's own token: every report
  // arrives before the result.
  const wdKinds = [];
  let wdAtResult = -1;
  const wd = conn.onProgress(progressType, 'editor-wd-1', (v) => wdKinds.push(v.kind));
  const counted = await withTimeout(
    conn.sendRequest('custom/slowCount', { textDocument: { uri }, delayMs: 40, workDoneToken: 'editor-wd-1' })
      .then((r) => { wdAtResult = wdKinds.length; return r; }),
    5000,
    'slowCount with progress',
  );
  wd.dispose();
  check(
    'slowCount: work-done progress begin, reports, end, all before the result',
    counted?.words === expected.length && wdAtResult === 5 && wdKinds.join(' ') === 'begin report report report end',
    `got ${wdKinds.join(' ')} (${wdAtResult} before the result), ${JSON.stringify(counted)}`,
  );
  // Without a token, the server creates one (window/workDoneProgress/create).
  const before = created.length;
  await withTimeout(conn.sendRequest('custom/slowCount', { textDocument: { uri }, delayMs: 10 }), 5000, 'slowCount, server token');
  const c = created.at(-1);
  check(
    'slowCount without a token: the server creates one, then reports against it',
    created.length === before + 1 && c.kinds.join(' ') === 'begin report report report end',
    JSON.stringify(created.slice(before)),
  );

  // Partial results: documentSymbol streams the words as symbols, and every
  // part must arrive before the (empty) final result.
  const parts = [];
  let partsAtResult = -1;
  const pr = conn.onProgress(progressType, 'editor-symbols-1', (part) => parts.push(part));
  const finalSymbols = await withTimeout(
    conn.sendRequest('textDocument/documentSymbol', { textDocument: { uri }, partialResultToken: 'editor-symbols-1' })
      .then((r) => { partsAtResult = parts.length; return r; }),
    5000,
    'documentSymbol',
  );
  pr.dispose();
  const streamed = parts.flat().map((s) => s.name);
  const wantParts = Math.ceil(expected.length / 10);
  check(
    `documentSymbol: ${expected.length} symbols in ${wantParts} partial results, all before the final result`,
    Array.isArray(finalSymbols) && finalSymbols.length === 0 && partsAtResult === wantParts &&
      JSON.stringify(streamed) === JSON.stringify(expected.map((w) => w.word)),
    `${partsAtResult} of ${parts.length} parts before the result; ${streamed.length} symbols`,
  );

  // shutdown, then exit at once, without waiting for the reply: LSP says
  // exit status 0 once shutdown was received.
  const shutReply = conn.sendRequest('shutdown');
  const exitSent = conn.sendNotification('exit');
  const shut = await withTimeout(shutReply.catch((err) => `error ${err?.message}`), 5000, 'shutdown');
  await exitSent;
  check('shutdown returns null (or the server exited first)', shut === null || /closed|disposed|ended/i.test(String(shut)), JSON.stringify(shut));
  const { code, signal } = await withTimeout(exited, 5000, 'exit');
  check('exit status 0 after shutdown, exit sent without waiting', code === 0, `code ${code}, signal ${signal}`);

  check('no protocol errors', protocolErrors.length === 0, protocolErrors.join('; '));
}

try {
  await main();
} catch (err) {
  failed++;
  console.log(`FAIL ${err?.stack ?? err}`);
}
conn.dispose();
if (child.exitCode === null) child.kill('SIGKILL');
console.log(`lsp-editor: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
