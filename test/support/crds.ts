/** CustomResourceDefinition manifests for tests: one builder instead of a hand-written copy per file. */
import type { CustomResourceDefinitionLike } from '@kubeloop/envtest';

export interface TestCRDOptions {
  /** Versions in order; the first is the storage version unless one says otherwise. Default: `[{ name: 'v1' }]`. */
  readonly versions?: readonly { readonly name: string; readonly served?: boolean; readonly storage?: boolean }[];
  /** Default: `Namespaced`. */
  readonly scope?: 'Namespaced' | 'Cluster';
  /** Enable the status subresource. Default: false. */
  readonly status?: boolean;
  /** Default: an object that keeps unknown fields. */
  readonly schema?: Record<string, unknown>;
}

/**
 * A CRD for `kind` in `group`, plural `<kind lower-cased>s`.
 *
 * @example
 * ```ts
 * await env.installCRDs([testCRD('demo.kubeloop.dev', 'HardDisk', { status: true })]);
 * ```
 */
export function testCRD(group: string, kind: string, options: TestCRDOptions = {}): CustomResourceDefinitionLike {
  const singular = kind.toLowerCase();
  const plural = `${singular}s`;
  const versions = options.versions ?? [{ name: 'v1' }];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: options.scope ?? 'Namespaced',
      names: { plural, singular, kind, listKind: `${kind}List` },
      versions: versions.map((v, i) => ({
        name: v.name,
        served: v.served ?? true,
        storage: v.storage ?? i === 0,
        ...(options.status ? { subresources: { status: {} } } : {}),
        schema: { openAPIV3Schema: options.schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      })),
    },
  };
}
