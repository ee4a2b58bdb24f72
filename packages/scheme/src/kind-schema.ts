/**
 * Schema-first kinds: what a descriptor carries when its kind is defined by
 * a schema (TypeBox values, which are JSON Schema), and the object type
 * inferred from that schema. Only types are imported from `typebox` here, so
 * a program that never defines a schema-first kind never loads it; the
 * builders and the CRD generator live in `@kubeloop/scheme/schema`.
 */
import type { Static, TObject, TOptional, TProperties } from 'typebox';
import type { ObjectMeta } from './wire.js';

/** A JSON Schema value as plain, frozen JSON data. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** One CEL validation rule (`x-kubernetes-validations[]`), evaluated by the API server. */
export interface ValidationRule {
  /** The CEL expression; `self` is the value the rule is attached to (`self.min <= self.max`). */
  readonly rule: string;
  /** The error message when the rule is false. Default: the server's (`failed rule: <rule>`). */
  readonly message?: string;
  /** A CEL expression giving the message instead of `message`. */
  readonly messageExpression?: string;
  /** The field error reason reported. Default: `FieldValueInvalid`. */
  readonly reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  /** A JSON path below `self` the error is reported at (`.spec.replicas`). Default: the field the rule is on. */
  readonly fieldPath?: string;
  /** Evaluate transition rules (using `oldSelf`) also when there is no old value. Default: false. */
  readonly optionalOldSelf?: boolean;
}

/** An extra column for `kubectl get` (`additionalPrinterColumns[]`). */
export interface PrinterColumn {
  /** The column header. */
  readonly name: string;
  /** The column's value type. */
  readonly type: 'integer' | 'number' | 'string' | 'boolean' | 'date';
  /** A simple JSON path into the object (`.spec.size`, `.status.phase`). */
  readonly jsonPath: string;
  /** A human-readable description. */
  readonly description?: string;
  /** An OpenAPI format for the value (`date-time`, `int32`, ...). */
  readonly format?: string;
  /** 0 shows the column in the standard view; higher only with `-o wide`. Default: 0. */
  readonly priority?: number;
}

/** The scale subresource (`/scale`), so `kubectl scale` and autoscalers work with the kind. */
export interface ScaleSubresource {
  /** JSON path of the desired replicas in the object (`.spec.replicas`). */
  readonly specReplicasPath: string;
  /** JSON path of the observed replicas (`.status.replicas`). */
  readonly statusReplicasPath: string;
  /** JSON path of the label selector string in status (`.status.selector`), for autoscalers. Default: none. */
  readonly labelSelectorPath?: string;
}

/**
 * How the kind's CustomResourceDefinition presents and serves this version.
 * Names and scope are per kind (every version must agree); the rest is per
 * version.
 */
export interface CustomResourceOptions {
  /** The singular resource name. Default: the kind lower-cased. */
  readonly singular?: string;
  /** Short names for kubectl (`hd`). Default: none. */
  readonly shortNames?: readonly string[];
  /** Categories for kubectl (`all`). Default: none. */
  readonly categories?: readonly string[];
  /** Extra `kubectl get` columns of this version. Default: none. */
  readonly printerColumns?: readonly PrinterColumn[];
  /**
   * Fields of this version that field selectors may use
   * (`kubectl get --field-selector spec.color=blue`, a cache's field
   * selector): simple JSON paths to a string, integer or boolean, at most 8.
   * Default: none (only `metadata.name` and `metadata.namespace`).
   */
  readonly selectableFields?: readonly { readonly jsonPath: string }[];
  /** Subresources of this version. Default: none. */
  readonly subresources?: {
    /** Serve `/status`: writes to the object ignore `status`, writes to `/status` change only it. Default: false. */
    readonly status?: boolean;
    /** Serve `/scale`. Default: none. */
    readonly scale?: ScaleSubresource;
  };
  /**
   * The version objects are stored in. Exactly one version of a kind is the
   * storage version. Default: true when the kind has one version only.
   */
  readonly storage?: boolean;
  /** Whether the version is served. Default: true. */
  readonly served?: boolean;
  /** Mark the version deprecated: `true` (the server's default warning) or the warning text. Default: not deprecated. */
  readonly deprecated?: boolean | string;
  /** CEL rules on the whole object (`self.metadata.name`, `self.spec`). Default: none. */
  readonly validations?: readonly ValidationRule[];
  /**
   * Convert between the kind's versions with a webhook (ConversionReview v1,
   * `@kubeloop/webhook`'s `conversionWebhook`): the CRD gets
   * `conversion.strategy: Webhook` calling this service (in the cluster) or
   * URL. Kind-wide: versions that set it must agree. The caBundle is filled
   * in at install time (managed certificates, envtest's `installWebhooks`,
   * or cert-manager's CA injector). Default: none (strategy `None`: the API
   * server only rewrites `apiVersion`, right only when every version has the
   * same schema).
   */
  readonly conversion?: ConversionWebhookTarget;
  /**
   * The kind belongs to another project (cert-manager's Certificate, say):
   * its CRD is theirs, installed by them. `kubeloop generate types` sets it
   * on the kinds it writes from CRDs. `kubeloop generate crds` writes no CRD
   * for it (keep its CRD under vendor/crds for tests), and a controller `for`
   * it gets no permission on its status (a controller reporting status on
   * someone else's kind declares that in `permissions`). Kind-wide.
   * Default: false (the project's own kind).
   */
  readonly foreign?: boolean;
}

