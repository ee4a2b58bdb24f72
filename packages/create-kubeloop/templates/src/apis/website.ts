/**
 * The Website kind ({{group}}/v1), defined by its schema: the TypeScript
 * type is inferred from it, and `pnpm generate` (kubeloop generate crds)
 * writes config/crd/ from it. Change the schema, then run `pnpm generate`.
 */
import { defineKind } from '@kubeloop/scheme';
import type { ObjectOf } from '@kubeloop/scheme';
import { Type, k8s } from '@kubeloop/scheme/schema';

export const Website = defineKind({
  group: '{{group}}',
  version: 'v1',
  kind: 'Website',
  plural: 'websites',
  namespaced: true,
  schema: {
    spec: Type.Object({
      title: Type.String({ minLength: 1, description: 'The page title.' }),
      content: Type.Optional(Type.String({ description: 'The page body (HTML); default: an empty page.' })),
    }),
    status: Type.Object({
      configMapName: Type.Optional(Type.String({ description: 'The ConfigMap holding index.html.' })),
      observedGeneration: Type.Optional(Type.Integer()),
      conditions: Type.Optional(k8s.Conditions()),
    }),
  },
  crd: {
    subresources: { status: true },
    printerColumns: [{ name: 'Title', type: 'string', jsonPath: '.spec.title' }],
  },
});

/** A Website object, inferred from the schema above. */
export type Website = ObjectOf<typeof Website>;

/** The finalizer the controller puts on every Website. */
export const WEBSITE_FINALIZER = '{{group}}/finalizer';
