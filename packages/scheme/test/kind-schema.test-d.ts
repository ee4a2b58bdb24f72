/** Types inferred from schema-first kinds: the object type comes from the schema, metadata is ObjectMeta, hand-typed kinds still work. */
import { describe, expectTypeOf, it } from 'vitest';
import { defineKind } from '../src/index.js';
import type { KubeObject, ObjectMeta, ObjectOf, ResourceDescriptor } from '../src/index.js';
import { Type, k8s } from '../src/schema/index.js';

const Backup = defineKind({
  group: 'example.com',
  version: 'v1',
  kind: 'Backup',
  plural: 'backups',
  namespaced: true,
  schema: {
    spec: Type.Object({
      schedule: Type.String(),
      retain: Type.Optional(Type.Integer()),
      port: k8s.IntOrString(),
      size: Type.Optional(k8s.Quantity()),
      phase: Type.Optional(k8s.Enum(['A', 'B'])),
      mode: Type.Optional(Type.Union([Type.Literal('x'), Type.Literal('y')])),
      labels: Type.Optional(k8s.Map(Type.String())),
      tags: Type.Optional(k8s.ListSet(Type.String())),
      ports: Type.Optional(k8s.ListMap(Type.Object({ name: Type.String(), port: Type.Integer() }), ['name'])),
      note: Type.Optional(k8s.Nullable(Type.String())),
      template: Type.Optional(k8s.EmbeddedResource()),
      any: Type.Optional(k8s.Any()),
    }),
    status: Type.Object({ conditions: Type.Optional(k8s.Conditions()) }),
  },
});
type Backup = ObjectOf<typeof Backup>;

describe('schema-first kinds', () => {
  it('infers the object type from the schema', () => {
    expectTypeOf<Backup['apiVersion']>().toEqualTypeOf<'example.com/v1' | undefined>();
    expectTypeOf<Backup['kind']>().toEqualTypeOf<'Backup' | undefined>();
    expectTypeOf<Backup['metadata']>().toEqualTypeOf<ObjectMeta | undefined>();
    expectTypeOf<Backup['spec']['schedule']>().toEqualTypeOf<string>();
    expectTypeOf<Backup['spec']['retain']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<Backup['spec']['port']>().toEqualTypeOf<number | string>();
    expectTypeOf<Backup['spec']['phase']>().toEqualTypeOf<'A' | 'B' | undefined>();
    expectTypeOf<Backup['spec']['mode']>().toEqualTypeOf<'x' | 'y' | undefined>();
    expectTypeOf<Backup['spec']['labels']>().toEqualTypeOf<Record<string, string> | undefined>();
    expectTypeOf<Backup['spec']['tags']>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<NonNullable<Backup['spec']['ports']>[number]>().toEqualTypeOf<{ name: string; port: number }>();
    expectTypeOf<Backup['spec']['note']>().toEqualTypeOf<string | null | undefined>();
    expectTypeOf<NonNullable<Backup['spec']['template']>['apiVersion']>().toEqualTypeOf<string>();
    expectTypeOf<Backup['spec']['any']>().toEqualTypeOf<unknown>();
    // status is always optional; conditions have the setStatusCondition shape
    expectTypeOf<Backup['status']>().toEqualTypeOf<{ conditions?: { type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string; observedGeneration?: number; lastTransitionTime?: string }[] } | undefined>();
    expectTypeOf(Backup).toExtend<ResourceDescriptor<Backup>>();
    expectTypeOf(Backup.kind).toEqualTypeOf<'Backup'>();
  });

  it('makes a property optional only when the schema says so', () => {
    const _Optional = defineKind({ group: 'example.com', version: 'v1', kind: 'Opt', plural: 'opts', namespaced: false, schema: { spec: Type.Optional(Type.Object({ a: Type.String() })) } });
    expectTypeOf<ObjectOf<typeof _Optional>['spec']>().toEqualTypeOf<{ a: string } | undefined>();
  });

  it('keeps hand-typed kinds working', () => {
    interface Disk extends KubeObject {
      apiVersion?: 'example.com/v1';
      kind?: 'Disk';
      spec: { sizeGiB: number };
    }
    const Disk = defineKind<Disk>({ group: 'example.com', version: 'v1', kind: 'Disk', plural: 'disks', namespaced: true });
    expectTypeOf(Disk).toEqualTypeOf<ResourceDescriptor<Disk>>();
    // @ts-expect-error the kind must match the type's literal kind
    defineKind<Disk>({ group: 'example.com', version: 'v1', kind: 'Other' });
  });
});