/** Where the API server sends ConversionReviews: a Service in the cluster, or a URL. */
export type ConversionWebhookTarget =
  | { readonly service: { readonly namespace: string; readonly name: string; /** Default: `/convert`. */ readonly path?: string; /** Default: 443. */ readonly port?: number } }
  | { readonly url: string };

/**
 * What a descriptor of a schema-first kind carries: the root OpenAPI v3
 * schema of its objects (plain JSON, exactly as the kind's author wrote it
 * with `apiVersion`, `kind` and `metadata` added) and its CRD options.
 */
export interface KindSchema {
  /** The schema of the whole object: `type: object` with `apiVersion`, `kind`, `metadata` and the kind's own properties. */
  readonly openAPIV3Schema: JsonSchema;
  /** How the CRD presents and serves this version. */
  readonly crd: CustomResourceOptions;
}

/** `apiVersion` of a group and version: `group/version`, or the version alone for the core group. */
export type ApiVersionOf<Group extends string, Version extends string> = Group extends '' ? Version : `${Group}/${Version}`;

/** The root properties as the object has them: `status` is always optional (the API server drops it on create when the status subresource is on). */
export type RootProperties<P extends TProperties> = { [K in keyof P]: K extends 'status' ? TOptional<P[K]> : P[K] };

/**
 * The object type of a schema-first kind: `apiVersion`, `kind` and
 * `metadata` (an {@link ObjectMeta}) plus whatever the schema's root
 * properties infer to (`spec`, `status`, ...).
 */
export type SchemaKindObject<ApiVersion extends string, Kind extends string, P extends TProperties> = {
  /** `group/version`. */
  apiVersion?: ApiVersion;
  /** The kind. */
  kind?: Kind;
  /** Standard object metadata. */
  metadata?: ObjectMeta;
} & Static<TObject<RootProperties<P>>>;

/** What {@link defineKind} needs to define a kind by its schema. */
export interface SchemaKindDefinition<Kind extends string, Group extends string, Version extends string, P extends TProperties> {
  /** The API group, a DNS subdomain such as `crd-demo.io`. */
  readonly group: Group;
  /** The version, such as `v1`. */
  readonly version: Version;
  /** The kind, such as `HardDisk`. */
  readonly kind: Kind;
  /** The plural resource name (`harddisks`): required, a CRD needs it. */
  readonly plural: string;
  /** `true` for a namespaced kind, `false` for a cluster-scoped one: required, a CRD needs it. */
  readonly namespaced: boolean;
  /** The kind of its lists. Default: `<Kind>List` (the API server's default for a CRD). */
  readonly listKind?: string;
  /**
   * The object's properties besides `apiVersion`, `kind` and `metadata`:
   * usually `spec` and `status`, each a TypeBox schema. A property wrapped in
   * `Type.Optional` is optional; `status` is always optional.
   */
  readonly schema: P;
  /** How the CRD presents and serves this version. Default: no extras. */
  readonly crd?: CustomResourceOptions;
}



