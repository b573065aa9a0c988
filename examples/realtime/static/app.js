// app.js: the sticky board page. All its talk with the server goes through
// rpc.js; every frame is also shown in the "On the wire" panel.
import { connect } from './rpc.js';

const $ = (id) => document.getElementById(id);
const nameInput = $('name');
const textInput = $('text');
const notesList = $('notes');

// The display name the server asks for (page.name) whenever this page
// posts. Kept per tab, so two tabs can be two people.
const guest = `guest-${1000 + Math.floor(Math.random() * 9000)}`;
nameInput.value = sessionStorage.getItem('name') || guest;
nameInput.addEventListener('input', () => sessionStorage.setItem('name', nameInput.value));
const myName = () => nameInput.value.trim() || guest;

textInput.addEventListener('input', () => {
  const n = [...textInput.value.trim()].length;
  $('count').textContent = `${n}/140`;
  $('count').classList.toggle('over', n > 140);
});

function showError(err) {
  const box = $('error');
  box.hidden = !err;
  box.textContent = !err ? '' : err.code !== undefined ? `${err.message} (error ${err.code})` : err.message;
}

function say(text) {
  $('activity').textContent = text;
}

function setStatus(state, text) {
  $('status').dataset.state = state;
  $('status').textContent = text;
}

// renderNote shows a note, or updates it if it is shown already; notes are
// kept newest first, whichever order they arrive in.
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
      <button type="button" class="like" data-test="like" title="Like">♥ <span data-test="likes"></span></button></footer>`;
    const older = [...notesList.children].find((el) => Number(el.dataset.id) < note.id);
    notesList.insertBefore(li, older ?? null);
  }
  li.querySelector('.note-text').textContent = note.text; // textContent: never HTML
  li.querySelector('.note-author').textContent = note.author;
  li.querySelector('[data-test=likes]').textContent = note.likes;
}

// renderStats shows the board's summary, unless it is older than the one
// shown: a board.stats reply may arrive after a newer board.stats push.
let statsVersion = -1;
function renderStats(s) {
  if (s.version < statsVersion) return;
  statsVersion = s.version;
  $('stat-notes').textContent = s.notes;
  $('stat-online').textContent = s.online;
  $('stat-posted').textContent = s.posted;
}

// traceFrame adds one JSON-RPC frame to the "On the wire" panel.
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
      label = msg.method;
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

async function start() {
  const url = new URL('rpc', location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  let rpc;
  try {
    rpc = await connect(url.href);
  } catch (e) {
    setStatus('offline', 'offline');
    showError(e);
    return;
  }
  setStatus('online', 'connected');
  rpc.trace = traceFrame;

  // Methods the server calls on this page.
  rpc.handle('page.name', () => myName());

  // Notifications the server pushes to every page.
  rpc.on('board.posted', (note) => {
    renderNote(note);
    say(`${note.author} posted a note`);
  });
  rpc.on('board.liked', renderNote);
  rpc.on('board.cleared', ({ by }) => {
    notesList.replaceChildren();
    say(`${by} cleared the board`);
  });
  rpc.on('board.stats', renderStats);
  rpc.onclose = () => {
    setStatus('offline', 'disconnected: reload to reconnect');
    document.querySelectorAll('#compose button').forEach((b) => { b.disabled = true; });
  };

  // Calls, with a result or an error shown to the user.
  $('compose').addEventListener('submit', async (event) => {
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
    try {
      const { cleared } = await rpc.call('board.clear');
      notesList.replaceChildren();
      say(`You cleared the board (${cleared} notes)`);
      showError(null);
    } catch (e) {
      showError(e);
    }
  });
  notesList.addEventListener('click', async (event) => {
    const like = event.target.closest('.like');
    if (!like) return;
    try {
      renderNote(await rpc.call('board.like', { id: Number(like.closest('.note').dataset.id) }));
    } catch (e) {
      showError(e);
    }
  });

  // One batch on load: one JSON array out, both replies matched by id.
  try {
    const [notes, stats] = await Promise.all(rpc.batch([{ method: 'board.list' }, { method: 'board.stats' }]));
    notes.forEach(renderNote);
    renderStats(stats);
    say(`Loaded ${notes.length} notes and the stats with one batch`);
    document.body.dataset.ready = 'true';
  } catch (e) {
    showError(e);
  }
}

start();
