/**
 * The schema-change fuzzer's input (schema-changes.test.ts): generated
 * structural schemas for a custom resource's `spec` (types, bounds, enums,
 * patterns, defaults, nullable, required, maps, lists with list types,
 * subtrees that keep unknown fields), generated values that may or may not
 * fit them, and sequences that write objects, change the CRD's schema under
 * them, and read them back. What the server does across a change (defaults
 * and pruning on read, ratcheting on update, the CRD's own validation of a
 * schema) is where hand-written cases are few.
 */
import fc from 'fast-check';
import { checkStructural } from '@kubeloop/scheme/schema';
import { checkDefaults } from '@kubeloop/scheme/validation';
import type { ResourceDescriptor } from '@kubeloop/scheme';

export type Json = Record<string, unknown>;

/** Property names a schema declares; values use these and one it never declares. */
const PROPS = ['a', 'b', 'c', 'd'] as const;
const VALUE_KEYS = ['a', 'b', 'c', 'd', 'e'] as const;

const maybe = <T>(arb: fc.Arbitrary<T>, freq = 3): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined, freq });
/** An object without its undefined members. */
const defined = (o: Record<string, unknown>): Json => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const STRINGS = ['', 'x', 'abc', 'ABC', 'x y', 'abcdef'] as const;
const INTEGERS = [-1, 0, 1, 3, 7, 10] as const;
const NUMBERS = [-1.5, 0, 0.5, 1.5, 3, 10] as const;

const stringSchema: fc.Arbitrary<Json> = fc
  .record({
    maxLength: maybe(fc.integer({ min: 0, max: 4 })),
    minLength: maybe(fc.integer({ min: 1, max: 3 })),
    enum: maybe(fc.subarray([...STRINGS], { minLength: 1, maxLength: 3 }), 4),
    pattern: maybe(fc.constantFrom('^[a-z]+$', '^x', 'b'), 4),
    format: maybe(fc.constantFrom('date', 'byte', 'int-or-string-not-a-format'), 6),
    default: maybe(fc.constantFrom<unknown>(...STRINGS, 3), 6),
    nullable: maybe(fc.boolean(), 4),
  })
  .map((s) => defined({ type: 'string', ...s }));
const integerSchema: fc.Arbitrary<Json> = fc
  .record({
    minimum: maybe(fc.constantFrom(-1, 0, 1)),
    maximum: maybe(fc.constantFrom(0, 3, 5)),
    exclusiveMinimum: maybe(fc.boolean(), 4),
    exclusiveMaximum: maybe(fc.boolean(), 4),
    multipleOf: maybe(fc.constantFrom(2, 3), 4),
    enum: maybe(fc.subarray([...INTEGERS], { minLength: 1, maxLength: 3 }), 5),
    default: maybe(fc.constantFrom<unknown>(...INTEGERS, 'x', 1.5), 6),
    nullable: maybe(fc.boolean(), 4),
  })
  .map((s) => defined({ type: 'integer', ...s }));
/** Whole and fractional bounds: the server cuts a fractional one to an integer for a whole value. */
const numberSchema: fc.Arbitrary<Json> = fc
  .record({
    minimum: maybe(fc.constantFrom(-1, 0, 0.5)),
    maximum: maybe(fc.constantFrom(1, 3.5)),
    multipleOf: maybe(fc.constantFrom(0.5, 2, 3), 4),
    default: maybe(fc.constantFrom<unknown>(...NUMBERS), 6),
    nullable: maybe(fc.boolean(), 4),
  })
  .map((s) => defined({ type: 'number', ...s }));
const booleanSchema: fc.Arbitrary<Json> = fc
  .record({ default: maybe(fc.constantFrom<unknown>(true, false, 'yes'), 6), nullable: maybe(fc.boolean(), 4) })
  .map((s) => defined({ type: 'boolean', ...s }));
const intOrString: fc.Arbitrary<Json> = fc
  .record({ default: maybe(fc.constantFrom<unknown>(1, 'x'), 6), maxLength: maybe(fc.constant(2), 5), minimum: maybe(fc.constant(0), 5) })
  .map((s) => defined({ 'x-kubernetes-int-or-string': true, ...s }));
const scalarSchema = fc.oneof(stringSchema, integerSchema, numberSchema, booleanSchema, intOrString);

