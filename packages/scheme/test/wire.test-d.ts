import type { IntOrString, V1JSONSchemaProps, V1ListMeta, V1NetworkPolicyIngressRule } from '@kubernetes/client-node';
import { describe, expectTypeOf, it } from 'vitest';
import type { CustomResourceDefinition, ListMeta, Wire } from '../src/index.js';

type Schema = Wire<V1JSONSchemaProps>;

describe('Wire', () => {
  it('maps Date to string, deeply, in optional fields, arrays and records', () => {
    interface Model {
      at: Date;
      maybe?: Date;
      list: Date[];
      nested: { when?: Date; items: { at: Date }[] };
      byName: { [key: string]: Date };
      text: string;
      port: IntOrString;
    }
    expectTypeOf<Wire<Model>>().toEqualTypeOf<{
      at: string;
      maybe?: string;
      list: string[];
      nested: { when?: string; items: { at: string }[] };
      byName: { [key: string]: string };
      text: string;
      port: number | string;
    }>();
  });

  it('gives renamed model properties their JSON names back', () => {
    expectTypeOf<ListMeta['continue']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ListMeta>().not.toHaveProperty('_continue');
    expectTypeOf<keyof Wire<V1ListMeta>>().toEqualTypeOf<'continue' | 'remainingItemCount' | 'resourceVersion' | 'selfLink' | 'shardInfo'>();
    expectTypeOf<Wire<V1NetworkPolicyIngressRule>>().toHaveProperty('from');
    expectTypeOf<Schema>().toHaveProperty('$ref');
    expectTypeOf<Schema>().toHaveProperty('$schema');
    expectTypeOf<Schema>().toHaveProperty('default');
    expectTypeOf<Schema>().toHaveProperty('enum');
    expectTypeOf<Schema['x-kubernetes-preserve-unknown-fields']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<Schema['x-kubernetes-list-map-keys']>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<Schema>().not.toHaveProperty('x_kubernetes_preserve_unknown_fields');
    expectTypeOf<Schema>().not.toHaveProperty('_default');
  });

  it('turns free-form JSON (any) into unknown', () => {
    expectTypeOf<Schema['default']>().toEqualTypeOf<unknown>();
    expectTypeOf<Schema['enum']>().toEqualTypeOf<unknown[] | undefined>();
  });

  it('types a CRD schema with its JSON names, recursively', () => {
    const crd: CustomResourceDefinition = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'harddisks.crd-demo.io' },
      spec: {
        group: 'crd-demo.io',
        names: { kind: 'HardDisk', listKind: 'HardDiskList', plural: 'harddisks', singular: 'harddisk' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                'x-kubernetes-preserve-unknown-fields': true,
                properties: { spec: { type: 'object', properties: { sizeGiB: { type: 'integer', default: 10 } } } },
              },
            },
          },
        ],
      },
    };
    expectTypeOf(crd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!.spec!.properties).toEqualTypeOf<{ [key: string]: Schema } | undefined>();
  });
});
