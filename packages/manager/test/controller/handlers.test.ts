/**
 * Event handlers map informer events to requests: the object itself, its
 * (controller) owner of a given kind, or whatever a map function says. Pure.
 */
import { describe, expect, it } from 'vitest';
import type { InformerEvent } from '@kubeloop/cache';
import { ConfigMap, defineKind, Namespace } from '@kubeloop/scheme';
import type { KubeObject, ObjectMeta, OwnerReference } from '@kubeloop/scheme';
import { enqueueMapped, enqueueObject, enqueueOwner } from '../../src/index.js';
import type { Request } from '../../src/index.js';

const HardDisk = defineKind<KubeObject & { apiVersion: 'crd-demo.io/v1'; kind: 'HardDisk' }>({
  group: 'crd-demo.io',
  version: 'v1',
  kind: 'HardDisk',
  plural: 'harddisks',
  namespaced: true,
});

function obj(metadata: ObjectMeta): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata };
}
const add = (metadata: ObjectMeta): InformerEvent<KubeObject> => ({ type: 'add', object: obj(metadata) });
const del = (metadata: ObjectMeta): InformerEvent<KubeObject> => ({ type: 'delete', object: obj(metadata), finalStateUnknown: true });
const update = (old: ObjectMeta, now: ObjectMeta): InformerEvent<KubeObject> => ({ type: 'update', old: obj(old), object: obj(now) });

