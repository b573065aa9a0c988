// The resolve hook node20-fs-glob.mjs registers: 'fs' imported from the
// conformance suite's bundle resolves to fs-glob.mjs.
const shim = new URL('./fs-glob.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/')) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
