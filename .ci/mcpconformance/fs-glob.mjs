// 'fs' for the conformance suite on Node 20: node:fs as it is, plus a
// globSync for '**/<file name>' patterns (see node20-fs-glob.mjs).
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

export function globSync(pattern, options = {}) {
  const m = /^\*\*\/([^*?[\]{}/]+)$/.exec(pattern);
  if (!m) {
    throw new Error(`fs-glob.mjs: only '**/<file name>' patterns are supported on Node ${process.version}, not ${JSON.stringify(pattern)}`);
  }
  const root = options.cwd ?? process.cwd();
  const found = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const p = rel ? path.join(rel, e.name) : e.name;
      if (e.isDirectory()) walk(p);
      else if (e.name === m[1]) found.push(p);
    }
  };
  walk('');
  return found;
}
