// Node 20 has no fs.globSync (Node 22 added it), and the conformance
// suite's bundle imports it by name from 'fs', which fails to link on
// Node 20 before any scenario runs. Loaded with `node --import
// ./node20-fs-glob.mjs`, this registers a resolve hook that, on a Node
// without fs.globSync, hands the suite's bundle fs-glob.mjs in place of
// 'fs': the real module's exports plus a globSync. The suite calls it in
// one place only (its tier-check command, which run.sh does not use, with
// the pattern '**/checks.json'), so that globSync supports that shape of
// pattern, '**/<file name>' under options.cwd, and refuses any other.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register('./fs-glob-hooks.mjs', import.meta.url);
}
