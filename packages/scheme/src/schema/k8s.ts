/**
 * Kubernetes' extensions to OpenAPI v3 as TypeBox builders: each returns a
 * schema whose JSON is what a CRD needs and whose static type is what the
 * API server stores. Use them next to TypeBox's own `Type.*` builders.
 */
import { Type } from 'typebox';
import type { Static, TArray, TArrayOptions, TObject, TProperties, TSchema, TSchemaOptions, TStringOptions, TUnsafe } from 'typebox';
import type { ValidationRule } from '../kind-schema.js';
import type { ObjectMeta } from '../wire.js';

/** Options every builder here accepts: any JSON Schema keyword (`description`, `default`, ...). */
export type SchemaOptions = TSchemaOptions;

/**
 * A value that is an integer or a string (`x-kubernetes-int-or-string`), as
 * ports and `maxUnavailable` are.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ port: k8s.IntOrString({ default: 8080 }) }); // port: number | string
 * ```
 */
export function IntOrString(options: SchemaOptions = {}): TUnsafe<number | string> {
  return Type.Unsafe<number | string>({ ...options, 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] });
}

/**
 * A 64-bit integer (`type: integer, format: int64`), typed as the client
 * reads it: a `number` while it is a safe integer (within ±(2^53 - 1)), a
 * `bigint` beyond, so a value such as 9007199254740993 is never rounded.
 * Write either; a `bigint` goes on the wire as a plain JSON integer. The
 * API server keeps every `type: integer` field as int64: declare a field
 * with this builder when its values may pass 2^53.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ bytes: k8s.Int64({ minimum: 0 }) }); // bytes: number | bigint
 * ```
 */
export function Int64(options: SchemaOptions = {}): TUnsafe<number | bigint> {
  return Type.Unsafe<number | bigint>({ ...options, type: 'integer', format: 'int64' });
}

/** The text form of a Kubernetes quantity: a decimal number with an optional binary (`Ki`…`Ei`) or decimal (`n`…`E`) suffix or an exponent. */
export const QUANTITY_PATTERN = '^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+))?$';

/**
 * A resource quantity (`10Gi`, `500m`, `2`): int-or-string, strings checked
 * against {@link QUANTITY_PATTERN}.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ capacity: k8s.Quantity() }); // capacity: number | string
 * ```
 */
export function Quantity(options: SchemaOptions = {}): TUnsafe<number | string> {
  return Type.Unsafe<number | string>({ ...options, 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }], pattern: QUANTITY_PATTERN });
}

/**
 * A string or number from a fixed set, as a CRD wants it (`type` and
 * `enum`). TypeBox's `Type.Enum` and unions of `Type.Literal` are turned
 * into the same form when the CRD is generated; this is the direct way.
 *
 * @example
 * ```ts
 * const Phase = k8s.Enum(['Pending', 'Bound', 'Invalid']); // 'Pending' | 'Bound' | 'Invalid'
 * ```
 */
export function Enum<const V extends readonly string[] | readonly number[]>(values: V, options: SchemaOptions = {}): TUnsafe<V[number]> {
  const type = values.every((v) => typeof v === 'string') ? 'string' : values.every((v) => Number.isInteger(v)) ? 'integer' : 'number';
  return Type.Unsafe<V[number]>({ ...options, type, enum: [...values] });
}

/**
 * `null` is a value the API server keeps (`nullable: true`); without it a
 * `null` is dropped before validation.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ note: Type.Optional(k8s.Nullable(Type.String())) }); // note?: string | null
 * ```
 */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  return Type.Unsafe<Static<T> | null>({ ...schema, nullable: true });
}

/**
 * An object whose keys are free and whose values all have one schema
 * (`additionalProperties`), like labels.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ labels: Type.Optional(k8s.Map(Type.String())) }); // labels?: Record<string, string>
 * ```
 */
export function Map<V extends TSchema>(values: V, options: SchemaOptions & { readonly mapType?: 'granular' | 'atomic' } = {}): TUnsafe<Record<string, Static<V>>> {
  const { mapType, ...rest } = options;
  return Type.Unsafe<Record<string, Static<V>>>({ ...rest, type: 'object', additionalProperties: values, ...(mapType ? { 'x-kubernetes-map-type': mapType } : {}) });
}

/**
 * An object that keeps fields its schema does not name
 * (`x-kubernetes-preserve-unknown-fields: true`); the named ones are still
 * checked. Unknown fields are otherwise pruned by the API server.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ values: k8s.PreserveUnknownFields({ replicas: Type.Optional(Type.Integer()) }) });
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- TypeBox's properties type of an object without properties
export function PreserveUnknownFields<P extends TProperties = {}>(properties?: P, options: SchemaOptions = {}): TUnsafe<Static<TObject<P>> & Record<string, unknown>> {
  const base = properties === undefined ? { type: 'object' } : Type.Object(properties);
  return Type.Unsafe<Static<TObject<P>> & Record<string, unknown>>({ ...base, ...options, 'x-kubernetes-preserve-unknown-fields': true });
}

/**
 * Any JSON value, kept as it is (`x-kubernetes-preserve-unknown-fields`
 * with no type), as Go's `apiextensionsv1.JSON` is.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ config: Type.Optional(k8s.Any()) }); // config?: unknown
 * ```
 */
export function Any(options: SchemaOptions = {}): TUnsafe<unknown> {
  return Type.Unsafe<unknown>({ ...options, 'x-kubernetes-preserve-unknown-fields': true });
}

