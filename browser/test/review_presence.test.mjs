// jsonrpc.js presence across a reconnection, against package topic's Hub
// (browser/review_presence_test.go starts the server and sets JSONRPC_BASE):
// node --experimental-websocket --test review_presence.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '../jsonrpc.js';

const base = process.env.JSONRPC_BASE;
if (!base) throw new Error('JSONRPC_BASE is not set: run through go test -run TestNodeReviewPresenceAfterReconnect ./browser');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(cond, what, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

// docs/browser.md: "To keep a list of who is there, call presence()
// after the subscribe and apply the events of a higher version to it."
// Bob keeps it so; alice joins, then bob's connection drops and alice
// leaves while he is away; bob comes back (the subscription is made
// again by itself). Nothing tells bob's page that alice left: the
// topic's versions start again on the server (the topic's presence was
// forgotten while nobody on this server followed it), so the events
// after the reconnection are "in the list already" by the rule.
test('the presence list a page keeps is right after a reconnection', async (t) => {
  const url = (user) => base.replace(/^http/, 'ws') + '/real?user=' + user;
  const bob = new Client(url('bob'), { minDelay: 1000, maxDelay: 1000 });
  t.after(() => bob.close());
  await bob.start();
  const list = { members: new Set(), version: 0 };
  const versions = [];
  const sub = await bob.subscribe('presence-review', {
    onPresence: (e) => {
      versions.push(e.version);
      if (e.version <= list.version) return;
      list.version = e.version;
      for (const id of e.joined) list.members.add(id);
      for (const id of e.left) list.members.delete(id);
    },
  });
  const p = await sub.presence();
  if (p.version > list.version) {
    list.members = new Set(p.members);
    list.version = p.version;
  }
  const alice = new Client(url('alice'), { reconnect: false });
  t.after(() => alice.close());
  await alice.start();
  await alice.subscribe('presence-review');
  await until(() => list.members.has('alice') && list.members.has('bob'), 'alice and bob in bob\'s list');
  let connected = 0;
  bob.addEventListener('status', (e) => { if (e.status === 'connected') connected++; });
  await fetch(base + '/control/drop', { method: 'POST' }); // both pages drop; alice does not come back
  await until(() => connected === 1, 'bob back');
  await until(async () => {
    // Asked while the page is still reconnecting, presence() may find no
    // subscription on the server yet (-32001): not yet.
    const now = await sub.presence().catch(() => ({ members: [] }));
    return now.members.join() === 'bob';
  }, 'the server to list bob alone');
  await sleep(1000); // four presence windows: what is due has come
  const now = await sub.presence();
  assert.deepEqual([...list.members].sort(), now.members,
    `bob's list after the reconnection: [${[...list.members].sort()}] (versions seen ${versions}), presence() says [${now.members}] at version ${now.version}`);
});
