/**
 * Cache scoping on the real API server: namespaces chosen by a label
 * selector and followed while running (labelled later: watched; unlabelled:
 * its objects leave the cache and handlers see deletes), settings per
 * namespace and per kind, and bad settings refused with a CacheError that
 * says what to write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { ConfigMap, Namespace, Secret } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { createClient, isClientError, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createInformerCache, isCacheError } from '../src/index.js';
import type { InformerCache, InformerCacheOptions, InformerEvent } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { thrown } from './support.js';

let env: Environment;
let live: Client;
const made: string[] = [];
const caches: InformerCache[] = [];
const cache = (options: Omit<InformerCacheOptions, 'client'>): InformerCache => {
  const c = createInformerCache({ client: live, ...options });
  caches.push(c);
  return c;
};

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A namespace with labels, holding ConfigMaps and Secrets named a, b, c (a and c team=red, b team=blue). */
async function namespace(prefix: string, labels: Record<string, string> = {}): Promise<string> {
  const ns = uniqueName(prefix);
  await live.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels } });
  made.push(ns);
  for (const [name, team] of [['a', 'red'], ['b', 'blue'], ['c', 'red']] as const) {
    await live.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { team } }, data: { team } });
    await live.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns, labels: { team } } });
  }
  return ns;
}

const names = (list: { items: readonly { metadata?: { name?: string; namespace?: string } }[] }): string[] => list.items.map((o) => `${o.metadata!.namespace}/${o.metadata!.name}`).sort();

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  live = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'cache-scope-test' });
});

afterAll(async () => {
  await Promise.all(caches.map((c) => c.stop()));
  for (const ns of made) await live?.delete(Namespace, { name: ns }).catch(() => undefined);
  await env?.stop();
});

describe('namespaces chosen by a label selector', () => {
  it('a namespace labelled while running starts being cached; unlabelled, its objects leave and handlers see deletes', async () => {
    const key = `scope.kubeloop.dev/${uniqueName('t')}`;
    const first = await namespace('sel-a', { [key]: 'yes' });
    const later = await namespace('sel-b');
    const other = await namespace('sel-c', { [key]: 'no' });
    const c = cache({ namespaceSelector: `${key}=yes` });

    const informer = await c.getInformer(ConfigMap, { signal: AbortSignal.timeout(30_000) });
    const events: InformerEvent<KubeObject>[] = [];
    informer.addEventHandler((e) => void events.push(e));
    expect(names(await c.list(ConfigMap))).toEqual([`${first}/a`, `${first}/b`, `${first}/c`]);
    // A namespace the selector does not choose: nothing cached there, and a read says so as NotFound.
    expect((await c.list(ConfigMap, { namespace: other })).items).toEqual([]);
    const missing = await c.get(ConfigMap, { namespace: later, name: 'a' }).catch((e: unknown) => e);
    expect(isClientError(missing) && missing.reason).toBe('NotFound');

    // Labelled now: its objects arrive, as adds.
    await live.patch({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: later } }, mergePatch({ metadata: { labels: { [key]: 'yes' } } }));
    await eventually(async () => (await c.list(ConfigMap, { namespace: later })).items.length === 3, 'the labelled namespace\'s ConfigMaps in the cache');
    expect((await c.get(ConfigMap, { namespace: later, name: 'b' })).data?.['team']).toBe('blue');
    await eventually(() => events.filter((e) => e.type === 'add' && e.object.metadata?.namespace === later).length === 3, 'adds for the labelled namespace');
    // It is watched, not just listed: a change there reaches the cache.
    await live.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b', namespace: later } }, mergePatch({ data: { team: 'green' } }));
    await eventually(async () => (await c.get(ConfigMap, { namespace: later, name: 'b' })).data?.['team'] === 'green', 'the change in the labelled namespace');

    // Unlabelled: its objects leave the cache, each handler seeing a delete; the first namespace stays.
    await live.patch({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: first } }, mergePatch({ metadata: { labels: { [key]: null } } }));
    await eventually(async () => (await c.list(ConfigMap, { namespace: first })).items.length === 0, 'the unlabelled namespace\'s ConfigMaps to leave');
    const deletes = events.filter((e) => e.type === 'delete' && e.object.metadata?.namespace === first);
    await eventually(() => events.filter((e) => e.type === 'delete' && e.object.metadata?.namespace === first).length === 3, 'deletes for the unlabelled namespace');
    expect(deletes.every((e) => e.type === 'delete' && e.finalStateUnknown)).toBe(true);
    expect(names(await c.list(ConfigMap))).toEqual([`${later}/a`, `${later}/b`, `${later}/c`]);
    const gone = await c.get(ConfigMap, { namespace: first, name: 'a' }).catch((e: unknown) => e);
    expect(isClientError(gone) && gone.reason).toBe('NotFound');
    // A change in the dropped namespace no longer reaches the cache.
    await live.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'late', namespace: first } });
    await live.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'late', namespace: later } });
    await eventually(async () => (await c.list(ConfigMap, { namespace: later })).items.length === 4, 'the late ConfigMap in the followed namespace');
    expect((await c.list(ConfigMap, { namespace: first })).items).toEqual([]);
    expect(c.informerInfo(ConfigMap)!.stats).toHaveLength(1); // one list+watch: the followed namespace's
  });

  it('a kind\'s own namespaceSelector replaces the cache\'s namespaces for that kind only', async () => {
    const key = `scope.kubeloop.dev/${uniqueName('k')}`;
    const fixed = await namespace('kind-fixed');
    const chosen = await namespace('kind-sel', { [key]: 'on' });
    const c = cache({ namespaces: [fixed], byKind: [{ kind: Secret, options: { namespaceSelector: { [key]: 'on' } } }] });
    expect(names(await c.list(ConfigMap))).toEqual([`${fixed}/a`, `${fixed}/b`, `${fixed}/c`]);
    expect(names(await c.list(Secret))).toEqual([`${chosen}/a`, `${chosen}/b`, `${chosen}/c`]);
  });

  it('a kind\'s namespaceSelector on a cluster-scoped kind is an error its reads report', async () => {
    const c = cache({ byKind: [{ kind: Namespace, options: { namespaceSelector: 'team=x' } }] });
    const err = await c.list(Namespace, { signal: AbortSignal.timeout(10_000) }).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('InvalidRequest');
    expect(String(err)).toContain('cluster-scoped');
  });
});

