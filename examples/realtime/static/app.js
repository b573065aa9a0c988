// app.js: the sticky board page. It signs in first (POST login, which sets
// the session cookie that the WebSocket upgrade carries), then all its talk
// with the server goes through jsonrpc.js (served by the Go package
// browser at js/); every frame is also shown in the
// "On the wire" panel.
import { Client, RPCError } from './js/jsonrpc.js';

// The JSDoc types are checked by tsc --strict --checkJs (TestPageTypes)
// against api.d.ts, made from the server's Go types (go generate): a
// change to a Go type that this page's use no longer fits fails the check.
// The DOM is left loose ($ gives any); the talk with the server is typed.
/** @typedef {import('./api.js').TypedClient} TypedClient */
/** @typedef {import('./api.js').Note} Note */
/** @typedef {import('./api.js').Stats} Stats */
/** @typedef {import('./api.js').Sent} Sent */

const CodeNotConfirmed = -32012; // board.clear that this page did not confirm

/** @type {(id: string) => any} */
const $ = (id) => document.getElementById(id);
const nameInput = $('name');
const textInput = $('text');
const notesList = $('notes');

// The name to sign in with, remembered per tab, so that two tabs can be
// two people. The server signs notes with the name of the session, which
// this page cannot change once it is connected.
const guest = `guest-${1000 + Math.floor(Math.random() * 9000)}`;
nameInput.value = sessionStorage.getItem('name') || guest;
nameInput.addEventListener('input', () => sessionStorage.setItem('name', nameInput.value));

textInput.addEventListener('input', () => {
  const n = [...textInput.value.trim()].length;
  $('count').textContent = `${n}/140`;
  $('count').classList.toggle('over', n > 140);
});

/** @param {any} err an Error (an RPCError has a code), or null */
function showError(err) {
  const box = $('error');
  box.hidden = !err;
  box.textContent = !err ? '' : err.code !== undefined ? `${err.message} (error ${err.code})` : err.message;
}

/** @param {string} text */
function say(text) {
  $('activity').textContent = text;
}

/** @param {string} state @param {string} text */
function setStatus(state, text) {
  $('status').dataset.state = state;
  $('status').textContent = text;
}

// renderNote shows a note, or updates it if it is shown already; notes are
// kept newest first, whichever order they arrive in.
/** @param {Note} note */
function renderNote(note) {
  let li = notesList.querySelector(`[data-id="${note.id}"]`);
  if (!li) {
    li = document.createElement('li');
    li.className = 'note';
    li.dataset.test = 'note';
    li.dataset.id = note.id;
    li.dataset.color = note.id % 3; // a note keeps its colour and tilt wherever it moves
    li.style.setProperty('--tilt', `${((note.id * 37) % 7) - 3}deg`);
    li.innerHTML = `<p class="note-text" data-test="note-text"></p>
      <footer><span class="note-author" data-test="note-author"></span>
      <time class="note-time" data-test="note-time"></time>
      <button type="button" class="like" data-test="like" aria-pressed="false">♥ <span data-test="likes"></span></button></footer>`;
    const older = [...notesList.children].find((el) => Number(el.dataset.id) < note.id);
    notesList.insertBefore(li, older ?? null);
  }
  li.querySelector('.note-text').textContent = note.text; // textContent: never HTML
  li.querySelector('.note-author').textContent = note.author;
  li.querySelector('[data-test=likes]').textContent = note.likes;
  const time = li.querySelector('.note-time');
  time.dateTime = note.time;
  time.textContent = noteTime(note.time);
  time.title = new Date(note.time).toLocaleString();
  // A like is once per person: the button shows whether it is yours, and
  // takes it back when it is.
  const mine = (note.likedBy ?? []).includes(myName);
  const like = li.querySelector('.like');
  like.setAttribute('aria-pressed', String(mine));
  like.classList.toggle('liked', mine);
  like.title = mine ? 'You like this: click to take your like back' : 'Like';
}

// noteTime shows when a note was posted: the time today, the date before.
/** @param {string} iso */
function noteTime(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return '';
  const today = new Date().toDateString() === t.toDateString();
  return today ? t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : t.toLocaleDateString([], { day: 'numeric', month: 'short' });
}

// renderStats shows the board's summary, unless it is older than the one
// shown: a board.stats reply may arrive after a newer board.stats push.
let statsVersion = -1;
/** @param {Stats} s */
function renderStats(s) {
  if (s.version < statsVersion) return;
  statsVersion = s.version;
  $('stat-notes').textContent = s.notes;
  $('stat-online').textContent = s.online;
  $('stat-posted').textContent = s.posted;
}

