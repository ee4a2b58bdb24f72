/**
 * An int64 past 2^53 through the informer cache against the real API server:
 * the listed and the watched object hold 9007199254740993 exact (a bigint,
 * through the client's watch decoding and the cache's interning and
 * freezing), and an object read from the cache and written back leaves the
 * stored value unchanged, as kubectl (Go, int64) shows it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { createClient, mutableCopy } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { createInformerCache } from '../src/index.js';
import type { InformerCache } from '../src/index.js';
import { testCRD } from '../../../test/support/crds.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { kubectlOk } from '../../../test/support/kubectl.js';

const BIG = 9007199254740993n; // 2^53 + 1

interface Counter extends KubeObject {
  spec?: { bytes?: number | bigint; note?: string };
}

let env: Environment;
let live: Client;
let cache: InformerCache;
let ns: string;
let resource: string;
let Counter: ReturnType<typeof defineKind<Counter>>;

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  const group = `${uniqueName('i64c')}.kubeloop.dev`;
  await env.installCRDs([
    testCRD(group, 'Counter', { schema: { type: 'object', properties: { spec: { type: 'object', properties: { bytes: { type: 'integer', format: 'int64' }, note: { type: 'string' } } } } } }),
  ]);
  Counter = defineKind<Counter>({ group, version: 'v1', kind: 'Counter', plural: 'counters', namespaced: true, listKind: 'CounterList' });
  resource = `counters.v1.${group}`;
  live = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'int64-cache-test' });
  ns = uniqueName('int64c');
  await live.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await live.create({ apiVersion: Counter.apiVersion, kind: 'Counter', metadata: { name: 'listed', namespace: ns }, spec: { bytes: BIG } });
  cache = createInformerCache({ client: live });
});

afterAll(async () => {
  await cache?.stop();
  await live?.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  live?.transport.close();
  await env?.stop();
});

async function eventually<T>(read: () => Promise<T>, good: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await read().catch(() => undefined);
    if (v !== undefined && good(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('int64 through the informer cache', () => {
  it('listed and watched objects hold 2^53 + 1 exact; written back from the cache, the stored value is unchanged', async () => {
    const listed = await cache.get(Counter, { namespace: ns, name: 'listed' });
    expect(listed.spec?.bytes).toBe(BIG);
    await kubectlOk(['apply', '-f', '-'], { stdin: `{"apiVersion":"${Counter.apiVersion}","kind":"Counter","metadata":{"name":"watched","namespace":"${ns}"},"spec":{"bytes":${BIG + 2n}}}` });
    const watched = await eventually(() => cache.get(Counter, { namespace: ns, name: 'watched' }), () => true, 'the watched object in the cache');
    expect(watched.spec?.bytes).toBe(BIG + 2n);
    expect((await cache.list(Counter, { namespace: ns })).items.map((i) => i.spec?.bytes).sort()).toEqual([BIG, BIG + 2n]);

    const copy = mutableCopy(listed);
    copy.spec = { ...copy.spec, note: 'from the cache' };
    await live.update(copy);
    const stored = await kubectlOk(['get', resource, 'listed', '-n', ns, '-o', 'jsonpath={.spec.bytes} {.spec.note}']);
    expect(stored).toBe(`${BIG} from the cache`);
    const updated = await eventually(() => cache.get(Counter, { namespace: ns, name: 'listed' }), (o) => o.spec?.note === 'from the cache', 'the update in the cache');
    expect(updated.spec?.bytes).toBe(BIG);
  });
});
