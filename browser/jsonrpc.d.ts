// Type declarations of jsonrpc.js: a JSON-RPC 2.0 peer for the browser
// over one WebSocket. MIT licence, part of github.com/peerwire/jsonrpc.

/** A JSON value. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

/** params of a call or notification: an object, an array, or none. */
export type Params = { [key: string]: unknown } | unknown[] | undefined;

/** A JSON-RPC error object as an Error: what a call rejects with on an
 * error reply, and what a handler throws to send a specific error. */
export class RPCError extends Error {
  constructor(code: number, message: string, data?: unknown);
  readonly name: 'RPCError';
  code: number;
  data?: unknown;
}

/** A call given up because its AbortSignal fired; cause is the signal's reason. */
export class AbortError extends Error {
  constructor(message: string, cause?: unknown);
  readonly name: 'AbortError';
}

/** A call given up because no reply came within its timeout. */
export class TimeoutError extends Error {
  constructor(message: string);
  readonly name: 'TimeoutError';
}

/** A call that cannot complete: its connection ended before the reply
 * came (the call may or may not have run), or the client is closed. */
export class ConnectionError extends Error {
  constructor(message: string);
  readonly name: 'ConnectionError' | 'ClosedError';
}

/** A call, notification, batch or subscription made before start(): it
 * fails at once (await start() first, or make the client with connect()). */
export class NotStartedError extends Error {
  constructor(message: string);
  readonly name: 'NotStartedError';
}

/** What start() after close() rejects with, and calls after close():
 * a closed Client stays closed; make a new Client to connect again. */
export class ClosedError extends ConnectionError {
  constructor(message: string);
  readonly name: 'ClosedError';
}

/** The server removed the page from a topic (topic.kicked): the
 * subscription has ended and is not made again on reconnection. */
export class KickedError extends Error {
  constructor(topic: string, reason?: string);
  readonly name: 'KickedError';
  readonly topic: string;
  /** The server's reason, for the application ('' if none). */
  readonly reason: string;
}

/** A reply that is not a valid JSON-RPC response: an "error" that is not
 * an error object with an integer code, or neither "result" nor "error".
 * received is the message as it came, parsed. */
export class InvalidResponseError extends Error {
  constructor(message: string, received: unknown);
  readonly name: 'InvalidResponseError';
  received: unknown;
}

/** How a cancelled call is announced to the other side, and how its
 * cancellations of our served calls are read. */
export interface CancelDialect {
  /** The notification's method, e.g. "$/cancelRequest". */
  method: string;
  /** The notification's params for the call with this id. */
  params(id: string): Params;
  /** The id of the call a received cancel notification names. */
  id(params: unknown): string | number | undefined;
  /** The member of the cancel notification's params that holds the id,
   * so that its text is read as it came (an integer past 2^53, 1.0) and
   * finds the served call with exactly that id; without it, the id that
   * id() returns is used, exact for strings and safe integers. */
  idMember?: string;
}

/** $/cancelRequest {id}: the Language Server Protocol's, Go's jsonrpc.LSPCancel. */
export const LSPCancel: CancelDialect;
/** notifications/cancelled {requestId}: the Model Context Protocol's, Go's jsonrpc.MCPCancel. */
export const MCPCancel: CancelDialect;

export type ConnectionStatus = 'connecting' | 'connected' | 'reconnecting' | 'closed';
export const Status: Readonly<{ [S in ConnectionStatus]: S }>;

/** What comes with a status change. */
export interface StatusInfo {
  /** reconnecting: the milliseconds until the next attempt. */
  delay?: number;
  /** reconnecting, connecting: the attempt's number, from 1, since the last connection. */
  attempt?: number;
  /** reconnecting: why the last attempt failed (null after a drop); closed: why start failed. */
  error?: unknown;
}

/** The 'status' event a Client dispatches on every status change. */
export interface StatusEvent extends Event, StatusInfo {
  readonly status: ConnectionStatus;
}

