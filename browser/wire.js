// wire.js: JSON-RPC 2.0 messages as text for jsonrpc.js, and the ids of
// received messages exactly as they came. MIT licence, part of
// github.com/peerwire/jsonrpc.

export function message(method, params) {
  return params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
}

// errorReply is the text of an error reply; id is the id's JSON text.
export function errorReply(id, code, msg, data) {
  const error = data === undefined ? { code, message: msg } : { code, message: msg, data };
  return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(error)}}`;
}

// rawOf is the JSON text of an id value taken from parsed params (a
// cancel notification's): exact for strings and safe integers.
export function rawOf(id) {
  return id === undefined ? undefined : JSON.stringify(id);
}

// idKey is the key an id is known by, from its JSON text: the same for
// two texts of one JSON value (1 and 1.0, 10 and 1e1), different for two
// values, integers past 2^53 included. Strings and null stand for
// themselves.
export function idKey(raw) {
  if (raw?.startsWith('"')) return JSON.stringify(JSON.parse(raw));
  const n = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(raw ?? '');
  if (!n) return raw;
  let digits = (n[2] + (n[3] ?? '')).replace(/^0+/, '');
  let exp = Number(n[4] ?? 0) - (n[3] ?? '').length;
  if (digits === '') return '0';
  const trailing = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailing);
  exp += trailing;
  return `${n[1]}${digits}e${exp}`;
}

// rawMember returns the JSON text of the top-level member key of the
// object whose JSON text is text, as it came, or undefined.
export function rawMember(text, key) {
  return scanObjects(text)[0]?.[key];
}

// rawIDs returns, for the message (or each message of the batch) parsed
// from text, the JSON text of its "id" member as it came, or undefined if
// it has none. JSON.parse would turn 9007199254740993 into ...992 and 1.0
// into 1; a reply must carry the id back exactly, so numbers are cut out
// of the text itself. Strings and null round-trip through JSON.stringify.
export function rawIDs(text, msg) {
  const list = Array.isArray(msg) ? msg : [msg];
  const ids = list.map((m) => (m && typeof m === 'object' && 'id' in m ? JSON.stringify(m.id) : undefined));
  if (!list.some((m) => m && typeof m === 'object' && typeof m.id === 'number')) return ids;
  const scanned = scanObjects(text);
  return ids.map((id, i) => (typeof list[i]?.id === 'number' ? scanned[i]?.id : id));
}

// rawParams returns, for the message (or each message of the batch)
// parsed from text, the JSON text of its "params" member as it came.
export function rawParams(text, msg) {
  const scanned = scanObjects(text);
  return Array.isArray(msg) ? scanned.map((o) => o?.params) : [scanned[0]?.params];
}

// scanObjects walks the JSON text of one object or an array of objects
// and returns, for each object, the text of each of its top-level members
// by key (undefined for an element that is no object).
function scanObjects(text) {
  let i = 0;
  const ws = () => { while (' \t\n\r'.includes(text[i]) && i < text.length) i++; };
  const str = () => { // at '"', returns the decoded string
    const start = i++;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const skip = () => { // skips one value
    ws();
    if (text[i] === '"') return void str();
    if (text[i] === '{' || text[i] === '[') {
      const close = text[i] === '{' ? '}' : ']';
      i++;
      ws();
      while (text[i] !== close) {
        if (close === '}') { ws(); str(); ws(); i++; }
        skip();
        ws();
        if (text[i] === ',') i++;
        ws();
      }
      i++;
      return;
    }
    while (i < text.length && !',}] \t\n\r'.includes(text[i])) i++;
  };
  const object = () => { // at '{', returns its members' texts by key
    const members = {};
    i++;
    ws();
    while (text[i] !== '}') {
      ws();
      const key = str();
      ws();
      i++; // ':'
      ws();
      const start = i;
      skip();
      members[key] = text.slice(start, i);
      ws();
      if (text[i] === ',') i++;
      ws();
    }
    i++;
    return members;
  };
  ws();
  if (text[i] === '{') return [object()];
  const out = [];
  i++;
  ws();
  while (text[i] !== ']') {
    ws();
    if (text[i] === '{') out.push(object());
    else { out.push(undefined); skip(); }
    ws();
    if (text[i] === ',') i++;
    ws();
  }
  return out;
}
