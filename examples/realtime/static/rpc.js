// rpc.js: a small JSON-RPC 2.0 peer for the browser, over one WebSocket.
// An ES module with no dependencies and no build step.
//
// Like the Go library's Peer, it is client and server at once:
//
//   import { connect, RPCError } from './rpc.js';
//   const rpc = await connect('ws://127.0.0.1:8080/rpc');
//   const note = await rpc.call('board.post', { text: 'hi' }); // throws RPCError on an error reply
//   rpc.notify('board.typing', { who: 'me' });                 // no reply, none awaited
//   const [notes, stats] = await Promise.all(                  // one JSON array out,
//     rpc.batch([{ method: 'board.list' }, { method: 'board.stats' }])); // replies matched by id
//   rpc.handle('page.name', (params) => 'alice');              // the server may call this page
//   rpc.on('board.posted', (note) => show(note));              // the server's notifications
//   rpc.onclose = (event) => offline();
//
// params are a JSON object or array, or undefined for none.
//
// A page that should outlive its connection uses a Reconnecting client
// instead: the same methods, and it connects again by itself (see below).

/** A JSON-RPC error object as a JavaScript Error: what a call rejects with
 * on an error reply, and what a handler throws to send a specific error. */
export class RPCError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = 'RPCError';
    this.code = code;
    if (data !== undefined) this.data = data;
  }
}

/** Opens a WebSocket to url and resolves to a Peer once it is open. */
export function connect(url) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const peer = new Peer(socket); // listening before the first message can arrive
    const fail = () => reject(new Error(`cannot connect to ${url}`));
    socket.addEventListener('error', fail, { once: true });
    socket.addEventListener('open', () => {
      socket.removeEventListener('error', fail);
      resolve(peer);
    }, { once: true });
  });
}

const closedError = () => new Error('rpc.js: connection closed before the reply came');
const offlineError = () => new Error('rpc.js: not connected (reconnecting)');

export class Peer {
  /** socket is a WebSocket, or anything with send(text), close() and
   * addEventListener for 'message' (event.data is the text) and 'close'. */
  constructor(socket) {
    this.socket = socket;
    this.nextID = 1;
    this.pending = new Map();   // id → { resolve, reject } of our calls
    this.handlers = new Map();  // method → fn(params) serving the other side's calls
    this.listeners = new Map(); // method → [fn(params)] for its notifications
    this.closed = false;
    this.onclose = null;        // called once, with the close event, when the connection ends
    this.trace = null;          // if set, called as trace('out' | 'in', text) for every frame
    socket.addEventListener('message', (event) => this.receive(event.data));
    socket.addEventListener('close', (event) => {
      this.closed = true;
      for (const call of this.pending.values()) call.reject(closedError());
      this.pending.clear();
      if (this.onclose) this.onclose(event);
    });
  }

  /** Calls method; resolves to its result, or rejects with an RPCError
   * (code, message, data) on an error reply, or an Error when the
   * connection ends first. */
  call(method, params) {
    const [msg, promise] = this.request(method, params);
    this.send(msg);
    return promise;
  }

  /** Sends a notification: no reply comes. */
  notify(method, params) {
    this.send(message(method, params));
  }

  /** Sends elements [{ method, params, notify }] as one JSON array and
   * returns an array with, for each element, the Promise of its outcome
   * (as call's), or undefined for a notify element. Replies are matched by
   * id, whatever order they come back in. */
  batch(elements) {
    const msgs = [];
    const outcomes = elements.map((e) => {
      if (e.notify) {
        msgs.push(message(e.method, e.params));
        return undefined;
      }
      const [msg, promise] = this.request(e.method, e.params);
      msgs.push(msg);
      return promise;
    });
    this.send(msgs);
    return outcomes;
  }

  /** Serves method for the other side: fn(params) returns the result (or a
   * Promise of it) or throws; an RPCError goes back as is, anything else as
   * -32603 Internal error. Unregistered methods get -32601. */
  handle(method, fn) {
    this.handlers.set(method, fn);
    return this;
  }

  /** Calls fn(params) for every notification of method the other side sends. */
  on(method, fn) {
    if (!this.listeners.has(method)) this.listeners.set(method, []);
    this.listeners.get(method).push(fn);
    return this;
  }

  /** Closes the connection (normal closure). */
  close() {
    this.socket.close(1000);
  }

  request(method, params) {
    const msg = { ...message(method, params), id: this.nextID++ };
    if (this.closed) return [msg, Promise.reject(closedError())];
    const promise = new Promise((resolve, reject) => this.pending.set(msg.id, { resolve, reject }));
    return [msg, promise];
  }

  send(msg) {
    if (this.closed) return;
    const text = JSON.stringify(msg);
    if (this.trace) this.trace('out', text);
    this.socket.send(text);
  }

