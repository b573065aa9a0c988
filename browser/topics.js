// topics.js: the client side of the topic protocol for jsonrpc.js
// (topic.subscribe, topic.unsubscribe, topic.message, topic.presence,
// topic.members; TOPICS in the
// repository's README): a position (epoch, seq) per topic, subscribed
// again with it on every connection, every message applied exactly once
// and in order. MIT licence, part of github.com/peerwire/jsonrpc.
import { RPCError, TimeoutError, ConnectionError, KickedError } from './errors.js';

// TRANSIENT are the error codes after which a topic subscribes again
// rather than ending: internal error (the server could not read the
// history), overloaded, shutting down.
const TRANSIENT = new Set([-32603, -32000, -32003]);

// Topics are a Client's subscriptions, by topic name.
export class Topics {
  constructor(client) {
    this.client = client;
    this.map = new Map();     // name -> topic state (see subscribe)
    this.leaving = new Map(); // name -> Promise of its topic.unsubscribe in flight
  }

  // resubscribe subscribes every topic on the new connection: what the
  // old one held while a subscribe was in flight is in the history.
  resubscribe() {
    for (const t of this.map.values()) {
      t.buffer = [];
      t.overflow = false;
      t.again = true; // once subscribed, who came and went meanwhile is asked (presenceAgain)
      t.asking = true; // until then, presence() leaves the list alone
      this.subscribeNow(t);
    }
  }

  // end ends every subscription (the client closed).
  end(error) {
    for (const t of this.map.values()) t.first?.reject(error);
    this.map.clear();
  }

  // subscribe is Client.subscribe: it follows topic from now on, and
  // resolves to its Subscription after the first reply. A topic followed
  // already is refused (unsubscribe first); one whose unsubscribe is in
  // flight is subscribed once its reply is in, so that the server, which
  // runs calls concurrently, cannot apply the two the other way round.
  subscribe(topic, handlers = {}) {
    const history = handlers.history ?? 0;
    if (!Number.isSafeInteger(history) || history < 0) {
      return Promise.reject(new TypeError(`jsonrpc.js: history must be a whole number of messages, not ${handlers.history}`));
    }
    if (this.map.has(topic)) {
      return Promise.reject(new Error(`jsonrpc.js: already subscribed to topic ${JSON.stringify(topic)}: unsubscribe first`));
    }
    const t = { name: topic, handlers, pos: null, gen: 0, inflight: false, buffer: [], first: null, calls: new Set() };
    t.sub = {
      topic,
      get position() { return t.pos && { ...t.pos }; },
      unsubscribe: () => this.unsubscribe(t),
      presence: () => this.members(t),
    };
    const promise = new Promise((resolve, reject) => { t.first = { resolve, reject }; });
    this.map.set(topic, t);
    const start = () => {
      if (this.map.get(topic) !== t) return;
      if (this.client.stopped) t.first.reject(new ConnectionError('jsonrpc.js: client closed'));
      else this.subscribeNow(t);
    };
    const leaving = this.leaving.get(topic);
    if (leaving) leaving.then(start);
    else start();
    return promise;
  }

  async unsubscribe(t) {
    if (this.map.get(t.name) !== t) return;
    this.map.delete(t.name);
    t.gen++;
    t.first?.reject(new ConnectionError('jsonrpc.js: unsubscribed before the first reply'));
    if (!this.client.socket) return;
    return this.leave(t);
  }

  // leave sends t's topic.unsubscribe after the replies of its
  // topic.subscribe calls in flight and of the topic's unsubscribe in
  // flight, if any: the server runs calls concurrently, and an unsubscribe
  // it ran alongside a subscribe of the same topic would not undo it
  // before it ends. A subscribe of the topic waits for it (see
  // subscribe). It resolves once the server has answered.
  leave(t) {
    const before = [this.leaving.get(t.name), ...t.calls];
    const call = (async () => {
      await Promise.all(before);
      try {
        await this.client.call('topic.unsubscribe', { topic: t.name });
      } catch (e) {
        if (!(e instanceof ConnectionError)) throw e;
      }
    })();
    const done = call.catch(() => {});
    this.leaving.set(t.name, done);
    done.then(() => { if (this.leaving.get(t.name) === done) this.leaving.delete(t.name); });
    return call;
  }

