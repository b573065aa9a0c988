// Checks, with the OpenRPC project's own packages, what package openrpc
// and openrpc/jsonrpc-ts make (run by .ci/run through run.sh):
//
//  1. every document named is valid against @open-rpc/meta-schema (and
//     @open-rpc/schema-utils-js's validateOpenRPCDocument agrees);
//  2. for the document given with --typings (the realtime demo's), the
//     types @open-rpc/typings makes of each method agree with ours
//     (the .d.ts given with --ours): the result, and each param by name,
//     each way assignable, checked by tsc.
//
// @open-rpc/typings does not finish on a recursive schema (a Note whose
// parent is a Note ran out of 4 GB of heap): the test document has one, so
// only the demo's is cross-checked.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import Ajv from 'ajv';
import jstMeta from '@json-schema-tools/meta-schema';
import { openrpcDocument } from '@open-rpc/meta-schema';
import { validateOpenRPCDocument, dereferenceDocument } from '@open-rpc/schema-utils-js';
import TypingsModule from '@open-rpc/typings';

const Typings = TypingsModule.default ?? TypingsModule;
const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i < 0 ? undefined : args.splice(i, 2)[1]; };
const typingsDoc = opt('--typings');
const ours = opt('--ours');
const clientDecls = opt('--client');
let failed = false;
const check = (name, ok, detail) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}`);
  if (!ok) { failed = true; if (detail) console.log(detail); }
};

const ajv = new Ajv({ schemaId: 'auto' });
ajv.addSchema(jstMeta, 'https://meta.json-schema.tools');
const validate = ajv.compile(openrpcDocument);
// The validator can fail: an error object with an extension is refused
// (what an early document of ours had).
const bad = { openrpc: '1.3.2', info: { title: 't', version: '1' },
  methods: [{ name: 'm', params: [], result: { name: 'r', schema: {} }, errors: [{ code: 1, message: 'x', 'x-data': {} }] }] };
check('the meta-schema refuses an error object with x-data', !validate(bad));
for (const file of [...args, ...(typingsDoc ? [typingsDoc] : [])]) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  check(`${file}: valid against @open-rpc/meta-schema`, validate(doc), JSON.stringify(validate.errors, null, 2));
  const r = validateOpenRPCDocument(doc);
  check(`${file}: validateOpenRPCDocument`, r === true, r === true ? '' : r.message);
}

// noTypeArrays rewrites {type: [A, B], ...rest} as {oneOf: [{type: A,
// ...rest}, {type: B, ...rest}]}, an equivalent schema: @open-rpc/typings
// names a type array's schema one way in its schema typings and another
// in its method typings, leaving the method typings' names undefined.
function noTypeArrays(s) {
  if (Array.isArray(s)) return s.map(noTypeArrays);
  if (s === null || typeof s !== 'object') return s;
  const out = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, noTypeArrays(v)]));
  if (Array.isArray(out.type)) {
    const { type, ...rest } = out;
    return { oneOf: type.map((t) => ({ type: t, ...rest })) };
  }
  return out;
}

if (typingsDoc) {
  const doc = JSON.parse(fs.readFileSync(typingsDoc, 'utf8'));
  const typings = new Typings(await dereferenceDocument(noTypeArrays(doc)));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openrpc-typings-'));
  fs.mkdirSync(path.join(dir, 'js'));
  fs.writeFileSync(path.join(dir, 'typings.ts'), typings.toString('typescript'));
  fs.copyFileSync(ours, path.join(dir, 'api.d.ts'));
  fs.copyFileSync(clientDecls, path.join(dir, 'js', 'jsonrpc.d.ts'));
  const lines = [
    "import type { Calls } from './api.js';",
    "import type * as T from './typings.js';",
    'type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;',
    'function agree<X extends true>(): void {}',
    'type Named<P> = Exclude<P, readonly unknown[] | undefined>;',
  ];
  let n = 0;
  for (const m of doc.methods) {
    if (!m.result) continue;
    const names = typings.getTypingNames('typescript', m);
    const name = JSON.stringify(m.name);
    lines.push(`// ${m.name}`);
    lines.push(`agree<Same<Awaited<ReturnType<T.${names.method}>>, Calls[${name}]['result']>>();`);
    n++;
    m.params.forEach((p, i) => {
      lines.push(`agree<Same<NonNullable<Parameters<T.${names.method}>[${i}]>, NonNullable<Named<Calls[${name}]['args'][0]>[${JSON.stringify(p.name)}]>>>();`);
      n++;
    });
  }
  fs.writeFileSync(path.join(dir, 'crosscheck.ts'), lines.join('\n') + '\n');
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'es2022', moduleResolution: 'bundler', lib: ['es2022', 'dom'], types: [] },
    files: ['crosscheck.ts'],
  }));
  const tsc = path.join(path.dirname(new URL(import.meta.url).pathname), 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', dir], { stdio: 'pipe', timeout: 120_000 });
    check(`${typingsDoc}: @open-rpc/typings agrees with openrpc/jsonrpc-ts on ${n} results and params`, n > 0);
  } catch (e) {
    check(`${typingsDoc}: @open-rpc/typings agrees with openrpc/jsonrpc-ts`, false,
      `${e.stdout ?? ''}${e.stderr ?? ''}\n(in ${dir}: crosscheck.ts, typings.ts, api.d.ts)`);
  }
  if (!failed) fs.rmSync(dir, { recursive: true });
}
process.exit(failed ? 1 : 0);