function ref(name: string, extra: Partial<OwnerReference> = {}): OwnerReference {
  return { apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', name, uid: `uid-${name}`, controller: true, ...extra };
}

describe('enqueueObject', () => {
  const h = enqueueObject();
  it('enqueues a namespaced object by namespace and name, on add, update and delete', () => {
    expect(h(add({ namespace: 'ns', name: 'a' }))).toEqual([{ namespace: 'ns', name: 'a' }]);
    expect(h(update({ namespace: 'ns', name: 'a' }, { namespace: 'ns', name: 'a' }))).toEqual([{ namespace: 'ns', name: 'a' }]);
    expect(h(del({ namespace: 'ns', name: 'a' }))).toEqual([{ namespace: 'ns', name: 'a' }]);
  });
  it('enqueues a cluster-scoped object by name only', () => {
    const r = h(add({ name: 'node-1' }));
    expect(r).toEqual([{ name: 'node-1' }]);
    expect(r[0]).not.toHaveProperty('namespace');
  });
  it('enqueues nothing for an object without a name', () => {
    expect(h(add({ namespace: 'ns' }))).toEqual([]);
  });
});

describe('enqueueOwner', () => {
  it('enqueues the controller owner of the given kind in the object namespace', () => {
    expect(enqueueOwner(HardDisk)(add({ namespace: 'ns', name: 'd1-disk', ownerReferences: [ref('d1')] }))).toEqual([{ namespace: 'ns', name: 'd1' }]);
  });
  it('checks the kind: an owner of another kind is not enqueued', () => {
    const e = add({ namespace: 'ns', name: 'x', ownerReferences: [ref('rs', { apiVersion: 'apps/v1', kind: 'ReplicaSet' })] });
    expect(enqueueOwner(HardDisk)(e)).toEqual([]);
  });
  it('checks the group: the same kind name in another API group is not enqueued, another version of the group is', () => {
    const otherGroup = add({ namespace: 'ns', name: 'x', ownerReferences: [ref('d1', { apiVersion: 'other.example.com/v1' })] });
    expect(enqueueOwner(HardDisk)(otherGroup)).toEqual([]);
    const otherVersion = add({ namespace: 'ns', name: 'x', ownerReferences: [ref('d1', { apiVersion: 'crd-demo.io/v2beta1' })] });
    expect(enqueueOwner(HardDisk)(otherVersion)).toEqual([{ namespace: 'ns', name: 'd1' }]);
  });
  it('tells the core group from a named one', () => {
    const coreOwned = add({ namespace: 'ns', name: 'x', ownerReferences: [ref('cm', { apiVersion: 'v1', kind: 'ConfigMap' })] });
    const fakeOwned = add({ namespace: 'ns', name: 'x', ownerReferences: [ref('cm', { apiVersion: 'example.com/v1', kind: 'ConfigMap' })] });
    expect(enqueueOwner(ConfigMap)(coreOwned)).toEqual([{ namespace: 'ns', name: 'cm' }]);
    expect(enqueueOwner(ConfigMap)(fakeOwned)).toEqual([]);
    // a TypeRef works as well as a descriptor
    expect(enqueueOwner({ apiVersion: 'v1', kind: 'ConfigMap' })(coreOwned)).toEqual([{ namespace: 'ns', name: 'cm' }]);
  });
  it('enqueues only the controller owner by default; every owner of the kind with onlyController: false', () => {
    const e = add({
      namespace: 'ns',
      name: 'x',
      ownerReferences: [ref('plain', { controller: false }), (({ controller: _c, ...rest }) => rest)(ref('unset')), ref('boss')],
    });
    expect(enqueueOwner(HardDisk)(e)).toEqual([{ namespace: 'ns', name: 'boss' }]);
    expect(enqueueOwner(HardDisk, { onlyController: false })(e)).toEqual(
      expect.arrayContaining([
        { namespace: 'ns', name: 'plain' },
        { namespace: 'ns', name: 'unset' },
        { namespace: 'ns', name: 'boss' },
      ]),
    );
    expect(enqueueOwner(HardDisk, { onlyController: false })(e)).toHaveLength(3);
  });
  it('on update enqueues the old and the new owner, so the one that lost the object hears of it', () => {
    const e = update({ namespace: 'ns', name: 'x', ownerReferences: [ref('old')] }, { namespace: 'ns', name: 'x', ownerReferences: [ref('new')] });
    expect(enqueueOwner(HardDisk)(e)).toEqual(expect.arrayContaining([{ namespace: 'ns', name: 'old' }, { namespace: 'ns', name: 'new' }]));
    // an owner reference added by the update still enqueues the new owner
    const adopted = update({ namespace: 'ns', name: 'x' }, { namespace: 'ns', name: 'x', ownerReferences: [ref('adopter')] });
    expect(enqueueOwner(HardDisk)(adopted)).toEqual([{ namespace: 'ns', name: 'adopter' }]);
  });
  it('enqueues the owner on delete (the owner re-creates what it lost)', () => {
    expect(enqueueOwner(HardDisk)(del({ namespace: 'ns', name: 'x', ownerReferences: [ref('d1')] }))).toEqual([{ namespace: 'ns', name: 'd1' }]);
  });
  it('a cluster-scoped object enqueues its owner without a namespace', () => {
    const clusterOwner = { apiVersion: 'example.com/v1', kind: 'Cluster' };
    const e = add({ name: 'pv-1', ownerReferences: [ref('c1', { apiVersion: 'example.com/v1', kind: 'Cluster' })] });
    const r = enqueueOwner(clusterOwner)(e);
    expect(r).toEqual([{ name: 'c1' }]);
    expect(r[0]).not.toHaveProperty('namespace');
  });
  it('a cluster-scoped owner of a namespaced object is enqueued without a namespace', () => {
    const e = add({ namespace: 'team-a', name: 'quota', ownerReferences: [ref('team-a', { apiVersion: 'v1', kind: 'Namespace' })] });
    // the descriptor says Namespace is cluster-scoped
    expect(enqueueOwner(Namespace)(e)).toEqual([{ name: 'team-a' }]);
    // a TypeRef does not know: say so
    expect(enqueueOwner({ apiVersion: 'v1', kind: 'Namespace' }, { ownerNamespaced: false })(e)).toEqual([{ name: 'team-a' }]);
  });
  it('enqueues nothing for an object without owner references', () => {
    expect(enqueueOwner(HardDisk)(add({ namespace: 'ns', name: 'orphan' }))).toEqual([]);
  });
});

describe('enqueueMapped', () => {
  const seen: string[] = [];
  const h = enqueueMapped((o): Request[] => {
    seen.push(o.metadata?.name ?? '');
    const target = o.metadata?.labels?.['target'];
    return target ? [{ namespace: 'ns', name: target }] : [];
  });
  it('enqueues what the map function returns for the object', () => {
    expect(h(add({ name: 'a', labels: { target: 't1' } }))).toEqual([{ namespace: 'ns', name: 't1' }]);
    expect(h(del({ name: 'a', labels: { target: 't1' } }))).toEqual([{ namespace: 'ns', name: 't1' }]);
    expect(h(add({ name: 'b' }))).toEqual([]);
  });
  it('maps both the old and the new object on update', () => {
    seen.length = 0;
    const r = h(update({ name: 'old', labels: { target: 't1' } }, { name: 'new', labels: { target: 't2' } }));
    expect(r).toEqual(expect.arrayContaining([{ namespace: 'ns', name: 't1' }, { namespace: 'ns', name: 't2' }]));
    expect(seen).toEqual(expect.arrayContaining(['old', 'new']));
  });
  it('can fan out to several requests, cluster-scoped ones included', () => {
    const fan = enqueueMapped(() => [{ name: 'cluster-thing' }, { namespace: 'a', name: 'x' }, { namespace: 'b', name: 'x' }]);
    expect(fan(add({ name: 'n' }))).toEqual([{ name: 'cluster-thing' }, { namespace: 'a', name: 'x' }, { namespace: 'b', name: 'x' }]);
  });
});