export interface ClientOptions {
  /** Default per-call timeout in milliseconds; default 30000; 0, a
   * negative number or Infinity: none. */
  timeout?: number;
  /** The cancel dialect: sent when a call of ours times out or is aborted
   * after it was sent, and read to abort the calls we serve. Default
   * none (null), as in the Go Peer's Options.Cancel. */
  cancel?: CancelDialect | null;
  /** Reconnect when the connection drops; default true. */
  reconnect?: boolean;
  /** Backoff between attempts: doubles from minDelay to maxDelay
   * milliseconds, each delay drawn from the upper half; defaults 500 and
   * 10000. A connection that dies within maxDelay of opening is no
   * success: the delays go on growing, and start again from minDelay only
   * after a connection that lasted. */
  minDelay?: number;
  maxDelay?: number;
  /** Milliseconds without a sign of life after which rpc.ping is sent (a
   * method name the specification reserves: any reply, an error too, is a
   * sign of life; a Go server answers -32601). Anything received is a
   * sign of life, and so is the network taking data the page sent
   * (bufferedAmount going down). Default 4000; 0 or a negative number:
   * no heartbeat. The offline and online events (watchNetwork) work with
   * it too. */
  heartbeat?: number;
  /** Milliseconds after the ping without a sign of life after which the
   * connection is taken as lost and reconnected: a silent connection is
   * found within heartbeat + heartbeatTimeout (12 s by default). While
   * the page has sent something since it last heard from the server, the
   * server may be pushing back (reading nothing while its handlers catch
   * up with what the page sent), which from the page looks like a dead
   * network: the wait after the ping is then the client's timeout
   * instead, when longer (30 s by default); so it is while a call of the
   * page's awaits its reply (a server whose handler slots are all busy
   * answers the ping only when one ends). Default twice heartbeat. */
  heartbeatTimeout?: number;
  /** Follow the browser's offline and online events: offline ends the
   * connection at once (reconnecting), online tries again at once.
   * Default true (where globalThis has addEventListener). */
  watchNetwork?: boolean;
  /** Live messages of a topic held while its subscribe is in flight; past
   * it they are dropped and the topic subscribes again after the reply,
   * recovering them from the history. Default 4096; negative: no bound. */
  maxBuffered?: number;
  /** Runs before each reconnection attempt (sign in again, say), for at
   * most prepareTimeout: past it, or on close(), signal aborts and the
   * attempt fails (with a TimeoutError, reported as the 'reconnecting'
   * status's error), and the next attempt runs prepare again. Pass signal
   * on to fetch, so that a sign-in that hangs is cut off. */
  prepare?: (signal: AbortSignal) => void | Promise<void>;
  /** Milliseconds prepare may take; default 10000; 0, a negative number
   * or Infinity: no bound. */
  prepareTimeout?: number;
  /** Runs on every connection, the first included, once the topics are
   * subscribed again and waiting calls sent, before the status is
   * 'connected'; a throw drops the connection (start rejects; a
   * reconnection tries again). */
  onconnect?: (client: Client) => void | Promise<void>;
  /** Called on every status change (as the 'status' event). */
  onstatus?: (status: ConnectionStatus, info: StatusInfo) => void;
  /** Called with every frame sent ('out') and received ('in'). */
  trace?: ((dir: 'in' | 'out', text: string) => void) | null;
  /** The WebSocket constructor; default globalThis.WebSocket. */
  WebSocket?: new (url: string | URL) => WebSocket;
  /** Spans and W3C trace context for what the page sends and serves,
   * through the application's tracing library (README: an adapter for
   * @opentelemetry/api). Default null: no spans, and nothing added to
   * what is sent. */
  tracing?: TraceHook | null;
}

/** What the page sends, as TraceHook.send sees it. */
export interface SendInfo {
  method: string;
  /** The call's id; absent for a notification. */
  id?: string;
  notify: boolean;
}

