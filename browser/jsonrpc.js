// jsonrpc.js: a JSON-RPC 2.0 peer for the browser over one WebSocket, that
// reconnects by itself and keeps topic subscriptions across reconnects.
// An ES module with no dependencies and no build step; types in
// jsonrpc.d.ts. MIT licence, part of github.com/peerwire/jsonrpc (whose Go
// package browser serves this file).
//
//   import { Client, RPCError } from './jsonrpc.js';
//   const rpc = new Client('wss://example.com/rpc', { timeout: 10_000 });
//   await rpc.start();
//   const note = await rpc.call('board.post', { text: 'hi' });     // RPCError on an error reply
//   rpc.notify('board.typing', { who: 'me' });                     // no reply
//   rpc.handle('page.confirm', ({ question }) => confirm(question)); // the server calls the page
//   rpc.on('board.stats', (stats) => show(stats));                 // the server's notifications
//   const sub = await rpc.subscribe('board', { onMessage, onReset }); // topic.subscribe, recovered on reconnect
//   new Client(url, { tracing });  // optional spans and W3C trace context in params._meta (README)
//
// Like the Go library's Peer it is client and server at once. Ids of the
// calls it makes are strings ("1", "2", ...), so that no id is ever a
// JavaScript number beyond 2^53; ids of the calls it serves are echoed
// byte for byte as they came, numbers too (see wire.js). The module
// imports errors.js, wire.js and topics.js, next to it.

import { RPCError, AbortError, TimeoutError, ConnectionError, InvalidResponseError, NotStartedError, ClosedError, KickedError } from './errors.js';
import { message, errorReply, rawOf, rawIDs, rawParams, rawMember, idKey } from './wire.js';
import { Topics } from './topics.js';

export { RPCError, AbortError, TimeoutError, ConnectionError, InvalidResponseError, NotStartedError, ClosedError, KickedError };

/** The Language Server Protocol's cancellation: $/cancelRequest {id}. */
export const LSPCancel = Object.freeze({
  method: '$/cancelRequest',
  params: (id) => ({ id }),
  id: (params) => params?.id,
  idMember: 'id',
});

/** The Model Context Protocol's cancellation: notifications/cancelled
 * {requestId}. */
export const MCPCancel = Object.freeze({
  method: 'notifications/cancelled',
  params: (id) => ({ requestId: id }),
  id: (params) => params?.requestId,
  idMember: 'requestId',
});

/** The connection states, in the order a client goes through them. */
export const Status = Object.freeze({
  connecting: 'connecting',
  connected: 'connected',
  reconnecting: 'reconnecting',
  closed: 'closed',
});

const DEFAULT_TIMEOUT = 30_000;
const DEFAULT_HEARTBEAT = 4_000;        // silence before a ping
const DEFAULT_PREPARE_TIMEOUT = 10_000; // a prepare's time

const OPEN = 1; // WebSocket.OPEN

/** Client is a JSON-RPC 2.0 peer over a WebSocket that it opens again,
 * with backoff, whenever it drops, until close(). See jsonrpc.d.ts for
 * the options and their defaults. */
export class Client extends EventTarget {
  constructor(url, options = {}) {
    super();
    this.url = url;
    this.options = options;
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT;
    this.cancel = options.cancel ?? null;
    this.minDelay = options.minDelay ?? 500;
    this.maxDelay = Math.max(options.maxDelay ?? 10_000, this.minDelay);
    this.reconnect = options.reconnect ?? true;
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    this.trace = options.trace ?? null; // trace('out' | 'in', text) for every frame
    this.tracing = options.tracing ?? null; // spans and trace context: see traced and TraceHook in jsonrpc.d.ts
    this.status = Status.closed;
    this.reconnects = 0; // connections opened after the first
    this.socket = null;  // the open WebSocket, or null
    this.nextID = 1;
    this.pending = new Map();  // id (a string) -> call of ours awaiting its reply
    this.waiting = new Set();  // sends held until a connection is open
    this.handlers = new Map(); // method -> fn(params, ctx) serving the other side
    this.listeners = new Map(); // method -> [fn(params)]
    this.serving = new Map();  // idKey of the id -> AbortController of a call we serve
    this.topics = new Topics(this);
    this.phase = 'new';   // 'started' by start() (back to 'new' if it fails), 'closed' by close(): for good
    this.starting = null; // the Promise start() returned, while started
    this.stopped = true;  // not connecting: not started, or closed
    this.timer = null;
    this.streak = 0;      // attempts since the last connection that lasted maxDelay (see lost)
    this.openedAt = 0;    // when the open connection opened
    this.on('topic.message', (m) => this.topics.message(m));
    this.on('topic.kicked', (k) => this.topics.kicked(k));
    this.on('topic.presence', (e) => this.topics.presence(e));
    this.beat = null;     // the heartbeat's timer
    this.heard = 0;       // when something last came on the open connection
    this.sentAt = 0;      // when the page last sent something (its heartbeat's pings aside)
    this.preparing = null; // the AbortController of the prepare in flight
    this.onNetwork = (e) => this.network(e.type === 'online');
  }

