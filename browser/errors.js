// errors.js: the errors jsonrpc.js's calls reject with (re-exported by
// jsonrpc.js). MIT licence, part of github.com/peerwire/jsonrpc.

/** A JSON-RPC error object as a JavaScript Error: what a call rejects with
 * on an error reply, and what a handler throws to send a specific error. */
export class RPCError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = 'RPCError';
    this.code = code;
    if (data !== undefined) this.data = data;
  }
}

/** A call given up because its AbortSignal fired; cause is the signal's
 * reason. */
export class AbortError extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = 'AbortError';
  }
}

/** A call given up because its timeout passed before the reply came. */
export class TimeoutError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TimeoutError';
  }
}

/** A call that cannot complete on this connection: it ended before the
 * reply came (the call may or may not have run), or the client is closed. */
export class ConnectionError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ConnectionError';
  }
}

/** A call, notification, batch or subscription made before start(): it
 * fails at once instead of waiting out its timeout. await client.start()
 * first, or make the client with connect(). */
export class NotStartedError extends Error {
  constructor(message) {
    super(message);
    this.name = 'NotStartedError';
  }
}

/** What start() after close() rejects with, and what calls made after
 * close() reject with: a closed Client stays closed (make a new Client to
 * connect again). A ConnectionError, so that code that handles those
 * handles it too. */
export class ClosedError extends ConnectionError {
  constructor(message) {
    super(message);
    this.name = 'ClosedError';
  }
}

/** A reply that is not a valid JSON-RPC response (an "error" that is not
 * an error object, neither "result" nor "error"): the call rejects with
 * it, the message as received in received. */
export class InvalidResponseError extends Error {
  constructor(message, received) {
    super(message);
    this.name = 'InvalidResponseError';
    this.received = received;
  }
}

/** The server removed the page from a topic (topic.kicked): the
 * subscription has ended, and is not made again on reconnection. topic
 * and reason are the server's. */
export class KickedError extends Error {
  constructor(topic, reason) {
    super(`jsonrpc.js: removed from topic ${JSON.stringify(topic)} by the server${reason ? `: ${reason}` : ''}`);
    this.name = 'KickedError';
    this.topic = topic;
    this.reason = reason ?? '';
  }
}
