// fakews.mjs: a stand-in for WebSocket in jsonrpc.js's unit tests: it
// opens on the next tick (or refuses, while refuse is set), records the
// text sent, plays frames from the other side with deliver(), and can be
// made to close itself a few ms after it opened (closeAfter).
export function fakeWebSocket() {
  class FakeWS extends EventTarget {
    static all = [];      // every socket made, in order
    static refuse = false; // new sockets fail to open
    static closeAfter = -1; // >= 0: each socket closes this many ms after it opened
    static get last() { return FakeWS.all.at(-1); }
    readyState = 0;
    bufferedAmount = 0; // set by a test: bytes sent and not yet taken by the network
    sent = [];
    constructor(url) {
      super();
      this.url = url;
      FakeWS.all.push(this);
      setImmediate(() => {
        if (FakeWS.refuse) {
          this.readyState = 3;
          this.dispatchEvent(new Event('error'));
          this.dispatchEvent(new Event('close'));
          return;
        }
        this.readyState = 1;
        this.dispatchEvent(new Event('open'));
        if (FakeWS.closeAfter >= 0) setTimeout(() => this.close(), FakeWS.closeAfter);
      });
    }
    send(text) { this.sent.push(text); }
    close() {
      if (this.readyState === 3) return;
      this.readyState = 3;
      this.dispatchEvent(new Event('close'));
    }
    deliver(text) { this.dispatchEvent(Object.assign(new Event('message'), { data: text })); }
    // calls returns the messages sent with method, parsed.
    calls(method) { return this.sent.map((s) => JSON.parse(s)).filter((m) => m.method === method); }
  }
  return FakeWS;
}

export const settle = () => new Promise((r) => setImmediate(r));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// until waits for cond(), polling, for at most ms.
export async function until(cond, what, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}