  /** Opens the first connection; resolves once it is open and onconnect
   * has run, rejects if that first attempt fails (then nothing retries,
   * and start may be called again). Called again while started, it
   * returns the same Promise: one connection. After close() it rejects
   * with a ClosedError: a closed Client stays closed. */
  start() {
    if (this.phase === 'closed') {
      return Promise.reject(new ClosedError('jsonrpc.js: start after close: a closed Client stays closed; make a new Client (or call connect()) to connect again'));
    }
    if (this.phase === 'new') {
      this.phase = 'started';
      this.starting = this.startOnce();
      this.starting.catch(() => {
        if (this.phase === 'started') this.phase = 'new';
      });
    }
    return this.starting;
  }

  async startOnce() {
    this.stopped = false;
    if ((this.options.watchNetwork ?? true) && typeof globalThis.addEventListener === 'function') {
      globalThis.addEventListener('online', this.onNetwork);
      globalThis.addEventListener('offline', this.onNetwork);
    }
    this.setStatus(Status.connecting, {});
    try {
      await this.connectOnce(false);
    } catch (e) {
      this.stopped = true;
      globalThis.removeEventListener?.('online', this.onNetwork);
      globalThis.removeEventListener?.('offline', this.onNetwork);
      this.setStatus(Status.closed, { error: e });
      throw e;
    }
  }

  /** Calls method with params (an object, an array, or undefined for
   * none); resolves to the result, rejects with an RPCError (code,
   * message, data) on an error reply, a TimeoutError, an AbortError or a
   * ConnectionError. While the client reconnects the call waits, within
   * its timeout, for the next connection. options: { timeout, signal }. */
  call(method, params, options) {
    const unusable = this.unusable(method);
    if (unusable) return Promise.reject(unusable);
    const call = this.request(method, params, options);
    if (call.live()) this.whenOpen([call], () => this.send([call], false), (e) => call.reject(e));
    return call.promise;
  }

  /** Sends a notification (no reply comes); throws a ConnectionError when
   * no connection is open. */
  notify(method, params) {
    if (!this.socket) throw this.unusable(method) ?? new ConnectionError(`jsonrpc.js: ${method}: not connected`);
    const span = this.traced('send', { method, notify: true });
    this.send([{ msg: message(method, withMeta(params, span)) }], false);
    span?.end();
  }

  /** Sends elements [{ method, params, notify }] as one JSON array and
   * returns, for each element, the Promise of its outcome (as call's) or
   * undefined for a notify element; replies are matched by id. options
   * as call's, for every element. */
  batch(elements, options) {
    const unusable = this.unusable('a batch');
    if (unusable) return elements.map((e) => (e.notify ? undefined : Promise.reject(unusable)));
    const items = elements.map((e) => (e.notify ? this.notice(e.method, e.params) : this.request(e.method, e.params, options)));
    const fail = (err) => items.forEach((c) => (c.reject ? c.reject(err) : c.span?.end(err)));
    this.whenOpen(items, () => { this.send(items, true); items.forEach((c) => c.reject || c.span?.end()); }, fail);
    return items.map((c) => c.promise);
  }

  /** Serves method for the other side: fn(params, { id, signal }) returns
   * the result (or a Promise of it) or throws; an RPCError goes back as
   * is, anything else as -32603 Internal error. signal aborts when the
   * other side cancels the call (in the cancel dialect) or the
   * connection ends. Unregistered methods get -32601. */
  handle(method, fn) {
    this.handlers.set(method, fn);
    return this;
  }

  /** Calls fn(params) for every notification of method the other side
   * sends, in arrival order. */
  on(method, fn) {
    if (!this.listeners.has(method)) this.listeners.set(method, []);
    this.listeners.get(method).push(fn);
    return this;
  }