const arraySchema = (items: fc.Arbitrary<Json>): fc.Arbitrary<Json> =>
  fc
    .record({
      items,
      maxItems: maybe(fc.integer({ min: 0, max: 2 })),
      minItems: maybe(fc.integer({ min: 1, max: 2 }), 4),
      listType: maybe(fc.constantFrom('set', 'atomic'), 2),
      default: maybe(fc.constantFrom<unknown>([], ['x'], [1, 2], [1, 1]), 8),
      nullable: maybe(fc.boolean(), 5),
    })
    .map(({ listType, ...s }) => defined({ type: 'array', ...s, ...(listType ? { 'x-kubernetes-list-type': listType } : {}) }));

/** A schema of depth `depth`: scalars at the bottom, objects, maps and lists above. */
function fieldSchema(depth: number): fc.Arbitrary<Json> {
  if (depth === 0) return scalarSchema;
  const inner = fieldSchema(depth - 1);
  return fc.oneof(
    { weight: 4, arbitrary: scalarSchema },
    { weight: 1, arbitrary: arraySchema(fc.oneof(stringSchema, integerSchema)) },
    { weight: 1, arbitrary: objectSchema(inner) },
    {
      weight: 1,
      arbitrary: fc
        .record({ additionalProperties: inner, maxProperties: maybe(fc.constantFrom(1, 2), 3), default: maybe(fc.constantFrom<unknown>({}, { k: 'x' }), 8) })
        .map((s) => defined({ type: 'object', ...s })),
    },
    {
      weight: 1,
      arbitrary: fc
        .record({ properties: maybe(fc.dictionary(fc.constantFrom(...PROPS), scalarSchema, { maxKeys: 1 }), 2) })
        .map((s) => defined({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true, ...s })),
    },
  );
}

/** An object schema over PROPS: properties of `inner`, some required, maybe a default. */
function objectSchema(inner: fc.Arbitrary<Json>): fc.Arbitrary<Json> {
  return fc
    .record({ properties: fc.dictionary(fc.constantFrom(...PROPS), inner, { minKeys: 1, maxKeys: 3 }), required: fc.subarray([...PROPS], { maxLength: 2 }), default: maybe(fc.constantFrom<unknown>({}, { a: 'x' }), 8), nullable: maybe(fc.boolean(), 5) })
    .map(({ required, ...s }) => defined({ type: 'object', ...s, ...(required.length > 0 ? { required: required.filter((r) => r in s.properties) } : {}) }))
    .map((s) => (Array.isArray(s['required']) && (s['required'] as unknown[]).length === 0 ? { ...s, required: undefined } : s))
    .map((s) => defined(s));
}

/** The schema node at a `checkDefaults` path (`...properties[spec].properties[a].items.default`), below `spec`. */
function nodeAt(spec: Json, path: string): Json | undefined {
  const rest = path.replace(/^.*?properties\[spec\]/, '').replace(/\.default$/, '');
  let node: unknown = spec;
  for (const part of rest.match(/properties\[[^\]]+\]|items|additionalProperties/g) ?? []) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = part === 'items' || part === 'additionalProperties' ? (node as Json)[part] : ((node as Json)['properties'] as Json | undefined)?.[part.slice(11, -1)];
  }
  return typeof node === 'object' && node !== null ? (node as Json) : undefined;
}

/**
 * The schema with every default `@kubeloop/scheme`'s checks refuse taken out
 * (and not structural ones kept whole): most sequences then run on a CRD the
 * server takes. Used to pick inputs only: the server's answer is what judges.
 */
export function withoutRefusedDefaults(spec: Json): Json {
  const copy = structuredClone(spec);
  const schema = { type: 'object', properties: { spec: copy } };
  if (checkStructural(schema).length > 0) return spec;
  const kind = { group: 'g', version: 'v1', kind: 'Thing', plural: 'things', namespaced: true, apiVersion: 'g/v1', schema: { openAPIV3Schema: schema, crd: {} } } as unknown as ResourceDescriptor;
  for (let round = 0; round < 10; round++) {
    const problems = checkDefaults(kind);
    if (problems.length === 0) break;
    for (const p of problems) {
      const node = p.path.endsWith('properties[spec].default') ? copy : nodeAt(copy, p.path);
      if (node) delete node['default'];
    }
  }
  return copy;
}

/**
 * The schema of a resource's `spec`: mostly with the defaults the server
 * would refuse taken out, now and then as generated (refused defaults,
 * lists of nullable items), now and then one that is not structural.
 */
