// topics.js: the client side of the topic protocol for jsonrpc.js
// (topic.subscribe, topic.unsubscribe, topic.message; TOPICS in the
// repository's README): a position (epoch, seq) per topic, subscribed
// again with it on every connection, every message applied exactly once
// and in order. MIT licence, part of github.com/peerwire/jsonrpc.
import { RPCError, TimeoutError, ConnectionError } from './errors.js';

// TRANSIENT are the error codes after which a topic subscribes again
// rather than ending: internal error (the server could not read the
// history), overloaded, shutting down.
const TRANSIENT = new Set([-32603, -32000, -32003]);

// Topics are a Client's subscriptions, by topic name.
export class Topics {
  constructor(client) {
    this.client = client;
    this.map = new Map(); // name -> topic state (see subscribe)
  }

  // resubscribe subscribes every topic on the new connection.
  resubscribe() {
    for (const t of this.map.values()) this.subscribeNow(t);
  }

  // end ends every subscription (the client closed).
  end(error) {
    for (const t of this.map.values()) t.first?.reject(error);
    this.map.clear();
  }

  // subscribe is Client.subscribe: it follows topic from now on, and
  // resolves to its Subscription after the first reply.
  subscribe(topic, handlers = {}) {
    this.map.get(topic)?.first?.reject(new ConnectionError('jsonrpc.js: subscribed again'));
    const t = { name: topic, handlers, pos: null, gen: 0, inflight: false, buffer: [], first: null };
    t.sub = {
      topic,
      get position() { return t.pos && { ...t.pos }; },
      unsubscribe: () => this.unsubscribe(t),
    };
    const promise = new Promise((resolve, reject) => { t.first = { resolve, reject }; });
    this.map.set(topic, t);
    if (this.client.stopped) t.first.reject(new ConnectionError('jsonrpc.js: client closed'));
    else this.subscribeNow(t);
    return promise;
  }

  async unsubscribe(t) {
    if (this.map.get(t.name) !== t) return;
    this.map.delete(t.name);
    t.gen++;
    if (!this.client.socket) return;
    try {
      await this.client.call('topic.unsubscribe', { topic: t.name });
    } catch (e) {
      if (!(e instanceof ConnectionError)) throw e;
    }
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
    this.client.call('topic.subscribe', params).then((r) => current() && this.subscribed(t, r), (e) => {
      if (!current()) return;
      t.inflight = false;
      if (e instanceof RPCError && !t.first && TRANSIENT.has(e.code)) {
        // The server cannot read the history now (-32603), is overloaded
        // or shutting down: try again, after a delay.
        t.failures = (t.failures ?? 0) + 1;
        const delay = Math.min(this.client.maxDelay, this.client.minDelay * 2 ** (t.failures - 1));
        return void setTimeout(() => { if (current() && !t.inflight) this.subscribeNow(t); }, delay);
      }
      if (e instanceof RPCError) {
        this.map.delete(t.name);
        if (t.first) return t.first.reject(e);
        return t.handlers.onError ? t.handlers.onError(e) : console.error(`jsonrpc.js: topic ${t.name}:`, e);
      }
      if (e instanceof TimeoutError) this.subscribeNow(t);
      // ConnectionError: the next connection subscribes again.
    });
  }

  // subscribed applies a topic.subscribe reply r, then what came live
  // while it was awaited.
  subscribed(t, r) {
    t.inflight = false;
    t.failures = 0;
    if (!t.pos || !r.recovered || r.epoch !== t.pos.epoch) {
      t.pos = { epoch: r.epoch, seq: r.seq };
      try {
        t.handlers.onReset?.({ topic: t.name, epoch: r.epoch, seq: r.seq, recovered: false });
      } catch (e) {
        console.error(`jsonrpc.js: onReset of topic ${t.name} failed:`, e);
      }
    } else {
      for (const m of r.messages ?? []) {
        if (m.seq > t.pos.seq) this.apply(t, { epoch: r.epoch, seq: m.seq, data: m.data });
      }
      t.pos.seq = Math.max(t.pos.seq, r.seq);
    }
    t.first?.resolve(t.sub);
    t.first = null;
    const live = t.buffer;
    t.buffer = [];
    const overflow = t.overflow;
    t.overflow = false;
    for (const m of live) this.offer(t, m);
    if (overflow && !t.inflight) this.subscribeNow(t);
  }

  // message takes a topic.message notification's params.
  message(p) {
    const t = p && this.map.get(p.topic);
    if (t && typeof p.seq === 'number') this.offer(t, { epoch: p.epoch, seq: p.seq, data: p.data });
  }

  // offer takes one live message m of t: buffered while a subscribe is in
  // flight, dropped if seen, applied if next, else (a gap, or another
  // epoch) buffered while t subscribes again.
  offer(t, m) {
    if (t.inflight || !t.pos) return this.hold(t, m);
    if (m.epoch !== t.pos.epoch) {
      t.pos = null; // the history was lost: start afresh (onReset)
      this.hold(t, m);
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