  /** Closes the connection and stops reconnecting; waiting and pending
   * calls reject with a ConnectionError, subscriptions end. */
  close() {
    this.phase = 'closed';
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.beat);
    this.preparing?.abort(new ClosedError('jsonrpc.js: client closed during prepare'));
    globalThis.removeEventListener?.('online', this.onNetwork);
    globalThis.removeEventListener?.('offline', this.onNetwork);
    const socket = this.socket;
    this.socket = null;
    const closed = new ClosedError('jsonrpc.js: client closed');
    this.dropped(closed);
    for (const w of [...this.waiting]) w.fail(closed);
    this.topics.end(closed);
    socket?.close(1000);
    this.setStatus(Status.closed, {});
  }

  // unusable returns the error of what (a method, 'a batch', a topic) when
  // the client is not started or is closed, else undefined.
  unusable(what) {
    if (this.phase === 'new') {
      return new NotStartedError(`jsonrpc.js: ${what}: the client is not started: await client.start() first (or make it with connect())`);
    }
    if (this.phase === 'closed') return new ClosedError(`jsonrpc.js: ${what}: the client is closed; make a new Client to connect again`);
    return undefined;
  }

  // request makes a call: its message and its Promise, which settles once,
  // with the reply, on its timeout or signal, or with reject(error).
  request(method, params, { timeout = this.timeout, signal } = {}) {
    const id = String(this.nextID++);
    let state = 'waiting'; // then 'sent', then 'done'
    let settle;
    let timer = null;
    const span = method === 'rpc.ping' ? undefined : this.traced('send', { method, id, notify: false });
    const call = {
      msg: { ...message(method, withMeta(params, span)), id },
      promise: new Promise((resolve, reject) => { settle = { resolve, reject }; }),
      live: () => state !== 'done',
      sent: () => { state = 'sent'; this.pending.set(id, call); },
      resolve: (v) => finish() && (span?.end(), settle.resolve(v)),
      reject: (e) => finish() && (span?.end(e), settle.reject(e)),
      waiter: null, // its entry in waiting, while it waits for a connection
    };
    const finish = () => {
      if (state === 'done') return false;
      state = 'done';
      this.pending.delete(id);
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      // A call given up while it waited for a connection is not kept.
      if (call.waiter && !call.waiter.live()) this.waiting.delete(call.waiter);
      return true;
    };
    // giveUp ends the call from this side, and tells the other side if
    // it has the call and the cancel dialect is set.
    // The heartbeat's ping is never cancelled: no server serves it, and
    // a cancel is page data, after which the heartbeat would wait a whole
    // call timeout to judge a dead connection.
    const giveUp = (e) => {
      const tell = state === 'sent' && this.cancel && this.socket && method !== 'rpc.ping';
      call.reject(e);
      if (tell) this.send([{ msg: message(this.cancel.method, this.cancel.params(id)) }], false);
    };
    const onAbort = () => giveUp(new AbortError(`jsonrpc.js: ${method} aborted`, signal.reason));
    if (signal?.aborted) {
      onAbort();
    } else {
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeout > 0 && timeout !== Infinity) {
        timer = setTimeout(() => giveUp(new TimeoutError(`jsonrpc.js: ${method}: no reply within ${timeout} ms`)), timeout);
      }
    }
    return call;
  }

  // notice makes a notification element of a batch: its message, and its
  // span, which the batch ends once it is sent.
  notice(method, params) {
    const span = this.traced('send', { method, notify: true });
    return { msg: message(method, withMeta(params, span)), span };
  }

  // traced starts the span of what is sent ('send') or served ('receive')
  // through options.tracing, if set: undefined without it, or when the
  // hook has no span for it. A hook that throws costs the span only.
  traced(way, info) {
    const hook = this.tracing?.[way];
    if (typeof hook !== 'function') return undefined;
    try {
      return guardSpan(hook.call(this.tracing, info));
    } catch (e) {
      console.error(`jsonrpc.js: tracing.${way} failed for ${info.method}:`, e);
      return undefined;
    }
  }

  // whenOpen runs send now if a connection is open, or once one is; fail
  // ends the wait (with close()). The wait ends too once none of items'
  // calls is live (each timed out or aborted).
  whenOpen(items, send, fail) {
    if (this.socket) return send();
    if (this.stopped) return fail(new ClosedError('jsonrpc.js: client closed'));
    const calls = items.filter((c) => c.live);
    const w = {
      send,
      fail: (e) => { this.waiting.delete(w); fail(e); },
      live: () => calls.length === 0 || calls.some((c) => c.live()),
    };
    calls.forEach((c) => { c.waiter = w; });
    if (w.live()) this.waiting.add(w);
  }

  // send writes items' messages on the open connection, as one array if
  // batch; calls that ended while they waited (timeout, signal) are left
  // out.
  send(items, batch) {
    const socket = this.socket;
    const out = items.filter((c) => !c.live || c.live());
    if (!socket || out.length === 0) return;
    out.forEach((c) => c.sent?.());
    const msgs = out.map((c) => c.msg);
    this.sendText(JSON.stringify(batch ? msgs : msgs[0]));
  }

  sendText(text) {
    if (!this.socket) return;
    this.sentAt = Date.now();
    this.trace?.('out', text);
    this.socket.send(text);
  }

  // connectOnce opens a WebSocket (after prepare, on a reconnection), sets
  // it up and uses it: re-subscribes every topic, sends what waited, runs
  // onconnect, reports connected.
  async connectOnce(again) {
    if (again) await this.prepare();
    const socket = await openSocket(this.WebSocket, this.url);
    if (this.stopped) {
      socket.close(1000);
      throw new ClosedError('jsonrpc.js: client closed');
    }
    this.socket = socket;
    this.openedAt = Date.now();
    socket.addEventListener('message', (event) => {
      if (this.socket !== socket) return;
      this.alive();
      this.receive(String(event.data));
    });
    socket.addEventListener('close', () => this.lost(socket));
    this.alive();
    this.watch(socket);
    this.topics.resubscribe();
    for (const w of [...this.waiting]) {
      this.waiting.delete(w);
      w.send();
    }
    try {
      await this.options.onconnect?.(this);
    } catch (e) {
      if (this.socket === socket) {
        this.socket = null;
        this.dropped(new ConnectionError('jsonrpc.js: onconnect failed'));
        socket.close(4000, 'onconnect failed');
      }
      throw e;
    }
    if (this.socket !== socket) throw new ConnectionError('jsonrpc.js: connection closed while it was being set up');
    this.setStatus(Status.connected, {});
  }

  /** Subscribes to a topic (topic.subscribe, see TOPICS in the README):
   * handlers.onMessage(data, { topic, epoch, seq }) sees every message
   * exactly once and in order, across reconnects; handlers.onReset({
   * topic, epoch, seq, recovered: false }) runs when the history could not
   * be recovered (the first subscription included): the app must fetch
   * its state again; handlers.history = N asks for the last N messages
   * with it, which follow onReset through onMessage, before the live
   * ones. Resolves to a Subscription after the first reply;
   * rejects with the server's RPCError if it refuses the topic, a
   * TimeoutError if that reply does not come in time, and an Error if the
   * topic is subscribed already (unsubscribe first). See topics.js. */
  subscribe(topic, handlers = {}) {
    const unusable = this.unusable(`topic ${JSON.stringify(topic)}`);
    if (unusable) return Promise.reject(unusable);
    return this.topics.subscribe(topic, handlers);
  }

  // lost ends the use of socket, gone (closed, silent past the heartbeat,
  // or the browser offline): calls in flight fail, and the client
  // reconnects if it was connected (else connectOnce fails and its caller
  // decides).
  lost(socket) {
    if (this.socket !== socket) return;
    this.socket = null;
    clearTimeout(this.beat);
    this.dropped(new ConnectionError('jsonrpc.js: connection closed before the reply came'));
    socket.close(4001, 'gone');
    if (this.status !== Status.connected) return;
    // A connection that dies soon after it opened is no success: the
    // backoff goes on growing (a server that accepts and drops at once
    // is not hammered), and starts again only after one that lasted.
    this.streak = Date.now() - this.openedAt < this.maxDelay ? this.streak + 1 : 1;
    if (this.reconnect) this.retry(this.streak, null);
    else this.close();
  }

  // prepare runs options.prepare(signal) before a reconnection attempt,
  // for at most prepareTimeout ms: past it, or on close(), its signal
  // aborts and the attempt fails (the next one runs prepare again), so
  // that a sign-in that hangs cannot stall reconnection for ever.
  async prepare() {
    const prepare = this.options.prepare;
    if (!prepare) return;
    const limit = this.options.prepareTimeout ?? DEFAULT_PREPARE_TIMEOUT;
    const ac = new AbortController();
    this.preparing = ac;
    let timer = null;
    if (limit > 0 && limit !== Infinity) {
      timer = setTimeout(() => ac.abort(new TimeoutError(
        `jsonrpc.js: prepare did not finish within ${limit} ms: its signal is aborted and the client tries again (prepareTimeout sets the bound)`)), limit);
    }
    const aborted = new Promise((_, reject) => ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }));
    try {
      await Promise.race([prepare(ac.signal), aborted]);
    } finally {
      clearTimeout(timer);
      if (this.preparing === ac) this.preparing = null;
    }
  }

  // alive notes that something came from the other side.
  alive() {
    this.heard = Date.now();
  }

  // watch runs the heartbeat on socket (see heartbeat in jsonrpc.d.ts).
  // Anything received is a sign of life, and so is the network taking the
  // data the page has buffered (bufferedAmount going down). After
  // heartbeat ms without a sign it sends rpc.ping (a name the
  // specification reserves, so no server serves it: the error reply,
  // -32601 from a Go server, is as good a sign as any), and the connection
  // is taken as lost once heartbeatTimeout ms pass after the ping without
  // a sign. Only then: a timer that fires late (the page busy, or its tab
  // in the background, where browsers run timers once a minute) sends the
  // ping first, and judges nothing by a silence it could not watch.
  //
  // A server that pushes back (reads nothing while its handlers catch up
  // with what the page sent) answers no ping until it reads again, and
  // takes the page's data only as it catches up, which the page sees only
  // while that data is in its own buffer (in node, whose WebSocket reports
  // it all at once, not even then), not once it is in the network's. From
  // here it looks like a dead network with the page's data stuck in it;
  // so while the page has sent something (the ping aside) since it last
  // heard from the server, the heartbeat waits as long as a call does
  // after the ping (the client's timeout, when longer): pushback comes
  // only of what the page sent. (Data in the page's own buffer is no such
  // sign: on a dead network the ping itself stays there.) It waits as
  // long too while a call of the page's awaits its reply, even when the
  // server has been heard since: a Go server whose handler slots are all
  // busy with the page's calls (which may send notifications meanwhile)
  // answers the ping only when one ends
  // (TestNodeReviewHeartbeatBusyServer).
  watch(socket) {
    const every = this.options.heartbeat ?? DEFAULT_HEARTBEAT;
    if (!(every > 0) || every === Infinity) return;
    const limit = this.options.heartbeatTimeout ?? 2 * every;
    const stuck = this.timeout > limit && this.timeout !== Infinity ? this.timeout : limit;
    let buffered = socket.bufferedAmount ?? 0;
    let taken = 0;  // when the network last took some of the page's data
    let pinged = 0; // when the ping was sent, while no sign has come since
    const tick = () => {
      if (this.socket !== socket) return;
      const now = Date.now();
      const b = socket.bufferedAmount ?? 0;
      if (b < buffered) taken = now;
      buffered = b;
      const last = Math.max(this.heard, taken);
      if (pinged && last >= pinged) pinged = 0;
      const wait = this.sentAt > this.heard || this.awaiting() ? stuck : limit;
      if (pinged && now - pinged >= wait) return this.lost(socket);
      if (!pinged && now - last >= every) {
        pinged = now;
        const sentAt = this.sentAt;
        this.call('rpc.ping', undefined, { timeout: limit }).catch(() => {});
        this.sentAt = sentAt; // the ping is no data of the page's
      }
      const next = pinged ? pinged + wait : last + every;
      this.beat = setTimeout(tick, Math.max(1, Math.min(next - now, every)));
    };
    this.beat = setTimeout(tick, every);
  }

  // awaiting reports whether a call of the page's (the heartbeat's ping
  // aside) waits for its reply.
  awaiting() {
    for (const call of this.pending.values()) if (call.msg.method !== 'rpc.ping') return true;
    return false;
  }

  // network follows the browser's online and offline events: offline
  // ends the connection at once (nothing can reach it; its close would
  // not come until the network is back), online tries again at once.
  network(online) {
    if (this.stopped) return;
    if (!online) return this.socket && this.lost(this.socket);
    if (this.status !== Status.reconnecting) return;
    clearTimeout(this.timer);
    this.retry(1, null, 0);
  }

  // dropped fails every call in flight and aborts every call served.
  dropped(error) {
    for (const call of [...this.pending.values()]) call.reject(error);
    for (const ac of this.serving.values()) ac.abort(error);
    this.serving.clear();
  }

  // retry schedules attempt number attempt, after a failed one (error),
  // after a delay that doubles from minDelay to maxDelay, drawn from its
  // upper half so that pages dropped together do not come back together.
  retry(attempt, error, now) {
    const ceiling = Math.min(this.maxDelay, this.minDelay * 2 ** (attempt - 1));
    const delay = now ?? Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
    this.setStatus(Status.reconnecting, { delay, attempt, error });
    this.timer = setTimeout(async () => {
      if (this.stopped) return;
      this.setStatus(Status.connecting, { attempt });
      try {
        await this.connectOnce(true);
        this.reconnects++;
      } catch (e) {
        if (!this.stopped) this.retry(attempt + 1, e);
      }
      if (this.status !== Status.connected) this.streak = attempt; // it failed: the next drop goes on from here
    }, delay);
  }

  setStatus(status, info) {
    this.status = status;
    this.options.onstatus?.(status, info);
    this.dispatchEvent(Object.assign(new Event('status'), { status, ...info }));
  }

  // receive handles one incoming frame: a message, or a batch of them
  // whose replies go back in one array.
  async receive(text) {
    this.trace?.('in', text);
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return this.sendText(errorReply('null', -32700, 'Parse error'));
    }
    const ids = rawIDs(text, msg);
    const cancels = this.rawCancelIDs(text, msg);
    if (!Array.isArray(msg)) {
      const reply = await this.receiveOne(msg, ids[0], cancels[0]);
      if (reply) this.sendText(reply);
      return;
    }
    if (msg.length === 0) return this.sendText(errorReply('null', -32600, 'Invalid Request'));
    const replies = (await Promise.all(msg.map((m, i) => this.receiveOne(m, ids[i], cancels[i])))).filter(Boolean);
    if (replies.length > 0) this.sendText(`[${replies.join(',')}]`);
  }

  // rawCancelIDs returns, for the message (or each of the batch) parsed
  // from text, the text of the id a cancel notification names, as it came,
  // when the dialect says which member holds it.
  rawCancelIDs(text, msg) {
    const list = Array.isArray(msg) ? msg : [msg];
    const member = this.cancel?.idMember;
    const isCancel = (m) => m && typeof m === 'object' && m.method === this.cancel.method && !('id' in m);
    if (!member || !list.some(isCancel)) return [];
    const params = rawParams(text, msg);
    return list.map((m, i) => (isCancel(m) && params[i] ? rawMember(params[i], member) : undefined));
  }

  // receiveOne handles one message, id its id's text as it came (and, for
  // a cancel notification, rawCancelID the text of the id it names), and
  // returns the text of the reply to send, if any. Everything before its
  // first await runs at once, so messages are handled in arrival order.
  async receiveOne(m, id, rawCancelID) {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return errorReply('null', -32600, 'Invalid Request');
    // A reply: a result or an error, or, malformed, neither but the id of
    // a call of ours (which fails it rather than leave it to its timeout).
    if (!('method' in m) && ('result' in m || 'error' in m || this.pending.has(m.id))) return void this.reply(m);
    const idOK = !('id' in m) || m.id === null || typeof m.id === 'string' || typeof m.id === 'number';
    if (!idOK) return errorReply('null', -32600, 'Invalid Request');
    if (m.jsonrpc !== '2.0' || typeof m.method !== 'string' ||
      ('params' in m && (m.params === null || typeof m.params !== 'object'))) {
      return errorReply(id ?? 'null', -32600, 'Invalid Request'); // without an id too: not a notification
    }
    if (!('id' in m)) {
      const isCancel = m.method === this.cancel?.method;
      if (isCancel) this.cancelled(m.params, rawCancelID);
      const span = isCancel ? undefined : this.traced('receive', { method: m.method, notify: true, meta: metaOf(m.params) });
      let failed;
      const run = () => {
        for (const fn of this.listeners.get(m.method) ?? []) {
          try { fn(m.params); } catch (e) { failed ??= e; console.error(`jsonrpc.js: listener for ${m.method} failed:`, e); }
        }
      };
      span ? span.run(run) : run();
      span?.end(failed);
      return;
    }
    const span = this.traced('receive', { method: m.method, id: m.id, notify: false, meta: metaOf(m.params) });
    const fn = this.handlers.get(m.method);
    if (!fn) {
      span?.end(new RPCError(-32601, 'Method not found'));
      return errorReply(id, -32601, 'Method not found');
    }
    const ac = new AbortController();
    const key = idKey(id);
    this.serving.set(key, ac);
    const serve = () => fn(m.params, { id: m.id, signal: ac.signal });
    try {
      const result = await (span ? span.run(serve) : serve());
      span?.end();
      return `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(result === undefined ? null : result)}}`;
    } catch (e) {
      span?.end(e);
      if (e instanceof RPCError) return errorReply(id, e.code, e.message, e.data);
      console.error(`jsonrpc.js: handler for ${m.method} failed:`, e);
      return errorReply(id, -32603, 'Internal error');
    } finally {
      if (this.serving.get(key) === ac) this.serving.delete(key);
    }
  }

  // cancelled aborts the served call a cancel notification names: by the
  // id's text as it came (raw, cut out of the frame when the dialect says
  // which member holds it), so that 9007199254740993 and 1.0 find the call
  // they name.
  cancelled(params, raw) {
    const key = idKey(raw ?? rawOf(this.cancel.id(params)));
    this.serving.get(key)?.abort(new ConnectionError('jsonrpc.js: the other side cancelled the call'));
  }

  // reply delivers a reply to the call of ours with exactly its id: our
  // ids are strings, so a number never matches one. A reply is a result
  // ("error" absent or null) or an error object with an integer code;
  // anything else rejects the call with an InvalidResponseError.
  reply(m) {
    const call = typeof m.id === 'string' ? this.pending.get(m.id) : undefined;
    if (!call) return; // a late reply to a call given up, or garbage: nobody waits
    const e = m.error;
    if (e !== undefined && e !== null) {
      if (typeof e === 'object' && !Array.isArray(e) && Number.isInteger(e.code)) {
        return call.reject(new RPCError(e.code, typeof e.message === 'string' ? e.message : '', e.data));
      }
      return call.reject(new InvalidResponseError('jsonrpc.js: a reply whose error is not an error object', m));
    }
    if (!('result' in m)) return call.reject(new InvalidResponseError('jsonrpc.js: a reply with neither result nor error', m));
    call.resolve(m.result);
  }
}