/** What the page serves, as TraceHook.receive sees it. */
export interface ReceiveInfo {
  method: string;
  /** The call's id, as JSON.parse gives it; absent for a notification. */
  id?: string | number | null;
  notify: boolean;
  /** params._meta as it came, when it is an object: where the other side
   * put traceparent and tracestate (MCP's SEP-414, Go's
   * otel.MCPTraceContext). */
  meta?: { [key: string]: unknown };
}

/** An application's tracing, for Client: spans of what the page sends
 * and serves, and the trace context that goes with what it sends.
 * jsonrpc.js calls the hook and depends on no tracing library. Not called
 * for the heartbeat's rpc.ping, cancel notifications or replies. */
export interface TraceHook {
  /** Called as a call, notification or batch element is made (a call's
   * span lasts until it settles, waiting for a connection included; a
   * notification's until it is sent). */
  send?(info: SendInfo): TraceSpan | undefined | void;
  /** Called as a call or notification from the other side arrives,
   * before its handler or listeners run (in span.run). */
  receive?(info: ReceiveInfo): TraceSpan | undefined | void;
}

/** One span of a TraceHook. */
export interface TraceSpan {
  /** send: fields merged into the params' _meta (what it holds kept,
   * these replacing the same names), typically traceparent and
   * tracestate; only params that are an object carry them (an array, or
   * no params, carries none). */
  meta?: { [key: string]: string };
  /** receive: runs fn, the handler or the listeners, in the span's
   * context and returns what fn returns; default fn(). */
  run?<T>(fn: () => T): T;
  /** Ends the span, once: error is why the call failed (an RPCError, a
   * TimeoutError, a handler's throw, ...), undefined on success. */
  end(error?: unknown): void;
}

export interface CallOptions {
  /** Milliseconds; default the client's timeout. Counts time spent
   * waiting for a connection too. */
  timeout?: number;
  /** Aborting rejects the call with an AbortError and, if it was sent
   * and a cancel dialect is set, tells the other side. */
  signal?: AbortSignal;
}

/** One element of a batch: a call, or a notification if notify. */
export interface BatchElement {
  method: string;
  params?: Params;
  notify?: boolean;
}

/** What a handler of a call from the other side gets besides params. */
export interface ServeContext {
  /** The call's id, as JSON.parse gives it. */
  id: string | number | null;
  /** Aborts when the other side cancels the call (cancel dialect) or the connection ends. */
  signal: AbortSignal;
}

/** A topic's position: the epoch of its history and the last seq applied. */
export interface Position {
  epoch: string;
  seq: number;
}

export interface MessageMeta extends Position {
  topic: string;
}

export interface ResetInfo extends Position {
  topic: string;
  recovered: false;
}

export interface SubscribeHandlers<T = unknown> {
  /** The last N messages as a backlog, with the first subscribe and any
   * whose position cannot be recovered: onReset at the position before
   * the first of them, then each through onMessage, before the live
   * ones. The server gives at most what one reply carries (1,000
   * messages, 64 KiB by default); count them to see that you got fewer.
   * Default 0: no backlog. A whole number; otherwise subscribe rejects
   * with a TypeError. */
  history?: number;
  /** Every message of the topic, exactly once and in seq order, across
   * reconnects (a catch-up the server sends in pages included). */
  onMessage?: (data: T, meta: MessageMeta) => void;
  /** The history could not be recovered (also on the first subscription):
   * fetch the state again; messages after position follow. */
  onReset?: (info: ResetInfo) => void;
  /** A later re-subscription was refused (RPCError), or the server
   * removed the page from the topic (KickedError, topic.kicked); the
   * subscription has ended, and is not made again on reconnection.
   * (-32603, -32000 and -32003, the server unable to read the history
   * for now, overloaded or shutting down, and a re-subscription that got
   * no reply within the timeout, are tried again after a delay that grows
   * as reconnection's does instead.) */
  onError?: (error: RPCError | KickedError) => void;
  /** Who joined and left the topic (topic.presence), on a topic the
   * server has presence on: the net changes of a short window, each list
   * at most the server's cap (100 by default; more: true when cut).
   * After a reconnection the client asks topic.members and hands it one
   * event with who came and went while it was away. */
  onPresence?: (event: PresenceEvent) => void;
}

