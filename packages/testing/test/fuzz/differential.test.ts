/**
 * The differential fuzzer: fast-check generates sequences of requests
 * (create, get, update, patch of every kind, apply, delete with options,
 * delete-collection, list with selectors and pages, status and scale
 * subresources) over ConfigMaps, Secrets, Deployments and a custom resource, with names
 * that collide; each sequence runs on the fake and on the real
 * kube-apiserver envtest started, in a namespace of its own, with a watch
 * open on every kind; the normalised answers and watch streams must agree.
 * Deletes and delete-collections carry their options in a DeleteOptions
 * body, the query, both or neither (kube-apiserver reads the body alone
 * when there is one), some right after a create of their object; what each
 * left behind (the object or the collection) is read and compared too.
 *
 *   pnpm -s exec vitest run packages/testing/test/fuzz/                               # fixed seed, 30 sequences (CI)
 *   KUBELOOP_FUZZ_SEED=random KUBELOOP_FUZZ_RUNS=200 KUBELOOP_FUZZ_BUDGET_MS=900000 pnpm -s exec vitest run packages/testing/test/fuzz/
 *
 * A disagreement fails with the seed, the sequence and both answers; it
 * becomes a fix in the fake or a documented limit (docs/testing-fake.md).
 */
import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isClientError } from '@kubeloop/client';
import type { Client, WatchEvent } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { ConfigMap, Deployment, Secret } from '@kubeloop/scheme';
import { createFakeApiServer } from '../../src/index.js';
import type { FakeApiServer } from '../../src/index.js';
import { CRDS, Widget } from '../conformance/backends.js';
import { testKubeconfigPath, uniqueName } from '../../../../test/support/env.js';
import { allPages, send, watchAnswer } from './answers.js';
import type { Backend } from './answers.js';
import { KINDS, normalise, normaliseEvent, sequence, toRequest } from './requests.js';
import type { RawAnswer, RawRequest, Step } from './requests.js';

const seedText = process.env['KUBELOOP_FUZZ_SEED'] ?? '24';
const SEED = seedText === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(seedText);
const RUNS = Number(process.env['KUBELOOP_FUZZ_RUNS'] ?? '30');
/** A ceiling, not a sample size: every one of RUNS sequences must run within it, or the test fails saying the budget was too small. */
const BUDGET_MS = Number(process.env['KUBELOOP_FUZZ_BUDGET_MS'] ?? '300000');
/** A file to write every disagreement to (the failure message shows the first few). */
const REPORT = process.env['KUBELOOP_FUZZ_REPORT'];
const DESCRIPTORS = [ConfigMap, Secret, Widget, Deployment] as const;
/** The watches each sequence keeps open per kind: all objects, and those labelled app=x. */
const WATCH_SELECTORS = [undefined, 'app=x'] as const;


/** Whether this answer's object has another resourceVersion than the last answer for the same object had. */
function rvChanged(b: Backend, path: string, a: RawAnswer): boolean | undefined {
  const m = (a.body as { metadata?: { resourceVersion?: string }; kind?: string } | undefined);
  if (!m || m.kind === 'Status' || m.kind?.endsWith('List') || m.kind === 'Scale' || !m.metadata?.resourceVersion) return undefined;
  const key = path.replace(/\/(status|scale)$/, '');
  const prev = b.rvs.get(key);
  b.rvs.set(key, m.metadata.resourceVersion);
  return prev === undefined ? undefined : prev !== m.metadata.resourceVersion;
}

interface Disagreement {
  readonly step: number;
  readonly request: string;
  readonly fake: string;
  readonly envtest: string;
}

interface Outcome {
  readonly requests: number;
  readonly disagreements: Disagreement[];
}