/** connect makes a Client and starts it: resolves to the Client once its
 * first connection is open (onconnect done). */
export async function connect(url, options) {
  const client = new Client(url, options);
  await client.start();
  return client;
}

// openSocket resolves to a WebSocket once it is open.
function openSocket(WS, url) {
  return new Promise((resolve, reject) => {
    if (typeof WS !== 'function') throw new ConnectionError('jsonrpc.js: no WebSocket: pass options.WebSocket');
    const socket = new WS(url);
    const fail = () => reject(new ConnectionError(`jsonrpc.js: cannot connect to ${url}`));
    socket.addEventListener('error', fail, { once: true });
    socket.addEventListener('close', fail, { once: true });
    socket.addEventListener('open', () => {
      socket.removeEventListener('error', fail);
      socket.removeEventListener('close', fail);
      if (socket.readyState !== OPEN) return fail();
      resolve(socket);
    }, { once: true });
  });
}


// withMeta returns params with span's meta fields (traceparent,
// tracestate) merged into params._meta, when params is an object (not an
// array) whose _meta is absent or an object; otherwise params as they are,
// the same object: without a span nothing on the wire changes.
function withMeta(params, span) {
  const fields = span?.meta;
  if (!fields || typeof fields !== 'object' || Object.keys(fields).length === 0) return params;
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return params;
  const meta = params._meta;
  if (meta !== undefined && (meta === null || typeof meta !== 'object' || Array.isArray(meta))) return params;
  return { ...params, _meta: { ...meta, ...fields } };
}

// metaOf is params._meta of a received message when it is an object.
function metaOf(params) {
  const meta = params?._meta;
  return meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? meta : undefined;
}

// guardSpan makes a hook's span safe to use: end once, run defaulting to
// calling fn, and neither letting a throw of the hook's reach the call.
function guardSpan(span) {
  if (!span || typeof span !== 'object') return undefined;
  let ended = false;
  return {
    meta: span.meta,
    run: (fn) => (typeof span.run === 'function' ? span.run(fn) : fn()),
    end: (error) => {
      if (ended) return;
      ended = true;
      try { span.end?.(error); } catch (e) { console.error('jsonrpc.js: a tracing span\'s end failed:', e); }
    },
  };
}
