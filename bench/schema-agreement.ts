/**
 * Agreement of local validation (@kubeloop/scheme/validation) with
 * kube-apiserver, per kind: objects generated from each kind's schema with
 * fast-check (valid and invalid mixed), validated locally and by a
 * server-side dry-run create (strict field validation) on a fresh envtest
 * control plane. Prints a table, the first disagreements, then one JSON line.
 *
 *   pnpm bench:schema                (after a build; 1000 objects per kind)
 *   pnpm bench:schema -- --per-kind 3000 --seed 7
 */
import { parseArgs } from 'node:util';
import { request } from 'node:https';
import type { RequestOptions } from 'node:https';
import fc from 'fast-check';
import { DEFAULT_KUBERNETES_VERSION, createEnvironment } from '@kubeloop/envtest';
import { generateCRDs } from '@kubeloop/scheme/schema';
import { createValidator } from '@kubeloop/scheme/validation';
import { ALL_KINDS, measureAgreement, objectsOf } from './support/schema-agreement.ts';
import type { DryRunCreate, KindAgreement } from './support/schema-agreement.ts';

const { values } = parseArgs({ args: process.argv.slice(2).filter((a) => a !== '--'), options: { 'per-kind': { type: 'string', default: '1000' }, seed: { type: 'string', default: '42' } } });
const perKind = Number.parseInt(values['per-kind'], 10);
const seed = Number.parseInt(values.seed, 10);

const env = createEnvironment();
await env.start();
try {
  await env.installCRDs(generateCRDs(ALL_KINDS));
  const kc = env.kubeConfig;
  const server = kc.getCurrentCluster()!.server;
  const tls: RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);

  const dryRun: DryRunCreate = (kind, object) =>
    new Promise((resolve, reject) => {
      const path = `/apis/${kind.group}/${kind.version}/namespaces/default/${String(kind.plural)}?dryRun=All&fieldValidation=Strict`;
      const req = request(new URL(path, server), { ...tls, method: 'POST', headers: { ...tls.headers, 'Content-Type': 'application/json', Accept: 'application/json' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) as unknown }));
      });
      req.on('error', reject);
      req.setTimeout(30_000, () => req.destroy(new Error('no answer in 30 s')));
      req.end(JSON.stringify(object));
    });

  const results: (KindAgreement & { localUsPerObject: number; serverMs: number })[] = [];
  for (const kind of ALL_KINDS) {
    const objects = fc.sample(objectsOf(kind), { numRuns: perKind, seed });
    const validator = createValidator(kind, { unknownFields: 'error' });
    const t0 = performance.now();
    for (const o of objects) validator.validate(o);
    const localUs = ((performance.now() - t0) * 1000) / objects.length;
    const t1 = performance.now();
    const tally = await measureAgreement(kind, validator, objects, dryRun);
    results.push({ ...tally, localUsPerObject: Number(localUs.toFixed(1)), serverMs: Number(((performance.now() - t1) / objects.length).toFixed(2)) });
  }

  const pct = (a: number, b: number): string => `${((100 * a) / b).toFixed(2)}%`;
  console.log(`schema-agreement: ${perKind} objects per kind, seed ${seed}; kubernetes ${DEFAULT_KUBERNETES_VERSION}, node ${process.version}`);
  console.log('kind          objects  server-valid  agree     same-fields  disagree  of which CEL');
  for (const r of results) {
    console.log(
      `${r.kind.padEnd(13)} ${String(r.objects).padStart(7)}  ${String(r.serverAccepted).padStart(12)}  ${pct(r.agreed, r.objects).padStart(8)}  ${pct(r.sameFields, Math.max(r.bothRefused, 1)).padStart(11)}  ${String(r.objects - r.agreed).padStart(8)}  ${String(r.celOnly).padStart(12)}`,
    );
  }
  for (const r of results) {
    for (const e of r.examples.filter((x) => !x.server.some((m) => /must not exceed max|must not be forbidden/.test(m))).slice(0, 3)) {
      console.log(`disagreement (${r.kind}): ${JSON.stringify(e.object['spec'])}\n  local: ${e.local.join(' / ') || 'valid'}\n  server: ${e.server.join(' / ') || 'valid'}`);
    }
  }
  console.log(JSON.stringify({ bench: 'schema-agreement', perKind, seed, results: results.map(({ examples: _e, fieldMismatches: _f, ...r }) => r) }));
} finally {
  await env.stop();
}