// traceFrame adds one JSON-RPC frame to the "On the wire" panel.
/** @param {'in' | 'out'} dir @param {string} text */
function traceFrame(dir, text) {
  let kind = 'reply';
  let label = '';
  try {
    const msg = JSON.parse(text);
    if (Array.isArray(msg)) {
      kind = 'batch';
      label = msg.map((m) => m.method ?? (m.error ? 'error' : 'result')).join(', ');
    } else if (msg.method !== undefined) {
      kind = 'id' in msg ? 'call' : 'notification';
      // The board's news comes on the topic "board": the method it
      // stands for is in the message's data.
      label = msg.method === 'topic.message' ? `${msg.params?.data?.method} #${msg.params?.seq} (topic.message)` : msg.method;
    } else if (msg.error) {
      kind = 'error';
    }
  } catch { /* shown as is */ }
  const li = document.createElement('li');
  li.dataset.dir = dir;
  li.dataset.kind = kind;
  const head = document.createElement('b');
  head.textContent = `${dir === 'out' ? '→' : '←'} ${kind} ${label}`;
  head.title = dir === 'out' ? 'sent by this page' : 'sent by the server';
  const body = document.createElement('code');
  body.textContent = text.length > 300 ? `${text.slice(0, 300)}…` : text;
  li.append(head, body);
  const wire = $('wire');
  wire.prepend(li);
  while (wire.children.length > 40) wire.lastElementChild.remove();
}