  // subscribeNow sends topic.subscribe for t on the open connection, with
  // since = its position if it has one; connectOnce calls it for every
  // topic on each new connection.
  subscribeNow(t) {
    if (!this.client.socket) return;
    const gen = ++t.gen;
    t.inflight = true;
    const current = () => gen === t.gen && this.map.get(t.name) === t;
    const params = t.pos ? { topic: t.name, since: { ...t.pos } } : { topic: t.name };
    if (t.handlers.history > 0) params.history = t.handlers.history;
    const call = this.client.call('topic.subscribe', params);
    const settled = call.then(() => {}, () => {}); // for leave: settled either way
    t.calls.add(settled);
    settled.then(() => t.calls.delete(settled));
    call.then((r) => current() && this.subscribed(t, r), (e) => {
      if (!current()) return;
      t.inflight = false;
      if (e instanceof TimeoutError && t.first) {
        // The first subscribe settles: the caller decides. The server may
        // still be running it, or have applied it late: take it back,
        // after any other subscribe of it in flight (a subscribe of the
        // topic waits for the take-back). This one's reply will not come
        // here, so the server is what applies the take-back after it
        // (topic.Hub does; a cancel dialect ends it first).
        this.map.delete(t.name);
        t.first.reject(e);
        if (this.client.socket) this.leave(t).catch(() => {});
        return;
      }
      if (e instanceof TimeoutError || e instanceof RPCError && !t.first && TRANSIENT.has(e.code)) {
        // No answer in time, or the server cannot read the history now
        // (-32603), is overloaded or shutting down: try again, after a
        // delay that grows as reconnection's does.
        t.failures = (t.failures ?? 0) + 1;
        const delay = Math.min(this.client.maxDelay, this.client.minDelay * 2 ** (t.failures - 1));
        return void setTimeout(() => { if (current() && !t.inflight) this.subscribeNow(t); }, delay);
      }
      if (e instanceof RPCError) {
        this.map.delete(t.name);
        if (t.first) return t.first.reject(e);
        return t.handlers.onError ? t.handlers.onError(e) : console.error(`jsonrpc.js: topic ${t.name}:`, e);
      }
      // ConnectionError: the next connection subscribes again.
    });
  }

  // subscribed applies a topic.subscribe reply r, then what came live
  // while it was awaited; a reply that says more is followed by the next
  // page, the live messages held meanwhile.
  subscribed(t, r) {
    t.inflight = false;
    t.failures = 0;
    if (!t.pos || !r.recovered || r.epoch !== t.pos.epoch) {
      // Not recovered: the backlog asked for (history), if any, follows
      // the reset, from the position before its first message.
      const backlog = t.handlers.history > 0 && !r.recovered ? (r.messages ?? []) : [];
      const from = backlog[0]?.seq;
      const valid = typeof from === 'number' && from >= 1 && from <= r.seq;
      t.pos = { epoch: r.epoch, seq: valid ? from - 1 : r.seq };
      try {
        t.handlers.onReset?.({ topic: t.name, epoch: r.epoch, seq: t.pos.seq, recovered: false });
      } catch (e) {
        console.error(`jsonrpc.js: onReset of topic ${t.name} failed:`, e);
      }
      for (const m of valid ? backlog : []) {
        if (m.seq === t.pos.seq + 1) this.apply(t, { epoch: r.epoch, seq: m.seq, data: m.data });
      }
      t.pos.seq = Math.max(t.pos.seq, r.seq);
    } else {
      for (const m of r.messages ?? []) {
        if (m.seq > t.pos.seq) this.apply(t, { epoch: r.epoch, seq: m.seq, data: m.data });
      }
      t.pos.seq = Math.max(t.pos.seq, r.seq);
    }
    t.first?.resolve(t.sub);
    t.first = null;
    if (r.more && r.recovered) return this.subscribeNow(t);
    if (t.again) {
      t.again = false;
      if (t.handlers.onPresence) this.presenceAgain(t);
      else t.asking = false;
    }
    const live = t.buffer;
    t.buffer = [];
    const overflow = t.overflow;
    t.overflow = false;
    // A message of another epoch than the reply's came while it was
    // awaited: the log may have changed under it; start afresh, once.
    let other = false;
    for (const m of live) {
      if (m.epoch !== t.pos.epoch && !firstOfEpoch(t, m)) other = true;
      else this.offer(t, m);
    }
    if (other && !t.inflight) {
      t.pos = null;
      this.subscribeNow(t);
    } else if (overflow && !t.inflight) this.subscribeNow(t);
  }

  // message takes a topic.message notification's params.
  message(p) {
    const t = p && this.map.get(p.topic);
    if (t && typeof p.seq === 'number') this.offer(t, { epoch: p.epoch, seq: p.seq, data: p.data });
  }

  // kicked takes a topic.kicked notification's params: the server removed
  // this connection from the topic; the subscription ends (its first
  // subscribe, if in flight, rejects), and is not made again.
  kicked(p) {
    const t = p && this.map.get(p.topic);
    if (!t) return;
    this.map.delete(t.name);
    t.gen++;
    // A subscribe of it in flight may reach the server after the kick:
    // unsubscribe after it, as unsubscribe() does.
    if (t.calls.size > 0 && this.client.socket) this.leave(t).catch(() => {});
    const e = new KickedError(t.name, typeof p.reason === 'string' ? p.reason.slice(0, 1024) : '');
    if (t.first) return t.first.reject(e);
    try {
      if (t.handlers.onError) t.handlers.onError(e);
      else console.error(`jsonrpc.js: topic ${t.name}:`, e);
    } catch (err) {
      console.error(`jsonrpc.js: onError of topic ${t.name} failed:`, err);
    }
  }

