/**
 * Object types as they are on the wire. `@kubernetes/client-node`'s model
 * classes type timestamps as `Date` (its ObjectSerializer converts them), and
 * rename a few JSON fields to legal identifiers (`_continue`, `_from`,
 * `x_kubernetes_preserve_unknown_fields`, ...). kubeloop reads JSON as JSON,
 * in lists and watch events alike, so its types are those models mapped back
 * to the wire with {@link Wire}.
 */
import type { V1ListMeta, V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';

type Dashed<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}-${Dashed<Tail>}` : S;

/**
 * The JSON name of a client-node model property. The generator prefixes
 * reserved words with `_` (`_continue`, `_from`, `_default`, `_enum`, `_int`),
 * writes `x-kubernetes-*` with underscores, and drops the `$` of JSONSchemaProps'
 * `$ref` / `$schema` (recognised by its `x_kubernetes_preserve_unknown_fields`
 * property, which no other model has). No wire field of the Kubernetes API
 * starts with `_`.
 */
type WireKey<T, K> = K extends `_${infer Name}`
  ? Name
  : K extends `x_kubernetes_${infer Rest}`
    ? `x-kubernetes-${Dashed<Rest>}`
    : K extends 'ref' | 'schema'
      ? 'x_kubernetes_preserve_unknown_fields' extends keyof T
        ? `$${K}`
        : K
      : K;

/**
 * A client-node model type mapped to its JSON form, recursively: `Date`
 * becomes `string` (RFC 3339, as the API server sends it), renamed properties
 * get their JSON names back, `any` (free-form JSON such as a CRD schema's
 * `default`) becomes `unknown`, and arrays and objects are mapped element by
 * element. Optional properties stay optional.
 *
 * @example
 * ```ts
 * import type { V1Lease } from '@kubernetes/client-node';
 * import type { Wire } from '@kubeloop/scheme';
 *
 * type LeaseJson = Wire<V1Lease>;
 * declare const lease: LeaseJson;
 * const renewed: string | undefined = lease.spec?.renewTime; // a string, never a Date
 * ```
 */
export type Wire<T> = 0 extends 1 & T
  ? unknown
  : T extends Date
    ? string
    : T extends string | number | boolean | bigint | null | undefined
      ? T
      : T extends readonly (infer E)[]
        ? Wire<E>[]
        : T extends object
          ? { [K in keyof T as WireKey<T, K>]: Wire<T[K]> }
          : T;

/**
 * A client-node model as a wire object of one kind: {@link Wire} plus literal
 * `apiVersion` and `kind`. They stay optional because the API server leaves
 * them out of the items of built-in lists.
 */
export type WireObject<Model, ApiVersion extends string, Kind extends string> = Omit<Wire<Model>, 'apiVersion' | 'kind'> & {
  /** `group/version`, or just the version for the core group. */
  apiVersion?: ApiVersion;
  /** The kind. */
  kind?: Kind;
};

/** Standard object metadata (`metadata`), with timestamps as strings. */
export type ObjectMeta = Wire<V1ObjectMeta>;

/** List metadata (`metadata` of a list): `resourceVersion`, `continue`, `remainingItemCount`. */
export type ListMeta = Wire<V1ListMeta>;

/** A reference from an object to its owner (`metadata.ownerReferences[]`). */
export type OwnerReference = Wire<V1OwnerReference>;

/**
 * What every Kubernetes object has in common: the shape a resource
 * descriptor's type parameter must fit. Custom resource types extend it.
 *
 * @example
 * ```ts
 * interface HardDisk extends KubeObject {
 *   apiVersion?: 'crd-demo.io/v1';
 *   kind?: 'HardDisk';
 *   spec: { sizeGiB: number };
 * }
 * ```
 */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/**
 * A list of objects as the API server returns it from a LIST call.
 *
 * @example
 * ```ts
 * declare const pods: ObjectList<Pod>;
 * const names = pods.items.map((p) => p.metadata?.name);
 * const next = pods.metadata?.continue; // the pagination token
 * ```
 */
export interface ObjectList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata?: ListMeta;
  items: T[];
}
