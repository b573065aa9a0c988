// jsonrpc.js in headless Chromium, against the Go test server with package
// topic's Hub at /real (TestChromium starts it and runs: node chromium.mjs
// http://127.0.0.1:PORT). The page
// imports the module from /js/ (browser.Handler), calls, is called, aborts
// a call, subscribes, is taken offline through the DevTools protocol
// (Network.emulateNetworkConditions) while the server publishes, and once
// back online has every message exactly once, recovered with since.
// Environment: CHROMIUM_PATH (default /usr/bin/chromium). Exits 0 when
// every check passed, 1 on a failed check, 3 on the hard timeout.
import { chromium } from 'playwright-core';

const base = process.argv[2];
if (!base) {
  console.error('usage: node chromium.mjs http://127.0.0.1:PORT');
  process.exit(2);
}
const HARD_TIMEOUT_MS = 60_000;
const hardTimeout = setTimeout(() => {
  console.error(`FAIL: hard timeout: the run took over ${HARD_TIMEOUT_MS / 1000}s`);
  process.exit(3);
}, HARD_TIMEOUT_MS);

let step = 'start';
const control = async (path, body) => {
  const resp = await fetch(`${base}/control/${path}`, { method: path.startsWith('outcome') ? 'GET' : 'POST', body });
  if (!resp.ok) throw new Error(`control ${path}: ${resp.status}`);
  return resp.text();
};
const check = (ok, what, got) => {
  if (!ok) throw new Error(`${step}: ${what}; got ${JSON.stringify(got)}`);
  console.log(`ok  ${step}`);
};
// until waits for fn() in the page to be true.
const until = (page, what, fn, arg) => {
  step = what;
  return page.waitForFunction(fn, arg, { timeout: 10_000 }).then(() => console.log(`ok  ${what}`), async (e) => {
    const state = await page.evaluate(() => JSON.stringify(window.t?.state())).catch(() => 'page unavailable');
    throw new Error(`${what}: not seen within 10 s (${e.message.split('\n')[0]})\n  page: ${state}`);
  });
};

