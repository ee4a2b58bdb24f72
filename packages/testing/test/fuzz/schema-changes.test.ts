/**
 * The schema-change fuzzer: fast-check generates a custom resource's schema
 * (schemas.ts), objects written under it, then changes of the schema
 * between writes and reads; each sequence runs on the fake and on the real
 * kube-apiserver envtest started, with a CRD of its own on each, and the
 * normalised answers must agree step by step. Defaults and pruning applied
 * on read, ratcheting on update, the validation of the schema's own
 * keywords and of the CRD itself are compared where the request fuzzer
 * (differential.test.ts, one fixed CRD) never looks.
 *
 *   pnpm -s exec vitest run packages/testing/test/fuzz/schema-changes.test.ts      # fixed seed, 12 sequences (CI)
 *   KUBELOOP_SCHEMA_SEED=random KUBELOOP_SCHEMA_RUNS=100 KUBELOOP_SCHEMA_REPORT=/tmp/schemas.txt pnpm -s exec vitest run packages/testing/test/fuzz/schema-changes.test.ts
 *
 * A sequence stops at its first disagreement (what follows would differ for
 * that reason alone); it becomes a fix in the fake or a documented limit
 * (docs/testing-fake.md).
 */
import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { createFakeApiServer } from '../../src/index.js';
import type { FakeApiServer } from '../../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../../test/support/env.js';
import { send } from './answers.js';
import type { Backend } from './answers.js';
import { normalise } from './requests.js';
import type { RawAnswer, RawRequest } from './requests.js';
import { crdFor, schemaSequence } from './schemas.js';
import type { Json, SchemaStep } from './schemas.js';

const seedText = process.env['KUBELOOP_SCHEMA_SEED'] ?? '7';
const SEED = seedText === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(seedText);
const RUNS = Number(process.env['KUBELOOP_SCHEMA_RUNS'] ?? '12');
const BUDGET_MS = Number(process.env['KUBELOOP_SCHEMA_BUDGET_MS'] ?? '240000');
const REPORT = process.env['KUBELOOP_SCHEMA_REPORT'];
/** Compare a refused CRD's messages too, not only the fields its causes name (docs/testing-fake.md: the words may differ). */
const MESSAGES = process.env['KUBELOOP_SCHEMA_MESSAGES'] === '1';
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const MERGE = 'application/merge-patch+json';
const APPLY = 'application/apply-patch+yaml';

interface Disagreement {
  readonly step: number;
  readonly request: string;
  readonly fake: string;
  readonly envtest: string;
}

/**
 * A CRD write's answer, comparable: its status, and for a refusal the fields
 * of its causes as a set (kube-apiserver checks a schema's properties in Go's
 * map order, so several errors come in any order; the CRD object itself
 * carries times and conditions).
 */
function crdAnswer(a: RawAnswer): string {
  const b = a.body as { kind?: string; reason?: string; details?: { causes?: { field?: string; message?: string }[] } };
  const causes = (b.details?.causes ?? []).map((c) => (MESSAGES ? `${c.field}: ${c.message}` : c.field));
  return JSON.stringify({ status: a.status, warning: a.warning, ...(b.kind === 'Status' ? { reason: b.reason, causes: [...new Set(causes)].sort() } : {}) });
}

/**
 * A refusal with its causes, and the list in its message, sorted: kube-openapi
 * validates an object's properties in Go's map order, so sibling fields'
 * errors come in any order (docs/testing-fake.md). Each field's own errors
 * keep their order (a sort is stable).
 */
function inAnyOrder(a: RawAnswer): RawAnswer {
  const b = a.body as { kind?: string; message?: string; details?: { causes?: { field?: string }[] } };
  if (b?.kind !== 'Status' || !Array.isArray(b.details?.causes) || b.details.causes.length < 2) return a;
  const causes = [...b.details.causes].sort((x, y) => (x.field ?? '').localeCompare(y.field ?? ''));
  const list = /^(.*? is invalid: )\[(.*)\]$/s.exec(b.message ?? '');
  const message = list ? `${list[1]!}[${list[2]!.split(/, (?=spec\.|metadata\.|status\.)/).sort().join(', ')}]` : b.message;
  return { ...a, body: { ...b, message, details: { ...b.details, causes } } };
}

/** A CRD's answer with its conditions' times masked. */
function withoutConditionTimes(a: RawAnswer): RawAnswer {
  const b = a.body as { status?: { conditions?: Json[] } };
  if (!b?.status?.conditions) return a;
  return { ...a, body: { ...b, status: { ...b.status, conditions: b.status.conditions.map((c) => ({ ...c, lastTransitionTime: '<time>' })) } } };
}