  // presence takes a topic.presence notification's params: who joined
  // and left a topic with presence on the server; onPresence gets them.
  presence(p) {
    const t = p && this.map.get(p.topic);
    if (!t || !t.handlers.onPresence) return;
    const list = (v) => (Array.isArray(v) ? v.filter((id) => typeof id === 'string') : []);
    const e = { topic: t.name, joined: list(p.joined), left: list(p.left),
      count: p.count, more: p.more === true, version: p.version };
    if (typeof e.version === 'number' && e.version > (t.presVer ?? 0)) {
      t.presVer = e.version;
      t.present ??= new Set();
      for (const id of e.joined) t.present.add(id);
      for (const id of e.left) t.present.delete(id);
    }
    this.tell(t, e);
  }

  tell(t, e) {
    try {
      t.handlers.onPresence(e);
    } catch (err) {
      console.error(`jsonrpc.js: onPresence of topic ${t.name} failed:`, err);
    }
  }

  // presenceAgain runs once a topic is subscribed again on a new
  // connection: nothing told the page who came or went while it was
  // away, so it asks topic.members and hands onPresence the difference
  // from what it was told, as one event of the list's version. A topic
  // without presence (the server refuses topic.members) asks nothing more;
  // one that fails leaves the list to the next topic.presence.
  async presenceAgain(t) {
    let r;
    try {
      r = await this.fetchMembers(t);
    } catch {
      return;
    } finally {
      t.asking = false;
    }
    if (this.map.get(t.name) !== t) return;
    const e = this.replace(t, r);
    if (e.joined.length > 0 || e.left.length > 0) this.tell(t, e);
  }

  // replace makes r, a members result, t's list, and returns the change
  // from what it was; ids past the last of a cut list are kept.
  replace(t, r) {
    const before = t.present ?? new Set();
    const now = new Set(r.members);
    const last = r.members[r.members.length - 1] ?? '';
    const e = { topic: t.name, joined: r.members.filter((id) => !before.has(id)), left: [],
      count: r.count, more: r.more, version: r.version };
    for (const id of before) {
      if (now.has(id)) continue;
      if (!r.more || id < last) e.left.push(id);
      else now.add(id);
    }
    e.left.sort();
    t.present = now;
    t.presVer = Math.max(t.presVer ?? 0, r.version);
    return e;
  }

  // members is Subscription.presence: topic.members, for a topic this
  // Client follows.
  async members(t) {
    if (this.map.get(t.name) !== t) throw new Error(`jsonrpc.js: not subscribed to topic ${JSON.stringify(t.name)}`);
    // The server runs calls concurrently: a topic.members sent while the
    // topic's subscribe is in flight (a reconnection) could come first.
    await Promise.all([...t.calls]);
    const res = await this.fetchMembers(t);
    // The page starts its list from res: so does presenceAgain's list
    // (not while it asks after a reconnection: the difference is for it).
    if (this.map.get(t.name) === t && !t.asking && res.version >= (t.presVer ?? 0)) this.replace(t, res);
    return res;
  }

  async fetchMembers(t) {
    const r = await this.client.call('topic.members', { topic: t.name });
    return { topic: t.name, members: Array.isArray(r?.members) ? r.members.filter((id) => typeof id === 'string') : [],
      count: r?.count ?? 0, more: r?.more === true, version: r?.version ?? 0 };
  }

  // offer takes one live message m of t: buffered while a subscribe is in
  // flight, dropped if seen, applied if next; a gap subscribes again with
  // since (m buffered meanwhile), another epoch without (m dropped: the
  // reply resets the topic to a position at or past it).
  offer(t, m) {
    if (t.inflight || !t.pos) return this.hold(t, m);
    if (m.epoch !== t.pos.epoch) {
      if (firstOfEpoch(t, m)) {
        t.pos = { epoch: m.epoch, seq: 0 };
        return this.apply(t, m);
      }
      t.pos = null; // the history was lost: start afresh (onReset)
      return this.subscribeNow(t);
    }
    if (m.seq <= t.pos.seq) return;
    if (m.seq === t.pos.seq + 1) return this.apply(t, m);
    this.hold(t, m);
    this.subscribeNow(t);
  }

  // hold keeps m until the subscribe in flight is answered, up to
  // maxBuffered messages; beyond, it drops m and has the topic subscribe
  // again after the reply, to recover what it dropped from the history.
  hold(t, m) {
    const max = this.client.options.maxBuffered ?? 4096;
    if (max >= 0 && t.buffer.length >= max) t.overflow = true;
    else t.buffer.push(m);
  }

  apply(t, m) {
    t.pos.seq = m.seq;
    try {
      t.handlers.onMessage?.(m.data, { topic: t.name, epoch: m.epoch, seq: m.seq });
    } catch (e) {
      console.error(`jsonrpc.js: onMessage of topic ${t.name} failed:`, e);
    }
  }
}

// firstOfEpoch reports whether m, of another epoch than t's position, is
// the next message all the same: the first of its epoch (seq 1) while t
// has seen no message of its own (seq 0). Nothing came before it in either
// epoch: a topic that had no history (the JetStream store's epoch "none",
// until a publish makes its stream) goes on with its first message.
function firstOfEpoch(t, m) {
  return t.pos.seq === 0 && m.seq === 1;
}
