// The declarations made from openrpc/testdata/board.json, used as a page
// would: each line with @ts-expect-error must be refused by tsc, the
// others taken (TestGenerate).
import type { TypedClient, Note } from './board.js';

export async function use(rpc: TypedClient): Promise<void> {
  const note: Note = await rpc.call('board.post', { text: 'hi' });
  await rpc.call('board.post', ['hi'], { timeout: 1000 });
  const id: number = note.id;
  const parent: Note | null | undefined = note.parent;
  // @ts-expect-error text is a string
  await rpc.call('board.post', { text: 1 });
  // @ts-expect-error board.post needs its params
  await rpc.call('board.post');
  // @ts-expect-error no such member
  await rpc.call('board.post', { text: 'x', colour: 'red' });
  // @ts-expect-error no such method
  await rpc.call('board.nope');
  const sum: number = await rpc.call('add', [1, 2]);
  // @ts-expect-error a number, not a string
  await rpc.call('add', [1, 'x']);
  // @ts-expect-error the result is a number
  const wrong: string = await rpc.call('add', [1, 2]);
  await rpc.call('raw', { anything: [1] });
  const echoed: unknown[] | null = await rpc.call('echo', [1, 'x']);
  rpc.notify('typing', { who: 'me' });
  // @ts-expect-error who is a string
  rpc.notify('typing', { who: 1 });
  // @ts-expect-error board.post is a call
  rpc.notify('board.post', { text: 'x' });
  rpc.on('board.posted', (n) => console.log(n.text.length, n.time));
  // @ts-expect-error Note has no colour
  rpc.on('board.posted', (n) => n.colour);
  // @ts-expect-error board.nope is not sent
  rpc.on('board.nope', () => {});
  const sub = await rpc.subscribe('board', { onMessage: (n, meta) => console.log(n.text, meta.seq) });
  // @ts-expect-error no such topic
  await rpc.subscribe('nope');
  await sub.unsubscribe();
  rpc.close();
  console.log(id, parent, sum, wrong, echoed);
}