/** Until a dry-run create carrying `marker` is taken: the schema that holds it is in force (kube-apiserver swaps a changed CRD's handler in the background). */
async function schemaInForce(b: Backend, path: string, group: string, marker: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const a = await send(b, { method: 'POST', path, query: { dryRun: 'All' }, body: JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'probe' }, marker }) });
    if (a.status === 201) return;
    if (Date.now() > deadline) throw new Error(`${b.name}: the schema marked ${marker} was not in force within 30 s: ${JSON.stringify(a.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The request of a step on one backend (an update reads the object first). */
async function toRequest(b: Backend, s: SchemaStep, path: string, group: string): Promise<RawRequest> {
  const head = { apiVersion: `${group}/v1`, kind: 'Thing' };
  switch (s.op) {
    case 'schema':
    case 'recreate':
      throw new Error('schema steps are sent by the runner');
    case 'create':
      return { method: 'POST', path, query: s.dryRun ? { dryRun: 'All' } : {}, body: JSON.stringify({ ...head, metadata: { name: s.name }, ...(s.spec ? { spec: s.spec } : {}) }) };
    case 'patch':
      return { method: 'PATCH', path: `${path}/${s.name}`, body: JSON.stringify(s.body), contentType: MERGE };
    case 'update': {
      const current = await send(b, { method: 'GET', path: `${path}/${s.name}` });
      const base = current.status === 200 ? (current.body as Json) : { ...head, metadata: { name: s.name } };
      return { method: 'PUT', path: `${path}/${s.name}`, body: JSON.stringify({ ...base, spec: s.spec }) };
    }
    case 'apply':
      return { method: 'PATCH', path: `${path}/${s.name}`, query: { fieldManager: s.manager, ...(s.force ? { force: 'true' } : {}) }, body: JSON.stringify({ ...head, metadata: { name: s.name }, spec: s.spec }), contentType: APPLY };
    case 'get':
      return { method: 'GET', path: `${path}/${s.name}` };
    case 'list':
      return { method: 'GET', path };
  }
}

/** Run one sequence on both backends (a CRD of its own, the same group and namespace name on each) and compare; stops at the first disagreement. */
async function runSequence(backends: readonly Backend[], first: Json, steps: readonly SchemaStep[]): Promise<{ requests: number; disagreement: Disagreement | undefined }> {
  const group = `${uniqueName('sc')}.fuzz.kubeloop.dev`;
  const namespace = uniqueName('scf');
  const path = `/apis/${group}/v1/namespaces/${namespace}/things`;
  const crdPath = `${CRDS}/things.${group}`;
  let requests = 0;
  const rvs = new Map<string, Map<string, string>>();
  const compare = (i: number, request: string, answers: Record<string, string>): Disagreement | undefined => (answers['fake'] === answers['envtest'] ? undefined : { step: i, request, fake: answers['fake']!, envtest: answers['envtest']! });
  /** Whether the answer's object has another resourceVersion than this backend's last answer for it. */
  const changed = (b: Backend, key: string, a: RawAnswer): boolean | undefined => {
    const rv = (a.body as { kind?: string; metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (a.status >= 300 || !rv || (a.body as { kind?: string }).kind === 'ThingList') return undefined;
    const seen = rvs.get(b.name) ?? new Map<string, string>();
    rvs.set(b.name, seen);
    const prev = seen.get(key);
    seen.set(key, rv);
    return prev === undefined ? undefined : prev !== rv;
  };
  try {
    for (const b of backends) await send(b, { method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }) });
    let version = 0;
    /** Create or change the CRD on both (`fresh`: create it, the old one deleted); when the server took it, wait until it is in force on both. */
    const writeSchema = async (i: number, spec: Json, fresh = version === 0): Promise<Disagreement | undefined> => {
      const answers: Record<string, string> = {};
      let taken = false;
      const marker = `v${version + 1}`;
      for (const b of backends) {
        let a: RawAnswer;
        if (fresh) a = await send(b, { method: 'POST', path: CRDS, body: JSON.stringify(crdFor(group, spec, marker)) });
        else {
          const current = await send(b, { method: 'GET', path: crdPath });
          const rv = (current.body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
          a = await send(b, { method: 'PUT', path: crdPath, body: JSON.stringify(crdFor(group, spec, marker, rv)) });
        }
        requests++;
        answers[b.name] = crdAnswer(a);
        if (b.name === 'envtest') taken = a.status < 300;
      }
      const d = compare(i, `${fresh ? 'POST' : 'PUT'} CRD spec schema ${JSON.stringify(spec)}`, answers);
      if (d || !taken) return d;
      version++;
      for (const b of backends) await schemaInForce(b, path, group, marker);
      return undefined;
    };
    const d0 = await writeSchema(-1, first);
    if (d0 || version === 0) return { requests, disagreement: d0 };
    for (const [i, s] of steps.entries()) {
      if (s.op === 'schema') {
        const d = await writeSchema(i, s.spec);
        if (d) return { requests, disagreement: d };
        continue;
      }
      if (s.op === 'recreate') {
        // the delete's answer (the CRD, Terminating while its objects go), then until it is gone, then what is left of its objects
        const answers: Record<string, string> = {};
        for (const b of backends) {
          const a = await send(b, { method: 'DELETE', path: crdPath });
          requests++;
          answers[b.name] = normalise(withoutConditionTimes(a), namespace, undefined);
          const deadline = Date.now() + 60_000;
          while ((await send(b, { method: 'GET', path: crdPath })).status !== 404) {
            if (Date.now() > deadline) throw new Error(`${b.name}: the CRD was not gone 60 s after its delete`);
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        const d = compare(i, 'DELETE CRD', answers);
        if (d) return { requests, disagreement: d };
        rvs.clear();
        const recreated = await writeSchema(i, s.spec, true);
        if (recreated) return { requests, disagreement: recreated };
        continue;
      }
      const answers: Record<string, string> = {};
      let shown = '';
      for (const b of backends) {
        const r = await toRequest(b, s, path, group);
        const a = await send(b, r);
        requests++;
        answers[b.name] = normalise(inAnyOrder(a), namespace, changed(b, s.op === 'list' ? path : `${path}/${'name' in s ? s.name : ''}`, a));
        shown = `${r.method} ${r.path.replace(namespace, '<ns>')}${r.query && Object.keys(r.query).length > 0 ? ` ?${new URLSearchParams(r.query).toString()}` : ''} ${r.body ?? ''}`;
      }
      const d = compare(i, shown, answers);
      if (d) return { requests, disagreement: d };
    }
    return { requests, disagreement: undefined };
  } finally {
    for (const b of backends) {
      await send(b, { method: 'DELETE', path: crdPath }).catch(() => undefined);
      await send(b, { method: 'DELETE', path: `/api/v1/namespaces/${namespace}` }).catch(() => undefined);
    }
  }
}

describe('the fake and kube-apiserver answer alike across generated changes of a CRD schema', () => {
  let fakeServer: FakeApiServer;
  let env: Environment;
  let backends: Backend[];

  beforeAll(async () => {
    fakeServer = createFakeApiServer();
    env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    backends = [
      { name: 'fake', client: fakeServer.client({ fieldOwner: 'fuzz' }), rvs: new Map() },
      { name: 'envtest', client: createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'fuzz', transportOptions: { qps: 0 } }), rvs: new Map() },
    ];
  });
  afterAll(async () => {
    await fakeServer?.close();
    await env?.stop();
  });

  it(`seed ${SEED}: all ${RUNS} sequences agree (within ${BUDGET_MS} ms)`, async () => {
    let sequences = 0;
    let requests = 0;
    let crdsTaken = 0;
    const found: { first: Json; steps: readonly SchemaStep[]; disagreement: Disagreement }[] = [];
    await fc.assert(
      fc.asyncProperty(schemaSequence, async ({ first, steps }) => {
        const outcome = await runSequence(backends, first, steps);
        sequences++;
        requests += outcome.requests;
        if (outcome.requests > 2) crdsTaken++;
        if (outcome.disagreement) found.push({ first, steps, disagreement: outcome.disagreement });
        return true;
      }),
      { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false, endOnFailure: true },
    );
    console.log(`schema-change fuzzer: seed ${SEED}, ${sequences} sequences (${crdsTaken} with a first schema the server took), ${requests} requests, ${found.length} sequences with a disagreement`);
    const shown = found.map((f) => `step ${f.disagreement.step}: ${f.disagreement.request}\n  fake:    ${f.disagreement.fake}\n  envtest: ${f.disagreement.envtest}\nfirst schema: ${JSON.stringify(f.first)}\nsteps:\n${f.steps.map((st, i) => `  ${i}: ${JSON.stringify(st)}`).join('\n')}`);
    if (REPORT) writeFileSync(REPORT, shown.join('\n---\n'));
    expect(found.length, `seed ${SEED}:\n${shown.slice(0, 3).join('\n---\n')}`).toBe(0);
    expect(sequences, `only ${sequences} of ${RUNS} sequences ran within the budget of ${BUDGET_MS} ms: raise KUBELOOP_SCHEMA_BUDGET_MS (or lower KUBELOOP_SCHEMA_RUNS)`).toBe(RUNS);
    // most first schemas must be ones the server takes, or the sequences test little beyond the CRD's validation
    expect(crdsTaken, `only ${crdsTaken} of ${sequences} first schemas were taken by kube-apiserver`).toBeGreaterThan(sequences / 2);
  }, BUDGET_MS + 120_000);
});