export const specSchema: fc.Arbitrary<Json> = fc.oneof(
  { weight: 9, arbitrary: objectSchema(fieldSchema(1)).map(withoutRefusedDefaults) },
  { weight: 3, arbitrary: objectSchema(fieldSchema(1)) },
  { weight: 1, arbitrary: fc.constant<Json>({ type: 'object', properties: { a: {} } }) },
);

/** A value anywhere in a spec: scalars of every JSON type, lists and objects over the property names. */
export const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom<unknown>(...STRINGS, ...INTEGERS, ...NUMBERS, true, false, null, 'k'),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...VALUE_KEYS, 'k'), tie('v'), { maxKeys: 3 }),
  ),
})).v;

/** A spec: an object over the value keys (what a schema declares, and `e`, which none does). */
export const specValue: fc.Arbitrary<Json> = fc.dictionary(fc.constantFrom(...VALUE_KEYS), value, { maxKeys: 4 });

const NAMES = ['a', 'b'] as const;
const MANAGERS = ['alpha', 'beta'] as const;

/** A step of a schema-change sequence: data only, so fast-check can print and shrink it. */
export type SchemaStep =
  | { readonly op: 'schema'; readonly spec: Json }
  /** The CRD deleted (its objects with it) and, once gone, created again with this schema. */
  | { readonly op: 'recreate'; readonly spec: Json }
  | { readonly op: 'create'; readonly name: string; readonly spec: Json | undefined; readonly dryRun: boolean }
  | { readonly op: 'patch'; readonly name: string; readonly body: Json }
  | { readonly op: 'update'; readonly name: string; readonly spec: Json }
  | { readonly op: 'apply'; readonly name: string; readonly manager: string; readonly force: boolean; readonly spec: Json }
  | { readonly op: 'get'; readonly name: string }
  | { readonly op: 'list' };

const name = fc.constantFrom(...NAMES);
export const schemaStep: fc.Arbitrary<SchemaStep> = fc.oneof(
  { weight: 2, arbitrary: specSchema.map((spec): SchemaStep => ({ op: 'schema', spec })) },
  { weight: 1, arbitrary: specSchema.map((spec): SchemaStep => ({ op: 'recreate', spec })) },
  { weight: 3, arbitrary: fc.record({ name, spec: maybe(specValue, 6), dryRun: fc.boolean() }).map((s): SchemaStep => ({ op: 'create', ...s })) },
  {
    weight: 3,
    arbitrary: fc
      .record({ name, body: fc.oneof(specValue.map((spec): Json => ({ spec })), fc.constant<Json>({ metadata: { labels: { touched: 'yes' } } }), fc.dictionary(fc.constantFrom(...VALUE_KEYS), fc.constant(null), { minKeys: 1, maxKeys: 2 }).map((spec): Json => ({ spec }))) })
      .map((s): SchemaStep => ({ op: 'patch', ...s })),
  },
  { weight: 2, arbitrary: fc.record({ name, spec: specValue }).map((s): SchemaStep => ({ op: 'update', ...s })) },
  { weight: 2, arbitrary: fc.record({ name, manager: fc.constantFrom(...MANAGERS), force: fc.boolean(), spec: specValue }).map((s): SchemaStep => ({ op: 'apply', ...s })) },
  { weight: 2, arbitrary: name.map((n): SchemaStep => ({ op: 'get', name: n })) },
  { weight: 1, arbitrary: fc.constant<SchemaStep>({ op: 'list' }) },
);

/**
 * A sequence: a first schema, objects written under it, then steps that
 * change the schema between writes and reads.
 */
export const schemaSequence: fc.Arbitrary<{ first: Json; steps: SchemaStep[] }> = fc.record({
  first: specSchema,
  steps: fc
    .tuple(fc.array(fc.record({ name, spec: specValue }).map((s): SchemaStep => ({ op: 'create', ...s, dryRun: false })), { minLength: 1, maxLength: 2 }), fc.array(schemaStep, { minLength: 3, maxLength: 10 }))
    .map(([creates, rest]) => [...creates, ...rest]),
});

/** The CRD for `group`, its `spec` of `schema`, marked with `marker` (a top-level enum the runner probes to see the schema in force). */
export function crdFor(group: string, schema: Json, marker: string, resourceVersion?: string): Json {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `things.${group}`, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: schema, marker: { type: 'string', enum: [marker] } } } } }],
    },
  };
}
