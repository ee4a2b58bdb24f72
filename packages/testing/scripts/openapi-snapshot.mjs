#!/usr/bin/env node
/**
 * Regenerate the fake API server's snapshot of kube-apiserver's OpenAPI v3
 * documents (src/internal/openapi/snapshot.generated.ts): the schemas of the
 * built-in kinds @kubeloop/scheme has (and the subresource kinds the fake
 * serves), every definition they reach, with descriptions and what the
 * fake does not read left out.
 *
 *   node packages/testing/scripts/openapi-snapshot.mjs [--kubeconfig PATH] [--check]
 *
 * Without --kubeconfig it starts its own envtest (the version envtest runs
 * by default). --check compares instead of writing and exits 1 when the
 * committed snapshot differs.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { URL, fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createClient } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { builtinScheme } from '@kubeloop/scheme';

const OUT = fileURLToPath(new URL('../src/internal/openapi/snapshot.generated.ts', import.meta.url));
/** Kinds served as subresources, beyond the scheme's. */
const SUBRESOURCE_KINDS = [
  { group: 'autoscaling', version: 'v1', kind: 'Scale' },
  { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' },
];
/** Schema members the fake reads; everything else (descriptions, enums, required...) is left out. */
const KEEP = new Set([
  'type',
  'format',
  'properties',
  'additionalProperties',
  'items',
  '$ref',
  'allOf',
  'oneOf',
  'default',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-patch-merge-key',
  'x-kubernetes-patch-strategy',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-int-or-string',
]);
const REF = '#/components/schemas/';

const { values } = parseArgs({ options: { kubeconfig: { type: 'string' }, check: { type: 'boolean' } } });

/** A schema with only what the fake reads; `allOf: [{$ref}]` collapsed to the `$ref`. */
function strip(schema, refs) {
  if (Array.isArray(schema)) return schema.map((s) => strip(s, refs));
  if (typeof schema !== 'object' || schema === null) return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    if (!KEEP.has(k)) continue;
    if (k === '$ref') {
      const name = String(v).startsWith(REF) ? String(v).slice(REF.length) : String(v);
      refs.add(name);
      out[k] = name;
    } else if (k === 'properties') {
      out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, strip(s, refs)]));
    } else if (k === 'default') out[k] = v;
    else out[k] = strip(v, refs);
  }
  if (Array.isArray(out.allOf) && out.allOf.length === 1 && out.allOf[0].$ref !== undefined) {
    out.$ref = out.allOf[0].$ref;
    delete out.allOf;
  }
  return out;
}

async function main() {
  const env = createEnvironment(values.kubeconfig ? { useExistingCluster: true, kubeconfigPath: values.kubeconfig } : {});
  await env.start();
  try {
    const client = createClient({ kubeConfig: env.kubeConfig });
    const get = async (path) => {
      const res = await client.transport.request({ method: 'GET', path });
      if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.body.slice(0, 200)}`);
      return JSON.parse(res.body);
    };
    const version = (await get('/version')).gitVersion;
    const wanted = [...builtinScheme.descriptors().map((d) => ({ group: d.group, version: d.version, kind: d.kind })), ...SUBRESOURCE_KINDS];
    const byGv = new Map();
    for (const k of wanted) byGv.set(k.group ? `apis/${k.group}/${k.version}` : `api/${k.version}`, [...(byGv.get(k.group ? `apis/${k.group}/${k.version}` : `api/${k.version}`) ?? []), k]);
    const all = new Map();
    for (const path of [...byGv.keys()].sort()) {
      const doc = await get(`/openapi/v3/${path}`);
      for (const [name, schema] of Object.entries(doc.components.schemas)) if (!all.has(name)) all.set(name, schema);
    }
    const kinds = {};
    for (const k of wanted) {
      const found = [...all.entries()].find(([, s]) => (s['x-kubernetes-group-version-kind'] ?? []).some((g) => g.group === k.group && g.version === k.version && g.kind === k.kind));
      if (!found) throw new Error(`no schema for ${k.group}/${k.version} ${k.kind} in the OpenAPI v3 documents`);
      kinds[`${k.group ? `${k.group}/` : ''}${k.version}/${k.kind}`] = found[0];
    }
    // every definition the kinds reach
    const definitions = {};
    const queue = [...new Set(Object.values(kinds))];
    while (queue.length > 0) {
      const name = queue.shift();
      if (definitions[name] !== undefined) continue;
      const schema = all.get(name);
      if (!schema) throw new Error(`the OpenAPI documents refer to ${name} but do not define it`);
      const refs = new Set();
      definitions[name] = strip(schema, refs);
      for (const r of refs) if (definitions[r] === undefined) queue.push(r);
    }
    const sortedKinds = Object.fromEntries(Object.entries(kinds).sort(([a], [b]) => (a < b ? -1 : 1)));
    const lines = Object.keys(definitions)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${JSON.stringify(definitions[name])}`);
    const json = `{"kinds":${JSON.stringify(sortedKinds)},\n"definitions":{\n${lines.join(',\n')}\n}}`;
    if (json.includes('`') || json.includes('${')) throw new Error('the snapshot holds a backtick or ${, which the generated module cannot quote');
    const text = [
      `// Generated by packages/testing/scripts/openapi-snapshot.mjs from kube-apiserver ${version}'s /openapi/v3 documents. Do not edit;`,
      '// regenerate with: node packages/testing/scripts/openapi-snapshot.mjs',
      `export const KUBE_VERSION = ${JSON.stringify(version)};`,
      '',
      '/** kinds: `apiVersion/Kind` -> definition; definitions: name -> schema (what the fake reads of it). */',
      `export const KUBE_OPENAPI = String.raw\`${json}\`;`,
      '',
    ].join('\n');
    if (values.check) {
      const current = await readFile(OUT, 'utf8').catch(() => '');
      if (current !== text) {
        console.error(`the OpenAPI snapshot is stale: regenerate it with node packages/testing/scripts/openapi-snapshot.mjs`);
        process.exitCode = 1;
      } else console.log(`the OpenAPI snapshot is current (${version}, ${Object.keys(kinds).length} kinds, ${lines.length} definitions)`);
      return;
    }
    await writeFile(OUT, text);
    console.log(`wrote ${OUT}: ${version}, ${Object.keys(kinds).length} kinds, ${lines.length} definitions, ${text.length} bytes`);
  } finally {
    await env.stop();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
});
