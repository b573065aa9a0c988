// Type check of jsonrpc.d.ts against the uses the README shows: tsc
// --noEmit (TestTypes). Never run, only compiled.
import {
  Client, connect, RPCError, AbortError, TimeoutError, ConnectionError, InvalidResponseError, NotStartedError, ClosedError, KickedError, LSPCancel, MCPCancel, Status,
  type CancelDialect, type ConnectionStatus, type Subscription, type StatusEvent, type TraceHook, type TraceSpan, type SendInfo, type ReceiveInfo,
} from '../jsonrpc.js';

interface Note { id: number; text: string }

async function use(): Promise<void> {
  const rpc = new Client('wss://example.com/rpc', {
    timeout: 10_000,
    cancel: LSPCancel,
    heartbeat: 4_000,
    heartbeatTimeout: 8_000,
    watchNetwork: true,
    minDelay: 500,
    maxDelay: 10_000,
    prepare: async (signal: AbortSignal) => { await fetch('/token', { signal }); },
    prepareTimeout: 10_000,
    onconnect: async (c: Client) => { await c.call('hello'); },
    onstatus: (status: ConnectionStatus, info) => console.log(status, info.delay, info.attempt),
    trace: (dir, text) => console.log(dir, text.length),
  });
  rpc.addEventListener('status', (e: StatusEvent) => console.log(e.status, e.delay));
  rpc.handle('page.confirm', (params: { question: string }, { id, signal }) => (signal.aborted ? false : id !== null && params.question !== ''));
  rpc.on('board.stats', (stats: { notes: number }) => console.log(stats.notes));
  await rpc.start();
  const note = await rpc.call<Note>('board.post', { text: 'hi' }, { timeout: 5000, signal: AbortSignal.timeout(1000) });
  const n: number = note.id;
  rpc.notify('typing', ['me']);
  const [a, b] = rpc.batch([{ method: 'a' }, { method: 'b', params: [1], notify: true }]);
  await a;
  if (b !== undefined) await b;
  const sub: Subscription = await rpc.subscribe<Note>('board', {
    history: 50,
    onMessage: (data, { topic, epoch, seq }) => console.log(data.text, topic, epoch, seq + n),
    onReset: ({ recovered, seq }) => console.log(recovered === false, seq),
    onError: (e) => console.log(e instanceof KickedError ? e.reason : e.code),
    onPresence: ({ topic, joined, left, count, more, version }) => console.log(topic, joined.length - left.length, count, more, version),
  });
  const present = await sub.presence();
  console.log(present.members.join(), present.count, present.more, present.version, present.topic);
  console.log(sub.position?.epoch, sub.topic, rpc.status === Status.connected, rpc.reconnects);
  await sub.unsubscribe();
  try {
    await rpc.call('x');
  } catch (e) {
    if (e instanceof RPCError) console.log(e.code, e.message, e.data);
    if (e instanceof AbortError || e instanceof TimeoutError || e instanceof ConnectionError) console.log(e.name);
    if (e instanceof InvalidResponseError) console.log(e.received);
    if (e instanceof NotStartedError || e instanceof ClosedError) console.log(e.name);
  }
  rpc.close();
  const dialect: CancelDialect = { method: '$/cancel', params: (id) => ({ id }), id: (p) => (p as { id?: string }).id, idMember: 'id' };
  const other = await connect(new URL('wss://example.com/rpc'), { cancel: Math.random() < 0.5 ? MCPCancel : dialect, reconnect: false });
  other.close();
  const tracing: TraceHook = {
    send: ({ method, id, notify }: SendInfo): TraceSpan => ({ meta: { traceparent: `00-${method}-${id ?? ''}-${notify}` }, end: (e) => console.log(e) }),
    receive: ({ meta }: ReceiveInfo) => ({ run: (fn) => fn(), end: () => console.log(meta?.traceparent) }),
  };
  new Client('wss://example.com/rpc', { tracing }).close();
  throw new RPCError(-32050, 'no', { why: 'test' });
}
void use;