/** An object embedded in another: it has its own `apiVersion`, `kind` and `metadata`. */
export interface EmbeddedObject {
  apiVersion: string;
  kind: string;
  metadata?: ObjectMeta;
  [field: string]: unknown;
}

/**
 * A whole Kubernetes object inside this one (`x-kubernetes-embedded-resource`),
 * as a template: the API server requires its `apiVersion` and `kind` and
 * checks its `metadata`. Without properties, all its fields are kept.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ template: k8s.EmbeddedResource() }); // template: { apiVersion: string; kind: string; metadata?: ObjectMeta; ... }
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- TypeBox's properties type of an object without properties
export function EmbeddedResource<P extends TProperties = {}>(properties?: P, options: SchemaOptions = {}): TUnsafe<EmbeddedObject & Static<TObject<P>>> {
  const base = properties === undefined ? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } : Type.Object(properties);
  return Type.Unsafe<EmbeddedObject & Static<TObject<P>>>({ ...base, ...options, 'x-kubernetes-embedded-resource': true });
}

/**
 * A list of unique scalars (`x-kubernetes-list-type: set`): duplicates are
 * rejected, and server-side apply merges items from several owners.
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ tags: Type.Optional(k8s.ListSet(Type.String())) }); // tags?: string[]
 * ```
 */
export function ListSet<T extends TSchema>(items: T, options: TArrayOptions = {}): TArray<T> {
  return Type.Array(items, { ...options, 'x-kubernetes-list-type': 'set' });
}

/**
 * A list of objects keyed by one or more of their fields
 * (`x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys`): two
 * items with the same keys are rejected, and server-side apply merges items
 * by key. Key fields must be required or defaulted scalars.
 *
 * @example
 * ```ts
 * const Port = Type.Object({ name: Type.String(), port: Type.Integer() });
 * const Spec = Type.Object({ ports: k8s.ListMap(Port, ['name']) });
 * ```
 */
export function ListMap<T extends TObject, const K extends readonly (keyof Static<T> & string)[]>(items: T, keys: K, options: TArrayOptions = {}): TArray<T> {
  return Type.Array(items, { ...options, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': [...keys] });
}

/**
 * A list replaced as a whole by server-side apply (`x-kubernetes-list-type: atomic`).
 *
 * @example
 * ```ts
 * const Spec = Type.Object({ command: k8s.AtomicList(Type.String()) });
 * ```
 */
export function AtomicList<T extends TSchema>(items: T, options: TArrayOptions = {}): TArray<T> {
  return Type.Array(items, { ...options, 'x-kubernetes-list-type': 'atomic' });
}

/**
 * CEL validation rules as schema options (`x-kubernetes-validations`), to
 * spread into the options of the schema they check. The API server
 * evaluates them; local validation does not (see docs/schema.md).
 *
 * @example
 * ```ts
 * const Range = Type.Object({ min: Type.Integer(), max: Type.Integer() }, k8s.rules({ rule: 'self.min <= self.max', message: 'min must not exceed max' }));
 * ```
 */
export function rules(...validations: ValidationRule[]): { 'x-kubernetes-validations': ValidationRule[] } {
  return { 'x-kubernetes-validations': validations.map((v) => ({ ...v })) };
}

/**
 * An RFC 3339 timestamp (`format: date-time`), a string on the wire.
 *
 * @example
 * ```ts
 * const Status = Type.Object({ lastBackup: Type.Optional(k8s.DateTime()) });
 * ```
 */
export function DateTime(options: TStringOptions = {}): TUnsafe<string> {
  return Type.Unsafe<string>({ ...options, type: 'string', format: 'date-time' });
}

/** The schema of one status condition, as `setStatusCondition` of `@kubeloop/manager` writes it. */
export function Condition(): TObject<{
  type: TUnsafe<string>;
  status: TUnsafe<'True' | 'False' | 'Unknown'>;
  reason: TUnsafe<string>;
  message: TUnsafe<string>;
  observedGeneration: ReturnType<typeof optionalInteger>;
  lastTransitionTime: ReturnType<typeof optionalDateTime>;
}> {
  return Type.Object({
    type: Type.Unsafe<string>({ type: 'string', description: 'The condition type, such as Ready.' }),
    status: Enum(['True', 'False', 'Unknown'], { description: 'Whether the condition holds.' }),
    reason: Type.Unsafe<string>({ type: 'string', description: 'A CamelCase reason for the last transition.' }),
    message: Type.Unsafe<string>({ type: 'string', description: 'A human-readable explanation.' }),
    observedGeneration: optionalInteger(),
    lastTransitionTime: optionalDateTime(),
  });
}

function optionalInteger() {
  return Type.Optional(Type.Integer({ minimum: 0, description: 'The metadata.generation the condition was set for.' }));
}

function optionalDateTime() {
  return Type.Optional(DateTime({ description: 'When the status last changed.' }));
}

/**
 * A list of status conditions keyed by `type` (a list map), the shape of
 * `status.conditions` that `setStatusCondition` maintains.
 *
 * @example
 * ```ts
 * const Status = Type.Object({ conditions: Type.Optional(k8s.Conditions()) });
 * ```
 */
export function Conditions(options: TArrayOptions = {}): TArray<ReturnType<typeof Condition>> {
  return ListMap(Condition(), ['type'], options);
}
