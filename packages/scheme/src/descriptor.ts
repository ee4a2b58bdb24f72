/**
 * Resource descriptors: one frozen value per kind that names it (group,
 * version, kind), says what is known about how it is served (plural, scope,
 * list kind), and carries the kind's TypeScript type so that calls taking the
 * descriptor are typed: `client.get(Pod, { namespace, name })` resolves to a
 * `Pod`.
 */
import { SchemeError } from './errors.js';
import type { GroupVersionKind } from './group-version.js';
import { formatGroupVersionKind } from './group-version.js';
import { buildKindSchema, checkKindSchema, sameKindSchema } from './internal/kind-schema.js';
import { groupProblem, kindProblem, resourceProblem, show, versionProblem } from './internal/names.js';
import type { ApiVersionOf, KindSchema, SchemaKindDefinition, SchemaKindObject } from './kind-schema.js';
import type { KubeObject } from './wire.js';
import type { TProperties } from 'typebox';

/** Type-only key of the phantom property that carries a descriptor's object type; never present at run time. */
declare const objectType: unique symbol;

/**
 * A kind and what is known about how the API server serves it.
 *
 * `T` is the type of the kind's objects. It exists only for the type checker
 * (no value holds it), so that functions taking a descriptor infer their
 * result type from it. A descriptor is also a {@link GroupVersionKind}.
 *
 * `plural`, `namespaced` and `listKind` are absent when unknown; a REST mapper
 * fills the gaps from discovery. Descriptors are frozen.
 *
 * @example
 * ```ts
 * import { Pod } from '@kubeloop/scheme';
 * import type { ResourceDescriptor } from '@kubeloop/scheme';
 *
 * declare function get<T extends KubeObject>(kind: ResourceDescriptor<T>, key: { namespace: string; name: string }): Promise<T>;
 * const pod = await get(Pod, { namespace: 'default', name: 'web' }); // pod: Pod
 * ```
 */
export interface ResourceDescriptor<T extends KubeObject = KubeObject> extends GroupVersionKind {
  /** The kind: a literal type when `T` has a literal `kind` (`Pod.kind` is `'Pod'`). */
  readonly kind: NonNullable<T['kind']>;
  /** `group/version`, or the version alone for the core group: the `apiVersion` of the kind's objects. */
  readonly apiVersion: string;
  /** The resource name in REST paths (`pods`, `endpoints`), when known. Never guessed from the kind. */
  readonly plural?: string;
  /** `true` for namespaced kinds, `false` for cluster-scoped ones, absent when unknown. */
  readonly namespaced?: boolean;
  /** The kind of the kind's lists (`PodList`), when it has one. */
  readonly listKind?: string;
  /**
   * The schema of the kind's objects and its CRD options, for kinds defined
   * by a schema (`defineKind({ ..., schema })`); absent for hand-typed and
   * built-in kinds. Plain frozen JSON, so it survives two copies of this
   * package (the `kubeloop` CLI reads it from a project's exported kinds).
   */
  readonly schema?: KindSchema;
  /** Phantom: the object type. Type-level only. */
  readonly [objectType]?: T;
}

/** The object type a descriptor carries: `ObjectOf<typeof Pod>` is `Pod`. */
export type ObjectOf<D> = D extends ResourceDescriptor<infer T> ? T : never;

/** What {@link defineKind} needs to know about a kind. */
export interface KindDefinition<Kind extends string = string> {
  /** The API group: `''` for the core group, else a DNS subdomain such as `crd-demo.io`. */
  readonly group: string;
  /** The version, such as `v1`. */
  readonly version: string;
  /** The kind, such as `HardDisk`. When the object type has a literal `kind`, this must match it. */
  readonly kind: Kind;
  /** The plural resource name (a CRD's `spec.names.plural`). Omit when unknown; it is never guessed. */
  readonly plural?: string;
  /** `true` for a namespaced kind (`scope: Namespaced`), `false` for a cluster-scoped one. Omit when unknown. */
  readonly namespaced?: boolean;
  /** The kind of its lists (a CRD's `spec.names.listKind`, by default `<Kind>List`). Omit when it has none. */
  readonly listKind?: string;
}