// signIn starts a session: the server answers with the name it will sign
// this page's notes with, and sets the session cookie (HttpOnly: this
// script never sees it).
/** @param {string} name @returns {Promise<string>} */
async function signIn(name) {
  const resp = await fetch('login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (!resp.ok) throw new Error(`cannot sign in: ${(await resp.text()).trim() || resp.status}`);
  return (await resp.json()).name;
}

$('login').addEventListener('submit', async (/** @type {Event} */ event) => {
  event.preventDefault();
  $('signin').disabled = true;
  try {
    const name = await signIn(nameInput.value.trim() || guest);
    myName = name;
    $('me-name').textContent = name;
    if (await start()) {
      $('login').hidden = true;
      $('me').hidden = false;
      $('compose').hidden = false;
      $('nudge').hidden = false;
      showError(null);
    }
  } catch (e) {
    showError(e);
  } finally {
    $('signin').disabled = false;
  }
});

// The name this page signed in with: a reconnection signs in again with
// it, since a restarted server may have forgotten the session.
let myName = '';

/** @param {boolean} online */
function setOnline(online) {
  document.querySelectorAll('#compose button').forEach((b) => { /** @type {HTMLButtonElement} */ (b).disabled = !online; });
}

// loadBoard fetches the whole board with one batch: one JSON array out,
// both replies matched by id. It runs when the subscription to the topic
// "board" starts afresh (the first connection, or a reconnection whose
// missed news the server no longer has); otherwise a page that was away
// gets what it missed from the topic's history and fetches nothing.
/** @param {TypedClient} rpc */
async function loadBoard(rpc) {
  // A batch's replies are untyped (batch is not in TypedClient): say what they are.
  const replies = await Promise.all(rpc.batch([{ method: 'board.list' }, { method: 'board.stats' }]));
  const notes = /** @type {Note[] | null} */ (replies[0]);
  const stats = /** @type {Stats} */ (replies[1]);
  notesList.replaceChildren();
  (notes ?? []).forEach(renderNote);
  statsVersion = -1; // a restarted cluster may count afresh
  renderStats(stats);
  say(`Loaded ${notes?.length ?? 0} notes and the stats with one batch`);
}

// showState shows the connection's state: after a drop the page connects
// again by itself, with a growing delay.
/** @param {import('./js/jsonrpc.js').ConnectionStatus} state @param {import('./js/jsonrpc.js').StatusInfo} info */
function showState(state, info) {
  switch (state) {
    case 'connecting':
      setStatus('connecting', 'connecting…');
      break;
    case 'connected':
      setStatus('online', 'connected');
      setOnline(true);
      break;
    case 'reconnecting':
      setStatus('reconnecting', `reconnecting in ${Math.max(1, Math.ceil((info.delay ?? 0) / 1000))} s…`);
      setOnline(false);
      break;
    case 'closed':
      setStatus('offline', 'offline');
      setOnline(false);
      break;
  }
}

// start connects with the session and sets the page up; it resolves to
// false when the server refused the connection.
async function start() {
  const url = new URL('rpc', location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const rpc = /** @type {TypedClient} */ (new Client(url.href, {
    prepare: async () => { await signIn(myName); },
    onstatus: showState,
    trace: traceFrame,
  }));

  // Methods the server calls on this page: before it clears the board,
  // the server asks the person here, with the count only it knows.
  rpc.handle('page.confirm', (/** @type {{question: string}} */ { question }) => window.confirm(question));
  // Another page's user nudged this page's (board.nudge, from any node).
  rpc.handle('page.nudge', (/** @type {{from: string}} */ { from }) => {
    say(`${from} nudged you`);
    return true;
  });

  // The board's news: every page subscribes to the topic "board", whose
  // messages are {method, params} of the news, each exactly once and in
  // order, across reconnections (jsonrpc.js subscribes again with its
  // position). The same handlers serve the plain notifications the server
  // sends before the subscription starts.
  /** @type {Map<string, (params: any) => void>} */
  const news = new Map();
  /** @type {<M extends keyof Sent>(method: M, fn: (params: Sent[M]) => void) => void} */
  const onNews = (method, fn) => {
    news.set(method, fn);
    rpc.on(method, fn);
  };
  onNews('board.posted', (note) => {
    renderNote(note);
    say(`${note.author} posted a note`);
  });
  onNews('board.liked', (liked) => {
    renderNote(liked);
    if (liked.by === myName) return; // this page's own like: its reply says it
    const whose = liked.author === myName ? 'your' : `${liked.author}'s`;
    say(liked.liked ? `${liked.by} liked ${whose} note` : `${liked.by} took back a like of ${whose} note`);
  });
  // The board's news reaches every page, this one too, and may come
  // before or after the reply to this page's own clear (the news goes
  // round the cluster): the reply says it better, so the news of this
  // page's own clear is not shown, whichever comes first.
  let clearing = false;
  let ownClearNews = false; // the news of this page's clear came during it
  let ownClearAhead = false; // the reply came, its news not yet
  onNews('board.cleared', ({ by }) => {
    notesList.replaceChildren();
    if (by === myName && clearing) return void (ownClearNews = true);
    if (by === myName && ownClearAhead) return void (ownClearAhead = false);
    say(`${by} cleared the board`);
  });
  onNews('board.stats', renderStats);

  // Calls, with a result or an error shown to the user.
  $('compose').addEventListener('submit', async (/** @type {Event} */ event) => {
    event.preventDefault();
    try {
      renderNote(await rpc.call('board.post', { text: textInput.value }));
      textInput.value = '';
      textInput.dispatchEvent(new Event('input'));
      showError(null);
    } catch (e) {
      showError(e);
    }
  });
  $('clear').addEventListener('click', async () => {
    clearing = true;
    ownClearNews = false;
    try {
      // The server waits up to a minute for the person to answer page.confirm.
      const { cleared } = await rpc.call('board.clear', undefined, { timeout: 70_000 });
      ownClearAhead = !ownClearNews;
      notesList.replaceChildren();
      say(`You cleared the board (${cleared} notes)`);
      showError(null);
    } catch (e) {
      if (!(e instanceof RPCError) || e.code !== CodeNotConfirmed) return showError(e);
      say('You kept the board as it is');
      showError(null);
    } finally {
      clearing = false;
    }
  });
  $('nudge').addEventListener('submit', async (/** @type {Event} */ event) => {
    event.preventDefault();
    const to = /** @type {HTMLInputElement} */ ($('nudge-to')).value;
    try {
      const { seen } = await rpc.call('board.nudge', { to });
      say(seen ? `${to} saw your nudge` : `${to}'s page did not show your nudge`);
      showError(null);
    } catch (e) {
      showError(e);
    }
  });
  notesList.addEventListener('click', async (/** @type {any} */ event) => {
    const like = event.target.closest('.like');
    if (!like) return;
    const unlike = like.getAttribute('aria-pressed') === 'true';
    try {
      const note = await rpc.call('board.like', { id: Number(like.closest('.note').dataset.id), unlike });
      renderNote(note);
      const whose = note.author === myName ? 'your own' : `${note.author}'s`;
      say(unlike ? `You took back your like of ${whose} note` : `You liked ${whose} note`);
      showError(null);
    } catch (e) {
      showError(e);
    }
  });

  let loading = Promise.resolve();
  try {
    await rpc.start(); // the first connection
    await rpc.subscribe('board', {
      onMessage: ({ method, params }) => news.get(method)?.(params),
      onReset: () => { loading = loadBoard(rpc).catch(showError); },
    });
    await loading; // the board, loaded on the first subscription's reset
  } catch (e) {
    setStatus('offline', 'offline');
    showError(new Error(`${e instanceof Error ? e.message : e}: sign in again`));
    return false;
  }
  document.body.dataset.ready = 'true';
  return true;
}
