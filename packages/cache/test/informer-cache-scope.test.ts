/**
 * What the informer cache holds, on the real API server: cache-wide default
 * selectors (per-kind ones win), and a cache that starts no informer on a
 * read, so a stray read cannot make it hold a whole kind cluster-wide.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { ConfigMap, Secret, ServiceAccount } from '@kubeloop/scheme';
import { createClient, isClientError } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createInformerCache, isCacheError } from '../src/index.js';
import type { InformerCache } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { thrown } from './support.js';

let env: Environment;
let live: Client;
let ns: string;
const caches: InformerCache[] = [];
const cache = (options: Omit<Parameters<typeof createInformerCache>[0], 'client'>): InformerCache => {
  const c = createInformerCache({ client: live, namespaces: [ns], ...options });
  caches.push(c);
  return c;
};

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  live = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'scope-test' });
  ns = uniqueName('scope');
  await live.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  for (const [name, team] of [['a', 'red'], ['b', 'blue'], ['c', 'red']] as const) {
    await live.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { team } } });
    await live.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns, labels: { team } } });
  }
});

afterAll(async () => {
  await Promise.all(caches.map((c) => c.stop()));
  await live?.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  await env?.stop();
});

const names = (list: { items: readonly { metadata?: { name?: string } }[] }): string[] => list.items.map((o) => o.metadata!.name!).sort();

describe('cache-wide default selectors', () => {
  it('hold only what they match, for every kind without its own; a kind with its own selector keeps it', async () => {
    const c = cache({
      defaultLabelSelector: 'team=red',
      defaultFieldSelector: 'metadata.name!=c',
      byKind: [{ kind: Secret, options: { labelSelector: { team: 'blue' } } }],
    });
    expect(names(await c.list(ConfigMap, { namespace: ns }))).toEqual(['a']);
    // Secret's own label selector wins; the default field selector still applies (it names none).
    expect(names(await c.list(Secret, { namespace: ns }))).toEqual(['b']);
    await expect(c.get(ConfigMap, { namespace: ns, name: 'b' })).rejects.toSatisfy((e) => isClientError(e) && e.reason === 'NotFound');
  });

  it('a default selector the API server would refuse is refused at construction, naming the option', () => {
    for (const [option, value] of [
      ['defaultLabelSelector', 'team in (red'],
      ['defaultFieldSelector', 'metadata.name in (a)'],
    ] as const) {
      const err = thrown(() => createInformerCache({ client: live, [option]: value }));
      expect(isCacheError(err) && err.reason).toBe('InvalidOptions');
      expect((err as Error).message).toContain(option);
    }
  });
});

describe('startInformersOnRead: false', () => {
  it('a read of a kind nobody cached is NotCached, naming the kind and the fixes; nothing was listed', async () => {
    const c = cache({ startInformersOnRead: false, byKind: [{ kind: Secret, options: {} }] });
    const err = await c.list(ServiceAccount, { namespace: ns }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isClientError(err) && err.reason).toBe('NotCached');
    expect((err as Error).message).toMatch(/ServiceAccount\.v1 is not cached.*byKind.*getInformer.*uncached.*apiReader/);
    await expect(c.get(ConfigMap, { namespace: ns, name: 'a' })).rejects.toSatisfy((e) => isClientError(e) && e.reason === 'NotCached');
    expect(c.informers()).toEqual([]);
  });

  it('kinds named in byKind, and informers started with getInformer, are served', async () => {
    const c = cache({ startInformersOnRead: false, byKind: [{ kind: Secret, options: {} }] });
    expect(names(await c.list(Secret, { namespace: ns }))).toEqual(['a', 'b', 'c']);
    await c.getInformer(ConfigMap);
    expect((await c.get(ConfigMap, { namespace: ns, name: 'a' })).metadata?.labels).toEqual({ team: 'red' });
  });
});

describe('createInformerCache checks its options', () => {
  it.each([
    ['client', { get: () => undefined }, /a Client \(createClient/],
    ['byKind', [{ kind: 'Secret', options: {} }], /an array of \{ kind, options \}/],
    ['namespaces', 'prod', /an array of namespace names/],
    ['defaultLabelSelector', 42, /a selector string/],
    ['defaultFieldSelector', ['a=b'], /a selector string/],
    ['startInformersOnRead', 'no', /true or false/],
    ['transform', {}, /a function/],
    ['unsafeDisableDeepFreeze', 1, /true or false/],
    ['reflector', 500, /reflector tuning/],
    ['resyncPeriodMs', -5, /a number of ms >= 0/],
    ['onError', 'log', /a function \(kind, err, phase\)/],
    ['onHandlerError', true, /a function \(kind, err\)/],
  ] as const)('%s: %j', (option, value, expects) => {
    const err = thrown(() => createInformerCache({ client: live, [option]: value }));
    expect(isCacheError(err) && err.reason).toBe('InvalidOptions');
    expect((err as Error).message).toContain(`createInformerCache: ${option} must be`);
    expect((err as Error).message).toMatch(expects);
  });

  it('a client is required', () => {
    expect(() => createInformerCache({} as Parameters<typeof createInformerCache>[0])).toThrow(/client is required/);
  });
});