/**
 * Declares a kind and returns its frozen descriptor. Two forms:
 *
 * - **Schema-first**: give `schema`, the object's root properties as TypeBox
 *   schemas (`spec`, `status`, ...). The object type is inferred from them,
 *   the descriptor carries the schema, and `kubeloop generate crds` writes
 *   the CRD from it. Builders for Kubernetes' extensions (int-or-string,
 *   list types, CEL rules, embedded resources, ...) are in
 *   `@kubeloop/scheme/schema`; local validation is in
 *   `@kubeloop/scheme/validation`. `plural` and `namespaced` are required;
 *   `listKind` defaults to `<Kind>List`.
 * - **Hand-typed**: give the object type `T` explicitly and no schema.
 *
 * Every name is checked against the API's naming rules.
 *
 * @throws {@link SchemeError} `InvalidDescriptor` when a field is malformed,
 * the list kind equals the kind, or the schema is not JSON.
 *
 * @example
 * ```ts
 * import { defineKind } from '@kubeloop/scheme';
 * import { Type, k8s } from '@kubeloop/scheme/schema';
 * import type { ObjectOf } from '@kubeloop/scheme';
 *
 * export const HardDisk = defineKind({
 *   group: 'crd-demo.io', version: 'v1', kind: 'HardDisk', plural: 'harddisks', namespaced: true,
 *   schema: {
 *     spec: Type.Object({ sizeGiB: Type.Integer({ minimum: 1 }), storageClass: Type.Optional(Type.String()) }),
 *     status: Type.Object({ phase: Type.Optional(k8s.Enum(['Pending', 'Bound'])) }),
 *   },
 *   crd: { shortNames: ['hd'], subresources: { status: true } },
 * });
 * export type HardDisk = ObjectOf<typeof HardDisk>; // { spec: { sizeGiB: number; storageClass?: string }; status?: ...; metadata?: ObjectMeta; ... }
 * ```
 *
 * @example
 * ```ts
 * import { defineKind } from '@kubeloop/scheme';
 * import type { KubeObject } from '@kubeloop/scheme';
 *
 * export interface HardDisk extends KubeObject {
 *   apiVersion?: 'crd-demo.io/v1';
 *   kind?: 'HardDisk';
 *   spec: { sizeGiB: number; storageClass?: string };
 *   status?: { phase?: 'Pending' | 'Bound' };
 * }
 *
 * export const HardDisk = defineKind<HardDisk>({
 *   group: 'crd-demo.io',
 *   version: 'v1',
 *   kind: 'HardDisk',
 *   plural: 'harddisks',
 *   namespaced: true,
 *   listKind: 'HardDiskList',
 * });
 * ```
 */
export function defineKind<Kind extends string, Group extends string, Version extends string, P extends TProperties>(
  definition: SchemaKindDefinition<Kind, Group, Version, P>,
): ResourceDescriptor<SchemaKindObject<ApiVersionOf<Group, Version>, Kind, P>>;
export function defineKind<T extends KubeObject = KubeObject>(definition: KindDefinition<NonNullable<T['kind']>>): ResourceDescriptor<T>;
export function defineKind(definition: KindDefinition | SchemaKindDefinition<string, string, string, TProperties>): ResourceDescriptor {
  // apiVersion is derived, so `defineKind({ ...HardDisk, version: 'v2' })` declares the v2 kind.
  const { group, version, kind, plural, namespaced, listKind } = definition;
  if (!('schema' in definition) || definition.schema === undefined) return toDescriptor({ group, version, kind, plural, namespaced, listKind });
  const label = `${String(kind)}.${String(version)}.${String(group)}`;
  const schema = buildKindSchema(definition.schema, definition.crd, label);
  if (typeof plural !== 'string') throw new SchemeError('InvalidDescriptor', `invalid resource descriptor ${label}: a kind defined by a schema needs its plural`, { input: label });
  if (typeof namespaced !== 'boolean') throw new SchemeError('InvalidDescriptor', `invalid resource descriptor ${label}: a kind defined by a schema needs namespaced: true or false`, { input: label });
  return toDescriptor({ group, version, kind, plural, namespaced, listKind: listKind ?? `${String(kind)}List`, schema });
}

/**
 * Checks any value claiming to be a descriptor and returns a frozen
 * descriptor with exactly the known fields: the value itself when it is
 * already such a descriptor.
 */