let browser;
let failed = false;
try {
  step = 'launch';
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    timeout: 30_000,
    // playwright gives the browser a fresh temporary profile (user data dir).
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  console.log(`ok  launched Chromium ${browser.version()}`);
  const context = await browser.newContext();
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`${base}/`);

  // Two clients in the page: A follows the browser's offline and online
  // events (the default); B does not, and finds the dead connection with
  // its heartbeat (rpc.ping after 300 ms of silence).
  step = 'import /js/jsonrpc.js and connect';
  await page.evaluate(async () => {
    const m = await import('/js/jsonrpc.js');
    const url = new URL('/real', location.href); // package topic's Hub
    url.protocol = 'ws:';
    const client = (options) => {
      const c = { statuses: [], messages: [], resets: [], frames: [] };
      c.rpc = new m.Client(url, {
        cancel: m.LSPCancel,
        minDelay: 100,
        maxDelay: 400,
        trace: (dir, text) => c.frames.push({ dir, msg: JSON.parse(text) }),
        ...options,
      });
      c.rpc.addEventListener('status', (e) => c.statuses.push(e.status));
      c.state = () => ({ statuses: c.statuses, messages: c.messages, resets: c.resets.length, status: c.rpc.status });
      return c;
    };
    const t = { m, A: client({}), B: client({ watchNetwork: false, heartbeat: 300 }) };
    t.rpc = t.A.rpc;
    t.rpc.handle('page.title', () => document.title);
    t.state = () => ({ A: t.A.state(), B: t.B.state(), onLine: navigator.onLine });
    window.t = t;
    await t.A.rpc.start();
    await t.B.rpc.start();
  });
  console.log(`ok  ${step}`);

  step = 'call, error reply, server calls the page';
  const got = await page.evaluate(async () => {
    const { rpc, m } = window.t;
    const echo = await rpc.call('echo', { hi: 'there' });
    const err = await rpc.call('fail').catch((e) => ({ rpc: e instanceof m.RPCError, code: e.code, message: e.message, data: e.data }));
    const title = await rpc.call('callPage', { method: 'page.title' });
    return { echo, err, title };
  });
  check(got.echo.hi === 'there' && got.err.rpc && got.err.code === -32050 && got.err.message === 'refused' &&
    got.err.data.why === 'test' && got.title === 'jsonrpc.js test page', 'unexpected results', got);

  step = 'AbortSignal: AbortError in the page, $/cancelRequest ends the Go handler';
  const aborted = await page.evaluate(async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    return window.t.rpc.call('sleep', { ms: 10_000, tag: 'chromium-abort' }, { signal: ac.signal }).catch((e) => e.name);
  });
  const outcome = await control('outcome?tag=chromium-abort');
  check(aborted === 'AbortError' && outcome === 'cancelled', 'want AbortError and cancelled', { aborted, outcome });

  step = 'subscribe';
  await page.evaluate(async () => {
    for (const c of [window.t.A, window.t.B]) {
      await c.rpc.subscribe('news', {
        onMessage: (data, meta) => c.messages.push([data, meta.seq]),
        onReset: (info) => c.resets.push(info),
      });
    }
  });
  for (let i = 1; i <= 3; i++) await control('publish?topic=news&real=1', JSON.stringify(`n${i}`));
  await until(page, 'three live messages each', () => window.t.A.messages.length === 3 && window.t.B.messages.length === 3);

  step = 'offline (DevTools Network.emulateNetworkConditions)';
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: true, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  console.log(`ok  ${step}`);
  await until(page, 'A: the offline event ends its connection', () => window.t.A.statuses.includes('reconnecting'));
  await until(page, 'B: its heartbeat finds the connection dead', () => window.t.B.statuses.includes('reconnecting'));
  for (let i = 4; i <= 6; i++) await control('publish?topic=news&real=1', JSON.stringify(`n${i}`));
  await until(page, 'attempts to connect fail while offline', () =>
    [window.t.A, window.t.B].every((c) => c.statuses.filter((s) => s === 'reconnecting').length >= 2));
  const offline = await page.evaluate(() => window.t.state());
  step = 'nothing arrives while offline';
  check(offline.A.messages.length === 3 && offline.B.messages.length === 3 && offline.A.status !== 'connected' &&
    offline.B.status !== 'connected' && offline.onLine === false, 'want 3 messages each, not connected', offline);

  step = 'back online';
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  console.log(`ok  ${step}`);
  await until(page, 'the messages published while offline, recovered by both', () =>
    window.t.A.messages.length === 6 && window.t.B.messages.length === 6);
  await control('publish?topic=news&real=1', JSON.stringify('n7'));
  await until(page, 'and live ones after', () => window.t.A.messages.length === 7 && window.t.B.messages.length === 7);
  for (const who of ['A', 'B']) {
    const after = await page.evaluate((w) => {
      const c = window.t[w];
      const subs = c.frames.filter((f) => f.dir === 'out' && f.msg.method === 'topic.subscribe');
      const last = subs.at(-1).msg;
      const reply = c.frames.find((f) => f.dir === 'in' && f.msg.id === last.id)?.msg.result;
      return { ...c.state(), since: last.params.since, recovered: reply?.recovered };
    }, who);
    step = `${who}: exactly once, in order, recovered with since, no reset`;
    check(JSON.stringify(after.messages) === JSON.stringify([1, 2, 3, 4, 5, 6, 7].map((i) => [`n${i}`, i])) &&
      after.resets === 1 && after.since?.seq === 3 && after.recovered === true && after.status === 'connected',
    'want n1..n7 once each, one reset, since.seq 3, recovered', after);
    console.log(`    ${who}'s statuses: ${JSON.stringify(after.statuses)}`);
  }
  if (pageErrors.length > 0) throw new Error(`errors in the page: ${pageErrors.join('; ')}`);
  console.log('PASS: jsonrpc.js in Chromium, offline and back, recovered what was published meanwhile');
} catch (e) {
  failed = true;
  console.error(`FAIL at step "${step}": ${e.stack || e}`);
} finally {
  await browser?.close().catch(() => {});
  clearTimeout(hardTimeout);
}
process.exit(failed ? 1 : 0);
