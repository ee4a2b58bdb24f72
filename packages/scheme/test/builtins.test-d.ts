import type { V1Pod } from '@kubernetes/client-node';
import { describe, expectTypeOf, it } from 'vitest';
import { Deployment, Lease, Pod, corev1, defineKind } from '../src/index.js';
import type { ConfigMap, KubeObject, ObjectList, ObjectMeta, ObjectOf, ResourceDescriptor, eventsv1 } from '../src/index.js';
import { HardDisk } from './fixtures.js';

/** The shape of a typed client call: the result type comes from the descriptor. */
declare function get<T extends KubeObject>(kind: ResourceDescriptor<T>, key: { namespace?: string; name: string }): Promise<T>;
declare function list<T extends KubeObject>(kind: ResourceDescriptor<T>): Promise<ObjectList<T>>;

describe('built-in types match the wire', () => {
  it('types timestamps as strings, never Date', () => {
    expectTypeOf<NonNullable<Pod['metadata']>['creationTimestamp']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<NonNullable<Pod['metadata']>['deletionTimestamp']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<NonNullable<NonNullable<NonNullable<Pod['status']>['conditions']>[number]['lastTransitionTime']>>().toEqualTypeOf<string>();
    expectTypeOf<NonNullable<NonNullable<Pod['status']>['startTime']>>().toEqualTypeOf<string>();
    expectTypeOf<NonNullable<NonNullable<Lease['spec']>['renewTime']>>().toEqualTypeOf<string>();
    expectTypeOf<eventsv1.Event['eventTime']>().toEqualTypeOf<string>();
    expectTypeOf<corev1.Event['lastTimestamp']>().toEqualTypeOf<string | undefined>();
    // client-node's own model says Date: the type we do not inherit.
    expectTypeOf<NonNullable<V1Pod['metadata']>['creationTimestamp']>().toEqualTypeOf<Date | undefined>();
  });

  it('gives built-ins literal apiVersion and kind', () => {
    expectTypeOf<Pod['apiVersion']>().toEqualTypeOf<'v1' | undefined>();
    expectTypeOf<Pod['kind']>().toEqualTypeOf<'Pod' | undefined>();
    expectTypeOf<Deployment['apiVersion']>().toEqualTypeOf<'apps/v1' | undefined>();
    expectTypeOf<eventsv1.Event['apiVersion']>().toEqualTypeOf<'events.k8s.io/v1' | undefined>();
    expectTypeOf<Pod['metadata']>().toEqualTypeOf<ObjectMeta | undefined>();
  });

  it('accepts wire JSON and refuses Date timestamps and wrong kinds', () => {
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default', creationTimestamp: '2026-01-02T03:04:05Z' },
      spec: { containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 80 }] }] },
    };
    expectTypeOf(pod).toExtend<KubeObject>();
    // @ts-expect-error a timestamp is a string on the wire
    const dated: Pod = { metadata: { creationTimestamp: new Date() } };
    // @ts-expect-error a Pod's kind is 'Pod'
    const wrongKind: Pod = { kind: 'Service' };
    const cm: ConfigMap = { apiVersion: 'v1', kind: 'ConfigMap', data: { key: 'value' } };
    void [dated, wrongKind, cm];
  });
});

describe('descriptors carry their object type', () => {
  it('types a client call from the descriptor', () => {
    expectTypeOf(Pod).toEqualTypeOf<ResourceDescriptor<Pod>>();
    expectTypeOf<ObjectOf<typeof Pod>>().toEqualTypeOf<Pod>();
    expectTypeOf(get(Pod, { namespace: 'default', name: 'web' })).resolves.toEqualTypeOf<Pod>();
    expectTypeOf(get(Deployment, { namespace: 'default', name: 'web' })).resolves.toEqualTypeOf<Deployment>();
    expectTypeOf(list(Lease)).resolves.toEqualTypeOf<ObjectList<Lease>>();
    expectTypeOf(get(corev1.Event, { name: 'e' })).resolves.toEqualTypeOf<corev1.Event>();
  });

  it('types the seed custom resource from defineKind', () => {
    expectTypeOf(HardDisk).toEqualTypeOf<ResourceDescriptor<HardDisk>>();
    expectTypeOf(get(HardDisk, { namespace: 'default', name: 'disk-1' })).resolves.toEqualTypeOf<HardDisk>();
    expectTypeOf<HardDisk['spec']['sizeGiB']>().toEqualTypeOf<number>();
  });

  it('lets any typed descriptor go where an untyped one is expected', () => {
    expectTypeOf(Pod).toExtend<ResourceDescriptor>();
    expectTypeOf(HardDisk).toExtend<ResourceDescriptor>();
    expectTypeOf<ResourceDescriptor<Pod>>().not.toExtend<ResourceDescriptor<HardDisk>>();
  });

  it("checks a definition's kind against the object type's literal kind", () => {
    // @ts-expect-error the HardDisk type says kind 'HardDisk'
    defineKind<HardDisk>({ group: 'crd-demo.io', version: 'v1', kind: 'SoftDisk' });
    expectTypeOf(defineKind({ group: 'x.io', version: 'v1', kind: 'Anything' })).toEqualTypeOf<ResourceDescriptor>();
  });
});