  // receive handles one incoming frame: a message, or a batch of them whose
  // replies go back in one array.
  async receive(text) {
    if (this.trace) this.trace('in', text);
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return this.send(errorReply(null, -32700, 'Parse error'));
    }
    if (!Array.isArray(msg)) {
      const reply = await this.receiveOne(msg);
      if (reply) this.send(reply);
      return;
    }
    if (msg.length === 0) return this.send(errorReply(null, -32600, 'Invalid Request'));
    const replies = (await Promise.all(msg.map((m) => this.receiveOne(m)))).filter(Boolean);
    if (replies.length > 0) this.send(replies);
  }

  // receiveOne handles one message and returns the reply to send, if any.
  // Everything before its first await runs at once, so replies and
  // notifications are handled in arrival order.
  async receiveOne(m) {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return errorReply(null, -32600, 'Invalid Request');
    if (!('method' in m)) { // a reply to one of our calls
      const call = this.pending.get(m.id);
      if (!call) return void console.warn('rpc.js: dropped a reply nobody waits for:', m);
      this.pending.delete(m.id);
      if (m.error) call.reject(new RPCError(m.error.code, m.error.message, m.error.data));
      else call.resolve(m.result);
      return;
    }
    if (m.jsonrpc !== '2.0' || typeof m.method !== 'string') return errorReply(m.id ?? null, -32600, 'Invalid Request');
    if (!('id' in m)) { // a notification: never answered
      for (const fn of this.listeners.get(m.method) ?? []) {
        try { fn(m.params); } catch (e) { console.error(`rpc.js: listener for ${m.method} failed:`, e); }
      }
      return;
    }
    const fn = this.handlers.get(m.method);
    if (!fn) return errorReply(m.id, -32601, 'Method not found');
    try {
      const result = await fn(m.params);
      return { jsonrpc: '2.0', id: m.id, result: result === undefined ? null : result };
    } catch (e) {
      if (e instanceof RPCError) return errorReply(m.id, e.code, e.message, e.data);
      console.error(`rpc.js: handler for ${m.method} failed:`, e);
      return errorReply(m.id, -32603, 'Internal error');
    }
  }
}

function message(method, params) {
  return params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
}

function errorReply(id, code, message, data) {
  const error = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: '2.0', id, error };
}

/** Reconnecting is a client that outlives its connections: when the
 * connection ends it connects again, after a delay that doubles from
 * minDelay to maxDelay (each drawn from its upper half, so that pages
 * dropped together do not come back together), until close().
 *
 * What survives a drop: the handlers and listeners registered on it (they
 * are set on every new connection). What does not: calls in flight reject
 * with "connection closed before the reply came", and calls made while
 * reconnecting reject at once with "not connected (reconnecting)"; the
 * server's notifications sent meanwhile are lost, which is why onconnect
 * runs on every connection before it is used: fetch the state there.
 *
 * options:
 *   open(): resolves to a new Peer (default: connect(url));
 *   prepare(): runs before each reconnection attempt (sign in again, say);
 *   onconnect(peer): runs on every connection, the first included, before
 *     the client reports it connected;
 *   onstate(state, info): 'connecting' | 'connected' |
 *     'reconnecting' (info: { delay, attempt, error }) | 'closed';
 *   minDelay, maxDelay: milliseconds, default 500 and 10000. */
export class Reconnecting {
  constructor(url, options = {}) {
    this.url = url;
    this.options = options;
    this.open = options.open ?? (() => connect(url));
    this.minDelay = options.minDelay ?? 500;
    this.maxDelay = Math.max(options.maxDelay ?? 10_000, this.minDelay);
    this.handlers = new Map();
    this.listeners = new Map();
    this.peer = null;       // the connection in use, once onconnect has run
    this.trace = null;      // as Peer's, set on every connection
    this.reconnects = 0;
    this.closed = false;
    this.timer = null;
  }

  /** Connects for the first time; resolves once connected (onconnect
   * done), rejects if that first attempt fails: nothing retries it. */
  async start() {
    this.state('connecting');
    const peer = await this.open();
    await this.use(peer);
  }

  call(method, params) {
    return this.peer ? this.peer.call(method, params) : Promise.reject(offlineError());
  }

  notify(method, params) {
    if (!this.peer) throw offlineError();
    this.peer.notify(method, params);
  }

  batch(elements) {
    if (this.peer) return this.peer.batch(elements);
    return elements.map((e) => (e.notify ? undefined : Promise.reject(offlineError())));
  }

  handle(method, fn) {
    this.handlers.set(method, fn);
    this.peer?.handle(method, fn);
    return this;
  }

  on(method, fn) {
    if (!this.listeners.has(method)) this.listeners.set(method, []);
    this.listeners.get(method).push(fn);
    this.peer?.on(method, fn);
    return this;
  }

  /** Closes the connection and stops reconnecting. */
  close() {
    this.closed = true;
    clearTimeout(this.timer);
    const peer = this.peer;
    this.peer = null;
    peer?.close();
    this.state('closed');
  }

  // use sets a new connection up and, once onconnect is done, uses it.
  async use(peer) {
    peer.trace = this.trace;
    for (const [method, fn] of this.handlers) peer.handle(method, fn);
    for (const [method, fns] of this.listeners) fns.forEach((fn) => peer.on(method, fn));
    peer.onclose = () => { // only a connection in use: one still being set up fails use instead
      if (this.peer !== peer) return;
      this.peer = null;
      if (!this.closed) this.retry(1, null);
    };
    try {
      if (this.options.onconnect) await this.options.onconnect(peer);
      if (peer.closed) throw new Error('rpc.js: connection closed while it was being set up');
    } catch (e) {
      peer.close();
      throw e;
    }
    if (this.closed) return peer.close();
    this.peer = peer;
    this.state('connected');
  }

  // retry schedules attempt number attempt, after a failed one (error).
  retry(attempt, error) {
    const ceiling = Math.min(this.maxDelay, this.minDelay * 2 ** (attempt - 1));
    const delay = Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
    this.state('reconnecting', { delay, attempt, error });
    this.timer = setTimeout(async () => {
      if (this.closed) return;
      this.state('connecting');
      try {
        if (this.options.prepare) await this.options.prepare();
        await this.use(await this.open());
        this.reconnects++;
      } catch (e) {
        if (!this.closed) this.retry(attempt + 1, e);
      }
    }, delay);
  }

  state(s, info) {
    this.options.onstate?.(s, info);
  }
}