export function toDescriptor<T extends KubeObject>(value: unknown): ResourceDescriptor<T> {
  if (typeof value !== 'object' || value === null) {
    throw new SchemeError('InvalidDescriptor', `expected a resource descriptor, got ${show(value)}`, { input: show(value) });
  }
  const d = value as Partial<Record<keyof KindDefinition | 'apiVersion' | 'schema', unknown>>;
  const label = [d.kind, d.version, d.group].map((part) => (typeof part === 'string' ? part : show(part))).join('.');
  const fail = (problem: string): SchemeError => new SchemeError('InvalidDescriptor', `invalid resource descriptor ${label}: ${problem}`, { input: label });

  if (typeof d.group !== 'string') throw fail(`group must be a string, got ${show(d.group)}`);
  if (typeof d.version !== 'string') throw fail(`version must be a string, got ${show(d.version)}`);
  if (typeof d.kind !== 'string') throw fail(`kind must be a string, got ${show(d.kind)}`);
  const nameProblem = groupProblem(d.group) ?? versionProblem(d.version) ?? kindProblem(d.kind);
  if (nameProblem !== undefined) throw fail(nameProblem);
  if (d.plural !== undefined) {
    if (typeof d.plural !== 'string') throw fail(`plural must be a string, got ${show(d.plural)}`);
    const problem = resourceProblem(d.plural);
    if (problem !== undefined) throw fail(`plural: ${problem}`);
  }
  if (d.namespaced !== undefined && typeof d.namespaced !== 'boolean') throw fail(`namespaced must be true or false, got ${show(d.namespaced)}`);
  if (d.listKind !== undefined) {
    if (typeof d.listKind !== 'string') throw fail(`listKind must be a string, got ${show(d.listKind)}`);
    const problem = kindProblem(d.listKind);
    if (problem !== undefined) throw fail(`listKind: ${problem}`);
    if (d.listKind === d.kind) throw fail(`listKind must differ from the kind "${d.kind}"`);
  }
  let schema: KindSchema | undefined;
  if (d.schema !== undefined) {
    const problem = checkKindSchema(d.schema);
    if (typeof problem === 'string') throw fail(`schema: ${problem}`);
    schema = problem;
  }
  const apiVersion = d.group === '' ? d.version : `${d.group}/${d.version}`;
  if (d.apiVersion !== undefined && d.apiVersion !== apiVersion) {
    throw fail(`apiVersion ${show(d.apiVersion)} does not match group "${d.group}" and version "${d.version}" (expected "${apiVersion}")`);
  }

  if (Object.isFrozen(value) && d.apiVersion === apiVersion && sameShape(value) && schema === d.schema) return value as ResourceDescriptor<T>;
  const descriptor: { -readonly [K in keyof ResourceDescriptor]: ResourceDescriptor[K] } = {
    group: d.group,
    version: d.version,
    kind: d.kind,
    apiVersion,
  };
  if (d.plural !== undefined) descriptor.plural = d.plural;
  if (d.namespaced !== undefined) descriptor.namespaced = d.namespaced;
  if (d.listKind !== undefined) descriptor.listKind = d.listKind;
  if (schema !== undefined) descriptor.schema = schema;
  return Object.freeze(descriptor) as ResourceDescriptor<T>;
}

const KNOWN_FIELDS = new Set(['group', 'version', 'kind', 'apiVersion', 'plural', 'namespaced', 'listKind', 'schema']);

/** Only the known fields, all plain data properties (a getter could change its answer later). */
function sameShape(value: object): boolean {
  return Reflect.ownKeys(value).every(
    (key) => typeof key === 'string' && KNOWN_FIELDS.has(key) && Object.getOwnPropertyDescriptor(value, key)?.get === undefined,
  );
}

/**
 * True when two descriptors describe the same thing: same group, version,
 * kind, plural, scope, list kind and schema (compared as JSON). The object
 * type is not compared (it does not exist at run time).
 *
 * @example
 * ```ts
 * sameDescriptor(Pod, defineKind<Pod>({ ...Pod })); // true
 * ```
 */
export function sameDescriptor(a: ResourceDescriptor, b: ResourceDescriptor): boolean {
  return (
    a === b ||
    (a.group === b.group &&
      a.version === b.version &&
      a.kind === b.kind &&
      a.plural === b.plural &&
      a.namespaced === b.namespaced &&
      a.listKind === b.listKind &&
      sameKindSchema(a.schema, b.schema))
  );
}

/**
 * One line naming a descriptor and what it says, for messages:
 * `HardDisk.v1.crd-demo.io (plural harddisks, namespaced, list HardDiskList)`.
 *
 * @example
 * ```ts
 * describeDescriptor(Pod); // 'Pod.v1 (plural pods, namespaced, list PodList)'
 * ```
 */
export function describeDescriptor(d: ResourceDescriptor): string {
  const scope = d.namespaced === undefined ? 'scope unknown' : d.namespaced ? 'namespaced' : 'cluster-scoped';
  return `${formatGroupVersionKind(d)} (plural ${d.plural ?? 'unknown'}, ${scope}, list ${d.listKind ?? 'none'})`;
}
