// Reads the checks.json that the conformance suite wrote for one scenario
// (the newest under the directory given) and prints each check's status;
// exits 1 on any FAILURE, on any WARNING (client mode fails on those
// itself; server mode does not), and when a check named in --require is
// not SUCCESS. --allow-warning ID lets one check warn: run.sh uses it for
// server-sse-polling's disconnect-resume check only, which needs the
// suite's own test_reconnection tool (its "everything" server), not a
// property of the transport; its status is printed all the same.
//
//   node check.mjs DIR [--require ID]... [--allow-warning ID]...
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const [dir, ...rest] = process.argv.slice(2);
const require = [], allow = [];
for (let i = 0; i < rest.length; i += 2) (rest[i] === '--require' ? require : allow).push(rest[i + 1]);

const found = [];
const walk = (d) => {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name === 'checks.json') found.push(p);
  }
};
walk(dir);
if (found.length === 0) {
  console.error(`check.mjs: no checks.json under ${dir}`);
  process.exit(1);
}
found.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
const checks = JSON.parse(readFileSync(found[0], 'utf8'));
let bad = 0;
const status = new Map();
for (const c of checks) {
  if (c.status === 'INFO') continue;
  status.set(c.id, c.status);
  const ok = c.status === 'SUCCESS' || (c.status === 'WARNING' && allow.includes(c.id));
  if (!ok) bad++;
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${c.status.padEnd(7)} ${c.id}${c.errorMessage ? ': ' + c.errorMessage : ''}`);
}
for (const id of require) {
  if (status.get(id) !== 'SUCCESS') {
    bad++;
    console.log(`  FAIL ${id} is ${status.get(id) ?? 'missing'}, required to pass`);
  }
}
process.exit(bad > 0 ? 1 : 0);