/** A watch from `rv`; the server answers 429 while a new CRD's watch cache starts, so retry that for a few seconds. */
async function openWatch(client: Client, kind: (typeof DESCRIPTORS)[number], namespace: string, rv: string, labelSelector: string | undefined): Promise<AsyncIterableIterator<WatchEvent<unknown>>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return (await client.watch(kind, { namespace, resourceVersion: rv, allowWatchBookmarks: false, ...(labelSelector ? { labelSelector } : {}) })) as AsyncIterableIterator<WatchEvent<unknown>>;
    } catch (err) {
      if (!isClientError(err) || err.code !== 429 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * Until a watch of `kind` from a fresh list's resourceVersion opens without a
 * 410. kube-apiserver starts a custom resource's watch cache at the
 * resourceVersion the store has reached when it starts: a watch from an
 * earlier resourceVersion (a namespace created just before) is `too old
 * resource version`. While other files write to the shared plane that can
 * happen to the first sequence's watches; after this it cannot.
 */
async function watchCacheStarted(client: Client, kind: (typeof DESCRIPTORS)[number]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const rv = (await client.list(kind, {})).metadata?.resourceVersion ?? '';
    const iterator = await openWatch(client, kind, 'default', rv, undefined);
    const first = await Promise.race([iterator.next(), new Promise<undefined>((r) => setTimeout(() => r(undefined), 500))]);
    await iterator.return?.();
    const expired = first !== undefined && !first.done && first.value.type === 'ERROR';
    if (!expired) return;
    if (Date.now() > deadline) throw new Error(`the ${kind.kind} watch cache did not start within 30 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Where a delete step asks for a dry run: in its DeleteOptions body, in its query, both or neither. */
function deletePlacement(s: Extract<Step, { op: 'delete' | 'deletecollection' }>): string {
  const inBody = s.body?.dryRun !== undefined;
  const inQuery = s.query['dryRun'] !== undefined;
  const where = inBody && inQuery ? 'dryRun in both' : inBody ? 'dryRun in the body' : inQuery ? (s.body ? 'dryRun in the query beside a body' : 'dryRun in the query') : 'no dryRun';
  return `${s.op} ${where}${s.body?.preconditions ? ' (preconditions)' : ''}`;
}

/** The delete steps that found something to delete on kube-apiserver, by where they asked for a dry run (the log shows what the seed covered). */
const deletes: Record<string, number> = {};

/** Run one sequence on both backends, in a fresh namespace each, and compare. */
async function runSequence(fake: Backend, real: Backend, steps: readonly Step[]): Promise<Outcome> {
  const namespaces = { fake: uniqueName('fz'), envtest: uniqueName('fz') };
  const disagreements: Disagreement[] = [];
  const watches: { b: Backend; events: WatchEvent<unknown>[]; iterator: AsyncIterableIterator<WatchEvent<unknown>>; done: Promise<void> }[] = [];
  const startRvs = { fake: '', envtest: '' };
  for (const b of [fake, real]) {
    const created = await b.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespaces[b.name] } });
    startRvs[b.name] = created.metadata.resourceVersion!;
    // a watch of everything and one with a label selector (objects entering and leaving it) per kind
    for (const [d, labelSelector] of DESCRIPTORS.flatMap((d) => WATCH_SELECTORS.map((l) => [d, l] as const))) {
      const iterator = await openWatch(b.client, d, namespaces[b.name], created.metadata.resourceVersion!, labelSelector);
      const events: WatchEvent<unknown>[] = [];
      const done = (async () => {
        try {
          for await (const e of iterator) events.push(e);
        } catch {
          /* closed */
        }
      })();
      watches.push({ b, events, iterator, done });
    }
  }
  let requests = 0;
  try {
    for (const [i, s] of steps.entries()) {
      const answers: Record<'fake' | 'envtest', { request: RawRequest; answer: RawAnswer; normal: string }> = {} as never;
      for (const b of [fake, real]) {
        const ns = namespaces[b.name];
        const request = await toRequest(s, ns, (path) => send(b, { method: 'GET', path }), startRvs[b.name]);
        const answer = s.op === 'watch' ? await watchAnswer(b, request, b.name === 'fake' ? 50 : 400) : s.op === 'list' && s.pages ? await allPages(b, request) : await send(b, request);
        requests++;
        let normal = normalise(answer, ns, rvChanged(b, request.path, answer), s.op === 'deletecollection');
        if (s.op === 'delete' || s.op === 'deletecollection') {
          // what the delete left: the object, or the whole collection (a dry run leaves everything; beside a body, the query's dryRun is not read)
          normal += ` left: ${normalise(await send(b, { method: 'GET', path: request.path }), ns, undefined)}`;
          const found = answer.status === 200 && (s.op === 'delete' || ((answer.body as { items?: unknown[] }).items?.length ?? 0) > 0);
          if (b.name === 'envtest' && found) deletes[deletePlacement(s)] = (deletes[deletePlacement(s)] ?? 0) + 1;
        }
        answers[b.name] = { request, answer, normal };
      }
      if (answers.fake.normal !== answers.envtest.normal) {
        const r = answers.fake.request;
        disagreements.push({ step: i, request: `${r.method} ${r.path.replace(namespaces.fake, '<ns>')}${r.query ? ` ?${new URLSearchParams(r.query).toString()}` : ''} ${r.body ?? ''}`, fake: answers.fake.normal, envtest: answers.envtest.normal });
      }
    }
    // the watch streams: the fake's events are all there at once; wait for the server's, then compare per kind
    const deadline = Date.now() + 3000;
    const count = (name: 'fake' | 'envtest', i: number): number => watches.filter((w) => w.b.name === name)[i]!.events.length;
    const opened = watches.length / 2;
    const indices = [...Array(opened).keys()];
    while (Date.now() < deadline && indices.some((i) => count('envtest', i) < count('fake', i))) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 100));
    for (const i of indices) {
      const f = watches.filter((w) => w.b.name === 'fake')[i]!.events.map((e) => normaliseEvent(e, namespaces.fake));
      const e = watches.filter((w) => w.b.name === 'envtest')[i]!.events.map((ev) => normaliseEvent(ev, namespaces.envtest));
      const what = `WATCH ${KINDS[Math.floor(i / WATCH_SELECTORS.length)]!.name}${WATCH_SELECTORS[i % WATCH_SELECTORS.length] ? ` labelSelector=${WATCH_SELECTORS[i % WATCH_SELECTORS.length]!}` : ''}`;
      if (JSON.stringify(f) !== JSON.stringify(e)) disagreements.push({ step: -1, request: what, fake: JSON.stringify(f), envtest: JSON.stringify(e) });
    }
  } finally {
    for (const w of watches) await w.iterator.return?.();
    for (const b of [fake, real]) await b.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: namespaces[b.name] }).catch(() => undefined);
  }
  return { requests, disagreements };
}

describe('the fake and kube-apiserver answer generated request sequences alike', () => {
  let fakeServer: FakeApiServer;
  let env: Environment;
  let fake: Backend;
  let real: Backend;

  beforeAll(async () => {
    fakeServer = createFakeApiServer();
    await fakeServer.installCRDs(CRDS);
    env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    await env.installCRDs(CRDS);
    fake = { name: 'fake', client: fakeServer.client({ fieldOwner: 'fuzz' }), rvs: new Map() };
    real = { name: 'envtest', client: createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'fuzz', transportOptions: { qps: 0 } }), rvs: new Map() };
    await watchCacheStarted(real.client, Widget);
  });
  afterAll(async () => {
    await fakeServer?.close();
    await env?.stop();
  });

  it(`seed ${SEED}: all ${RUNS} sequences agree (within ${BUDGET_MS} ms)`, async () => {
    let sequences = 0;
    let requests = 0;
    const found: { steps: readonly Step[]; disagreements: Disagreement[] }[] = [];
    await fc.assert(
      fc.asyncProperty(sequence, async (steps) => {
        fake.rvs.clear();
        real.rvs.clear();
        const outcome = await runSequence(fake, real, steps);
        sequences++;
        requests += outcome.requests;
        if (outcome.disagreements.length > 0) found.push({ steps, disagreements: outcome.disagreements });
        return true;
      }),
      { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false, endOnFailure: true },
    );
    const total = found.reduce((n, f) => n + f.disagreements.length, 0);
    console.log(`differential fuzzer: seed ${SEED}, ${sequences} sequences, ${requests} requests (${requests / 2} per backend), ${found.length} sequences with disagreements, ${total} disagreements`);
    console.log(`differential fuzzer: deletes that found objects on kube-apiserver: ${Object.entries(deletes).sort().map(([k, n]) => `${k}: ${n}`).join(', ')}`);
    // each sequence with disagreements: what disagreed, then the sequence's steps, to replay it
    if (REPORT) writeFileSync(REPORT, found.map((f) => `${f.disagreements.map((d) => `step ${d.step}: ${d.request}\n  fake:    ${d.fake}\n  envtest: ${d.envtest}`).join('\n')}\nsteps:\n${f.steps.map((st, i) => `  ${i}: ${JSON.stringify(st)}`).join('\n')}`).join('\n---\n'));
    const report = found
      .slice(0, 3)
      .map((f) => f.disagreements.slice(0, 4).map((d) => `step ${d.step}: ${d.request}\n  fake:    ${d.fake}\n  envtest: ${d.envtest}`).join('\n'))
      .join('\n---\n');
    expect(total, `seed ${SEED}:\n${report}`).toBe(0);
    // The budget stops fast-check early without failing it: a run cut short checked fewer sequences than the name says.
    expect(sequences, `only ${sequences} of ${RUNS} sequences ran within the budget of ${BUDGET_MS} ms: raise KUBELOOP_FUZZ_BUDGET_MS (or lower KUBELOOP_FUZZ_RUNS)`).toBe(RUNS);
  }, BUDGET_MS + 120_000);
});
