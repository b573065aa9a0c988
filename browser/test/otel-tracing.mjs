// otel-tracing.mjs: jsonrpc.js's tracing hook on @opentelemetry/api, as
// browser/README.md shows it (tracing.test.mjs checks that the two agree).
import { context, propagation, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';

export function otelTracing(tracer = trace.getTracer('jsonrpc.js')) {
  const start = (info, kind, parent) => tracer.startSpan(info.method, {
    kind,
    attributes: {
      'rpc.system.name': 'jsonrpc',
      'rpc.method': info.method,
      'jsonrpc.protocol.version': '2.0',
      ...(info.id !== undefined && { 'jsonrpc.request.id': String(info.id) }),
    },
  }, parent);
  const end = (span) => (error) => {
    if (error !== undefined) {
      const code = error?.name === 'RPCError' ? String(error.code) : undefined;
      span.setAttribute('error.type', code ?? error?.name ?? 'Error');
      if (code) span.setAttribute('rpc.status_code', code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(error?.message ?? error) });
    }
    span.end();
  };
  return {
    send(info) {
      const span = start(info, SpanKind.CLIENT, context.active());
      const meta = {};
      propagation.inject(trace.setSpan(context.active(), span), meta);
      return { meta, end: end(span) };
    },
    receive(info) {
      const parent = propagation.extract(context.active(), info.meta ?? {});
      const span = start(info, SpanKind.SERVER, parent);
      const ctx = trace.setSpan(parent, span);
      return { run: (fn) => context.with(ctx, fn), end: end(span) };
    },
  };
}
