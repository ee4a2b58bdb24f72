/**
 * The store: keys, the namespace index, user indexes kept in step through
 * upserts, removes and replaces, and index functions that throw or answer
 * nonsense (the object is stored, left out of that index, reported).
 */
import type { KubeObject } from '@kubeloop/scheme';
import { describe, expect, it } from 'vitest';
import { CacheError, NAMESPACE_INDEX, Store, keyOf, objectKey } from '../src/index.js';

type Obj = KubeObject & { spec?: { node?: string; tags?: string[] } };

const obj = (namespace: string | undefined, name: string, spec: Obj['spec'] = {}, uid = `uid-${name}`): Obj => ({
  metadata: { ...(namespace ? { namespace } : {}), name, uid },
  spec,
});

const names = (objects: readonly Obj[]): string[] => objects.map((o) => o.metadata!.name!).sort();

describe('store', () => {
  it('keys objects by namespace/name, or name when cluster-scoped', () => {
    expect(objectKey(obj('a', 'x'))).toBe('a/x');
    expect(objectKey(obj(undefined, 'node-1'))).toBe('node-1');
    expect(keyOf('a', 'x')).toBe('a/x');
    expect(keyOf(undefined, 'x')).toBe('x');
  });

  it('upserts, replaces an object under its key and tells what it replaced, removes', () => {
    const store = new Store<Obj>();
    expect(store.upsert(obj('a', 'x', { node: '1' }))).toBeUndefined();
    const before = store.get('a/x');
    expect(store.upsert(obj('a', 'x', { node: '2' }))).toBe(before);
    expect(store.size).toBe(1);
    expect(store.get('a/x')?.spec?.node).toBe('2');
    expect(store.remove('a/x')?.spec?.node).toBe('2');
    expect(store.remove('a/x')).toBeUndefined();
    expect(store.has('a/x')).toBe(false);
  });

  it('keeps the namespace index and user indexes in step through updates, removes and replace', () => {
    const store = new Store<Obj>({ byNode: (o) => (o.spec?.node ? [o.spec.node] : []), byTag: (o) => o.spec?.tags ?? [] });
    store.upsert(obj('a', 'x', { node: '1', tags: ['red', 'blue'] }));
    store.upsert(obj('a', 'y', { node: '1', tags: ['red'] }));
    store.upsert(obj('b', 'z', { node: '2' }));
    expect(names(store.byIndex(NAMESPACE_INDEX, 'a'))).toEqual(['x', 'y']);
    expect(names(store.byIndex('byNode', '1'))).toEqual(['x', 'y']);
    expect(names(store.byIndex('byTag', 'red'))).toEqual(['x', 'y']);
    store.upsert(obj('a', 'x', { node: '2', tags: ['blue'] })); // moves node 1 → 2, loses red
    expect(names(store.byIndex('byNode', '1'))).toEqual(['y']);
    expect(names(store.byIndex('byNode', '2'))).toEqual(['x', 'z']);
    expect(names(store.byIndex('byTag', 'red'))).toEqual(['y']);
    store.remove('a/y');
    expect(store.byIndex('byNode', '1')).toEqual([]);
    expect(store.byIndex('byTag', 'red')).toEqual([]);
    store.replace([obj('c', 'w', { node: '9' })]);
    expect(store.size).toBe(1);
    expect(store.byIndex(NAMESPACE_INDEX, 'a')).toEqual([]);
    expect(names(store.byIndex('byNode', '9'))).toEqual(['w']);
  });

  it('adds an index later, indexing what is already stored; rejects a taken name and an unknown index with CacheError InvalidIndex', () => {
    const store = new Store<Obj>();
    store.upsert(obj('a', 'x', { node: '1' }));
    store.addIndex('byNode', (o) => (o.spec?.node ? [o.spec.node] : []));
    expect(store.hasIndex('byNode')).toBe(true);
    expect(names(store.byIndex('byNode', '1'))).toEqual(['x']);
    expect(() => store.addIndex('byNode', () => [])).toThrow(CacheError);
    expect(() => store.byIndex('nope', 'x')).toThrow(expect.objectContaining({ reason: 'InvalidIndex' }) as Error);
  });

  it('an index function that throws or answers something other than strings: the object is stored, left out of that index, and reported', () => {
    const reported: { err: unknown; index: string; key: string }[] = [];
    const store = new Store<Obj>(
      {
        byNode: (o) => {
          if (o.spec?.node === 'boom') throw new TypeError('index bug');
          return o.spec?.node ? [o.spec.node] : [];
        },
        odd: (o) => (o.metadata?.name === 'n' ? (42 as unknown as string[]) : []),
      },
      (err, index, key) => reported.push({ err, index, key }),
    );
    store.upsert(obj('a', 'x', { node: 'boom' }));
    store.upsert(obj('a', 'n'));
    store.upsert(obj('a', 'y', { node: '1' }));
    expect(store.size).toBe(3);
    expect(names(store.byIndex(NAMESPACE_INDEX, 'a'))).toEqual(['n', 'x', 'y']);
    expect(names(store.byIndex('byNode', '1'))).toEqual(['y']);
    expect(reported.map((r) => `${r.index} ${r.key} ${String(r.err)}`)).toEqual([
      'byNode a/x TypeError: index bug',
      'odd a/n TypeError: the index function returned number, not an array of strings',
    ]);
    // Replacing and removing such an object leaves no stale entry behind.
    store.upsert(obj('a', 'x', { node: '1' }));
    expect(names(store.byIndex('byNode', '1'))).toEqual(['x', 'y']);
    store.upsert(obj('a', 'y', { node: 'boom' }));
    expect(names(store.byIndex('byNode', '1'))).toEqual(['x']);
    store.remove('a/x');
    expect(store.byIndex('byNode', '1')).toEqual([]);
  });
});