/** A topic.presence: identities (the server's names for users) that
 * joined and left, sorted; count present after it; version higher than
 * every one the server's Hub gave before. */
export interface PresenceEvent {
  topic: string;
  joined: string[];
  left: string[];
  count: number;
  /** A list was cut: ask presence() for the list. */
  more: boolean;
  version: number;
}

/** A topic.members reply: the identities present as of the event of
 * version (apply the events of a higher version to it), the first of
 * them sorted, more: true when the server's cap cut the list (count
 * says how many in all). */
export interface Presence {
  topic: string;
  members: string[];
  count: number;
  more: boolean;
  version: number;
}

export interface Subscription {
  readonly topic: string;
  /** The last position applied, or null before the first reply. */
  readonly position: Position | null;
  /** Ends the subscription (topic.unsubscribe when connected). */
  unsubscribe(): Promise<void>;
  /** Who is present on the topic (topic.members): rejects with the
   * server's RPCError -32001 if it has no presence on the topic, and with
   * an Error once the subscription has ended. */
  presence(): Promise<Presence>;
}

/** A JSON-RPC 2.0 peer over a WebSocket that it opens again, with
 * backoff, whenever it drops, until close(). */
export class Client extends EventTarget {
  constructor(url: string | URL, options?: ClientOptions);
  readonly url: string | URL;
  /** The current status. */
  readonly status: ConnectionStatus;
  /** Connections opened after the first. */
  readonly reconnects: number;
  trace: ((dir: 'in' | 'out', text: string) => void) | null;

  /** Opens the first connection; resolves once it is open and onconnect
   * has run; rejects (status 'closed') if that first attempt fails, after
   * which start may be called again. Called while started, returns the
   * same Promise (one connection). After close(), rejects with a
   * ClosedError: a closed Client stays closed. */
  start(): Promise<void>;
  /** Calls method; rejects with RPCError, TimeoutError, AbortError or
   * ConnectionError (ClosedError after close()), and at once with a
   * NotStartedError before start(). */
  call<R = any>(method: string, params?: Params, options?: CallOptions): Promise<R>;
  /** Sends a notification; throws ConnectionError when not connected
   * (ClosedError after close()), NotStartedError before start(). */
  notify(method: string, params?: Params): void;
  /** One JSON array out; per element the Promise of its outcome, undefined for notify elements. */
  batch(elements: BatchElement[], options?: CallOptions): (Promise<any> | undefined)[];
  /** Serves method for the other side. */
  handle(method: string, fn: (params: any, ctx: ServeContext) => unknown): this;
  /** Listens to the other side's notifications of method. */
  on(method: string, fn: (params: any) => void): this;
  /** topic.subscribe with recovery across reconnects. Rejects with the
   * server's RPCError if it refuses the topic, a TimeoutError if the
   * first reply does not come in time (the topic is then not followed),
   * a KickedError if the server removes the page from the topic before
   * it, a NotStartedError before start(), a ClosedError after close(),
   * and an Error if the topic is subscribed already on this Client
   * (unsubscribe first: a subscribe made while the topic's unsubscribe is
   * in flight waits for its reply). */
  subscribe<T = unknown>(topic: string, handlers?: SubscribeHandlers<T>): Promise<Subscription>;
  /** Closes and stops reconnecting; waiting and pending calls reject with ConnectionError. */
  close(): void;

  addEventListener(type: 'status', listener: (event: StatusEvent) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
}

/** new Client(url, options), started: resolves once connected. */
export function connect(url: string | URL, options?: ClientOptions): Promise<Client>;