describe('settings per namespace and per kind', () => {
  it('each namespace keeps its own selector and transform; a kind\'s settings for a namespace win over the cache\'s', async () => {
    const red = await namespace('ns-red');
    const all = await namespace('ns-all');
    const c = cache({
      namespaces: { [red]: { labelSelector: 'team=red' }, [all]: { transform: (o) => ({ ...o, metadata: { ...o.metadata, annotations: { seen: all } } }) } },
      byKind: [{ kind: Secret, options: { namespaces: { [red]: { labelSelector: 'team=blue' } } } }],
    });
    expect(names(await c.list(ConfigMap))).toEqual([`${all}/a`, `${all}/b`, `${all}/c`, `${red}/a`, `${red}/c`]);
    expect((await c.get(ConfigMap, { namespace: all, name: 'b' })).metadata?.annotations?.['seen']).toBe(all);
    expect((await c.get(ConfigMap, { namespace: red, name: 'a' })).metadata?.annotations?.['seen']).toBeUndefined();
    // Secret's own namespaces replace the cache's: only red, with its own selector.
    expect(names(await c.list(Secret))).toEqual([`${red}/b`]);
    // What the cache would hold, as read-your-writes asks it.
    const redB = await live.get(ConfigMap, { namespace: red, name: 'b' });
    expect(c.admits(ConfigMap, redB)).toBe(false);
    expect(c.admits(ConfigMap, await live.get(ConfigMap, { namespace: all, name: 'b' }))).toBe(true);
  });

  it('a per-kind label selector is honoured while watching: an object that stops matching leaves the cache', async () => {
    const ns = await namespace('kind-sel');
    const c = cache({ byKind: [{ kind: ConfigMap, options: { namespaces: [ns], labelSelector: 'team=red' } }] });
    expect(names(await c.list(ConfigMap))).toEqual([`${ns}/a`, `${ns}/c`]);
    await live.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: ns } }, mergePatch({ metadata: { labels: { team: 'blue' } } }));
    await live.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b', namespace: ns } }, mergePatch({ metadata: { labels: { team: 'red' } } }));
    await eventually(async () => names(await c.list(ConfigMap)).join() === [`${ns}/b`, `${ns}/c`].join(), 'the cache to follow the relabelling');
  });
});

describe('bad settings', () => {
  const refused = (options: Omit<InformerCacheOptions, 'client'>): { reason: string; message: string } => {
    const err = thrown(() => createInformerCache({ client: live, ...options }));
    if (!isCacheError(err)) throw new Error(`expected a CacheError, got ${String(err)}`);
    return { reason: err.reason, message: err.message };
  };

  it('are refused when the cache is made, with a CacheError InvalidOptions that says what to write', () => {
    const both = refused({ namespaces: ['a'], namespaceSelector: 'team=x' });
    expect(both.reason).toBe('InvalidOptions');
    expect(both.message).toContain('keep one');

    const empty = refused({ namespaceSelector: '' });
    expect(empty.message).toContain('leave it out to cache all namespaces');

    const badSelector = refused({ namespaceSelector: 'team in (a' });
    expect(badSelector.message).toContain('namespaceSelector is not a selector');

    const badName = refused({ namespaces: { 'Team_A': {} } });
    expect(badName.message).toContain('"Team_A" is not a namespace name');

    const unknownSetting = refused({ namespaces: { a: { labelSelectr: 'x' } as never } });
    expect(unknownSetting.message).toContain('unknown settings labelSelectr');

    const perNamespace = refused({ namespaces: { a: { fieldSelector: 'metadata.name' } } });
    expect(perNamespace.message).toContain('namespaces["a"].fieldSelector');

    const perKind = refused({ byKind: [{ kind: ConfigMap, options: { namespaces: ['a'], namespaceSelector: 'x=y' } }] });
    expect(perKind.message).toContain('byKind[0] (ConfigMap)');

    const kindSelector = refused({ byKind: [{ kind: ConfigMap, options: { labelSelector: 'a in (b' } }] });
    expect(kindSelector.message).toMatch(/byKind\[0\] \(ConfigMap\): labelSelector is not a selector/);

    const stages = refused({ byKind: [{ kind: ConfigMap, options: { stages: ['x'] as never } }] });
    expect(stages.message).toContain('stages must be an array of functions');
  });
});
