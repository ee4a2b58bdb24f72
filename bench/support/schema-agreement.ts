/**
 * Does local validation agree with kube-apiserver? Shared by the agreement
 * benchmark (bench/schema-agreement.ts, thousands of objects) and the
 * suite's fixed-seed test (packages/scheme/test/validation/agreement.test.ts).
 *
 * Objects are generated with fast-check from each kind's CRD schema: every
 * value is drawn valid most of the time and, now and then, broken in one of
 * the ways the schema forbids (wrong type, out of bounds, off-pattern, not in
 * the enum, a bad format, a duplicate list item, a missing required field, an
 * unknown field, a null). The generator does not decide validity: the local
 * validator and a server-side dry-run create each give their verdict.
 */
import fc from 'fast-check';
import { defineKind } from '@kubeloop/scheme';
import type { ResourceDescriptor } from '@kubeloop/scheme';
import { Type, crdSchemaOf, k8s } from '@kubeloop/scheme/schema';
import type { Validator } from '@kubeloop/scheme/validation';

type Json = Record<string, unknown>;

const GROUP = 'agreement.kubeloop.dev';

/** Scalars: strings with bounds and patterns, enums, numbers with every bound. */
export const Scalars = defineKind({
  group: GROUP, version: 'v1', kind: 'Scalars', plural: 'scalars', namespaced: true,
  schema: {
    spec: Type.Object({
      name: Type.String({ minLength: 2, maxLength: 12, pattern: '^[a-z][a-z0-9-]*$' }),
      note: Type.Optional(Type.String({ maxLength: 20 })),
      phase: Type.Optional(Type.Union([Type.Literal('Pending'), Type.Literal('Running'), Type.Literal('Done')])),
      replicas: Type.Integer({ minimum: 0, maximum: 50 }),
      step: Type.Optional(Type.Integer({ multipleOf: 5 })),
      ratio: Type.Optional(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 })),
      enabled: Type.Optional(Type.Boolean()),
      port: Type.Optional(k8s.IntOrString()),
      size: Type.Optional(k8s.Quantity()),
      mode: Type.Optional(Type.String({ default: 'auto', enum: ['auto', 'manual'] })),
      comment: Type.Optional(k8s.Nullable(Type.String())),
    }),
  },
});

/** Collections: list sets, list maps, maps, bounded arrays, nested objects with required fields. */
export const Collections = defineKind({
  group: GROUP, version: 'v1', kind: 'Collections', plural: 'collections', namespaced: true,
  schema: {
    spec: Type.Object({
      tags: Type.Optional(k8s.ListSet(Type.String({ maxLength: 8 }), { maxItems: 4 })),
      ports: Type.Optional(k8s.ListMap(Type.Object({ name: Type.String({ minLength: 1 }), port: Type.Integer({ minimum: 1, maximum: 65535 }), protocol: Type.Optional(Type.String({ default: 'TCP', enum: ['TCP', 'UDP'] })) }), ['name'])),
      labels: Type.Optional(k8s.Map(Type.String({ maxLength: 10 }), { maxProperties: 3 })),
      args: Type.Optional(k8s.AtomicList(Type.String(), { minItems: 1 })),
      owner: Type.Optional(Type.Object({ name: Type.String(), uid: Type.Optional(Type.String()) })),
      extra: Type.Optional(k8s.PreserveUnknownFields({ known: Type.Optional(Type.Integer()) })),
    }),
  },
});

/** Formats the server checks, embedded resources, and value-only junctors. */
export const Formats = defineKind({
  group: GROUP, version: 'v1', kind: 'Formats', plural: 'formats', namespaced: true,
  schema: {
    spec: Type.Object(
      {
        at: Type.Optional(k8s.DateTime()),
        day: Type.Optional(Type.String({ format: 'date' })),
        id: Type.Optional(Type.String({ format: 'uuid' })),
        ip: Type.Optional(Type.String({ format: 'ipv4' })),
        ip6: Type.Optional(Type.String({ format: 'ipv6' })),
        net: Type.Optional(Type.String({ format: 'cidr' })),
        data: Type.Optional(Type.String({ format: 'byte' })),
        count32: Type.Optional(Type.Integer({ format: 'int32' })),
        template: Type.Optional(k8s.EmbeddedResource()),
        a: Type.Optional(Type.String()),
        b: Type.Optional(Type.String()),
      },
      { anyOf: [{ required: ['a'] }, { required: ['b'] }] },
    ),
  },
});

/** CEL rules: server-only, so local validation cannot see these refusals. */
export const Rules = defineKind({
  group: GROUP, version: 'v1', kind: 'Rules', plural: 'rules', namespaced: true,
  schema: {
    spec: Type.Object(
      { min: Type.Integer({ minimum: 0, maximum: 20 }), max: Type.Integer({ minimum: 0, maximum: 20 }), name: Type.Optional(Type.String({ maxLength: 10 })) },
      k8s.rules({ rule: 'self.min <= self.max', message: 'min must not exceed max' }, { rule: "!has(self.name) || self.name != 'forbidden'", message: 'name must not be forbidden' }),
    ),
  },
});

/** Kinds whose every check is local: the suite asserts 100% agreement on them. */
export const LOCAL_KINDS: readonly ResourceDescriptor[] = [Scalars, Collections, Formats];
/** Every kind measured by the benchmark. */
export const ALL_KINDS: readonly ResourceDescriptor[] = [Scalars, Collections, Formats, Rules];

const STRING_FORMATS: Record<string, fc.Arbitrary<string>> = {
  'date-time': fc.tuple(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([y, mo, d, h, mi]) => `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}T${String(h).padStart(2, '0')}:${String(mi).padStart(2, '0')}:00Z`),
  date: fc.tuple(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 })).map(([y, mo, d]) => `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}`),
  uuid: fc.uuid(),
  ipv4: fc.ipV4(),
  ipv6: fc.ipV6(),
  cidr: fc.oneof(fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([ip, n]) => `${ip}/${n}`), fc.tuple(fc.ipV6(), fc.integer({ min: 0, max: 128 })).map(([ip, n]) => `${ip}/${n}`)),
  byte: fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b).toString('base64')),
};

/** Near misses for formats: the strings a validator is most likely to judge differently. */
const FORMAT_MISSES: Record<string, fc.Arbitrary<string>> = {
  'date-time': fc.constantFrom('2024-01-01', '2024-01-01T00:00:00', '2024-02-30T00:00:00Z', '2024-01-01T24:00:00Z', '2024-01-01t10:00:00z', '2024-01-01T10:00:00.5+01:00', '2024-01-01 10:00:00Z', '2024-01-01T10:00Z', '2024-13-01T00:00:00Z', '2023-02-29T00:00:00Z', '2024-02-29T00:00:00Z'),
  date: fc.constantFrom('2024-02-30', '2024-1-01', '2024-01-01T00:00:00Z', '0000-01-01', '2024-02-29', '2023-02-29', '24-01-01'),
  uuid: fc.constantFrom('123e4567-e89b-12d3-a456-42661417400', '123E4567-E89B-12D3-A456-426614174000', '123e4567e89b12d3a456426614174000', '{123e4567-e89b-12d3-a456-426614174000}', 'g23e4567-e89b-12d3-a456-426614174000'),
  ipv4: fc.constantFrom('1.2.3', '01.2.3.4', '256.1.1.1', '1.2.3.4.5', '::ffff:1.2.3.4', '1.2.3.4/8', ' 1.2.3.4'),
  ipv6: fc.constantFrom('::1', '1::2::3', 'fe80::1%eth0', '::ffff:1.2.3.4', '1:2:3:4:5:6:7:8:9', '12345::1', '1.2.3.4'),
  cidr: fc.constantFrom('10.0.0.0/33', '10.0.0.0', '::/129', '10.0.0.1/8', '10.0.0.0/08', 'fe80::/64'),
  byte: fc.constantFrom('aGVsbG8', 'aGVsbG8==', 'aGVs bG8=', 'aGVsbG8=', '====', 'a-_b'),
};

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value of the wrong JSON type for the schema. */
function wrongType(schema: Json): fc.Arbitrary<unknown> {
  const t = schema['type'];
  const candidates: fc.Arbitrary<unknown>[] = [fc.constant(true), fc.constant('text'), fc.constant(7), fc.constant(2.5), fc.constant([1]), fc.constant({ x: 1 }), fc.constant(null)];
  const fit = (v: unknown): boolean =>
    (t === 'string' && typeof v === 'string') ||
    (t === 'integer' && typeof v === 'number' && Number.isInteger(v)) ||
    (t === 'number' && typeof v === 'number') ||
    (t === 'boolean' && typeof v === 'boolean') ||
    (t === 'array' && Array.isArray(v)) ||
    (t === 'object' && isObject(v)) ||
    (schema['x-kubernetes-int-or-string'] === true && (typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v))));
  return fc.oneof(...candidates).filter((v) => !fit(v));
}

/** Values drawn from one (CRD-dialect) schema: valid with probability about 1 - 1/`invalidOneIn` per value. */
export function arbitraryFor(schema: Json, invalidOneIn = 20, depth = 0): fc.Arbitrary<unknown> {
  const valid = validFor(schema, invalidOneIn, depth);
  if (schema['x-kubernetes-preserve-unknown-fields'] === true && schema['type'] === undefined) return valid;
  const invalid = invalidFor(schema);
  return fc.oneof({ weight: invalidOneIn - 1, arbitrary: valid }, { weight: 1, arbitrary: invalid });
}

function validFor(schema: Json, invalidOneIn: number, depth: number): fc.Arbitrary<unknown> {
  if (Array.isArray(schema['enum'])) return fc.constantFrom(...(schema['enum'] as unknown[]));
  if (schema['x-kubernetes-int-or-string'] === true) {
    const pattern = typeof schema['pattern'] === 'string' ? new RegExp(schema['pattern']) : undefined;
    return fc.oneof(fc.integer({ min: -1000, max: 1000 }), pattern ? fc.stringMatching(pattern, { maxLength: 12 }) : fc.string({ maxLength: 6 }));
  }
  switch (schema['type']) {
    case 'string': {
      const format = typeof schema['format'] === 'string' ? STRING_FORMATS[schema['format']] : undefined;
      if (format) return format;
      const minLength = typeof schema['minLength'] === 'number' ? schema['minLength'] : 0;
      const maxLength = typeof schema['maxLength'] === 'number' ? schema['maxLength'] : 16;
      if (typeof schema['pattern'] === 'string') {
        return fc.stringMatching(new RegExp(schema['pattern']), { maxLength }).filter((s) => s.length >= minLength && s.length <= maxLength);
      }
      return fc.string({ minLength, maxLength, unit: 'grapheme-ascii' });
    }
    case 'integer': {
      const min = typeof schema['minimum'] === 'number' ? schema['minimum'] + (schema['exclusiveMinimum'] === true ? 1 : 0) : -100_000;
      const max = typeof schema['maximum'] === 'number' ? schema['maximum'] - (schema['exclusiveMaximum'] === true ? 1 : 0) : 100_000;
      const step = typeof schema['multipleOf'] === 'number' ? schema['multipleOf'] : 1;
      return fc.integer({ min: Math.ceil(min / step), max: Math.floor(max / step) }).map((n) => n * step);
    }
    case 'number': {
      const min = typeof schema['minimum'] === 'number' ? schema['minimum'] : -1e6;
      const max = typeof schema['maximum'] === 'number' ? schema['maximum'] : 1e6;
      return fc.double({ min, max, noNaN: true, noDefaultInfinity: true, minExcluded: schema['exclusiveMinimum'] === true, maxExcluded: schema['exclusiveMaximum'] === true }).filter((n) => !Object.is(n, -0));
    }
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const items = isObject(schema['items']) ? schema['items'] : {};
      const minLength = typeof schema['minItems'] === 'number' ? schema['minItems'] : 0;
      const maxLength = typeof schema['maxItems'] === 'number' ? schema['maxItems'] : 3;
      const listType = schema['x-kubernetes-list-type'];
      const item = arbitraryFor(items, invalidOneIn, depth + 1);
      if (listType === 'set') return fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) });
      if (listType === 'map') {
        const keys = (schema['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [];
        return fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(isObject(v) ? keys.map((k) => v[k]) : v) });
      }
      return fc.array(item, { minLength, maxLength });
    }
    case 'object':
    default: {
      if (schema['x-kubernetes-embedded-resource'] === true) {
        return fc.record({ apiVersion: fc.constantFrom('v1', 'apps/v1'), kind: fc.constantFrom('ConfigMap', 'Deployment'), metadata: fc.record({ name: fc.constantFrom('a', 'b-1') }), data: fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 2 }) }, { requiredKeys: ['apiVersion', 'kind'] });
      }
      const props = isObject(schema['properties']) ? schema['properties'] : undefined;
      if (props) {
        const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []);
        const record = fc.record(Object.fromEntries(Object.entries(props).map(([k, p]) => [k, arbitraryFor(p as Json, invalidOneIn, depth + 1)])), { requiredKeys: [...required] });
        return record;
      }
      if (isObject(schema['additionalProperties'])) {
        const min = typeof schema['minProperties'] === 'number' ? schema['minProperties'] : 0;
        const max = typeof schema['maxProperties'] === 'number' ? schema['maxProperties'] : 3;
        return fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/), arbitraryFor(schema['additionalProperties'], invalidOneIn, depth + 1), { minKeys: min, maxKeys: max });
      }
      return fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.oneof(fc.integer(), fc.string({ maxLength: 4 })), { maxKeys: 2 });
    }
  }
}

function invalidFor(schema: Json): fc.Arbitrary<unknown> {
  const options: fc.Arbitrary<unknown>[] = [wrongType(schema)];
  if (Array.isArray(schema['enum'])) options.push(fc.constantFrom('Other', 'pending', ''));
  if (schema['type'] === 'string') {
    if (typeof schema['maxLength'] === 'number') options.push(fc.string({ minLength: schema['maxLength'] + 1, maxLength: schema['maxLength'] + 4, unit: 'grapheme-ascii' }));
    if (typeof schema['minLength'] === 'number' && schema['minLength'] > 0) options.push(fc.string({ maxLength: schema['minLength'] - 1 }));
    if (typeof schema['pattern'] === 'string') options.push(fc.constantFrom('Upper', '-lead', 'sp ace', '9digit'));
    if (typeof schema['format'] === 'string' && FORMAT_MISSES[schema['format']]) options.push(FORMAT_MISSES[schema['format']]!, fc.string({ maxLength: 8 }));
  }
  if (schema['x-kubernetes-int-or-string'] === true && typeof schema['pattern'] === 'string') options.push(fc.constantFrom('10GB', '1.5.5', 'Gi', '5 Gi'));
  if (schema['type'] === 'integer' || schema['type'] === 'number') {
    if (typeof schema['minimum'] === 'number') options.push(fc.constant(schema['minimum'] - (schema['type'] === 'integer' ? 1 : 0.5)), fc.constant(schema['minimum']));
    if (typeof schema['maximum'] === 'number') options.push(fc.constant(schema['maximum'] + (schema['type'] === 'integer' ? 1 : 0.5)), fc.constant(schema['maximum']));
    if (typeof schema['multipleOf'] === 'number') options.push(fc.constant(schema['multipleOf'] + 1));
    if (schema['format'] === 'int32') options.push(fc.constantFrom(2147483648, -2147483649, 2147483647));
  }
  if (schema['type'] === 'array' && isObject(schema['items'])) {
    const items = schema['items'];
    const one = validFor(items, 1_000_000, 9);
    if (schema['x-kubernetes-list-type'] === 'set' || schema['x-kubernetes-list-type'] === 'map') options.push(one.map((v) => [v, structuredClone(v)]));
    if (typeof schema['maxItems'] === 'number') options.push(fc.array(one, { minLength: schema['maxItems'] + 1, maxLength: schema['maxItems'] + 2 }));
    if (typeof schema['minItems'] === 'number') options.push(fc.constant([]));
  }
  if (schema['type'] === 'object') {
    const props = isObject(schema['properties']) ? schema['properties'] : undefined;
    if (props && Array.isArray(schema['required']) && schema['required'].length > 0) options.push(fc.constant({}));
    if (props) options.push(validFor(schema, 1_000_000, 9).map((v) => (isObject(v) ? { ...v, unknownField: 1 } : v)));
    if (typeof schema['maxProperties'] === 'number') options.push(fc.constant(Object.fromEntries(Array.from({ length: schema['maxProperties'] + 1 }, (_, i) => [`k${i}`, 'v']))));
    if (schema['x-kubernetes-embedded-resource'] === true) options.push(fc.constantFrom({ kind: 'ConfigMap' }, { apiVersion: 'v1' }, { apiVersion: '', kind: 'X' }));
  }
  return fc.oneof(...options);
}

/** Whole objects of a kind: fixed valid metadata, the rest drawn from the schema. */
export function objectsOf(kind: ResourceDescriptor, invalidOneIn = 20): fc.Arbitrary<Json> {
  const root = crdSchemaOf(kind);
  const props = root['properties'] as Json;
  const body = Object.fromEntries(Object.entries(props).filter(([k]) => !['apiVersion', 'kind', 'metadata'].includes(k)).map(([k, p]) => [k, arbitraryFor(p as Json, invalidOneIn)]));
  const required = (root['required'] as string[] | undefined) ?? [];
  return fc.record(body, { requiredKeys: required }).map((b) => ({ apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name: 'agreement' }, ...b }));
}

/** The server's answer to a dry-run create: accepted, or refused with the fields it named. */
export interface ServerVerdict {
  readonly accepted: boolean;
  /** Fields named by causes other than CEL rules. */
  readonly fields: readonly string[];
  /** True when a CEL rule (of the Rules kind) was among the causes. */
  readonly cel: boolean;
  readonly messages: readonly string[];
}

/** The messages of the Rules kind's CEL rules, to tell their refusals apart. */
const CEL_MESSAGES = ['min must not exceed max', 'name must not be forbidden'];

/** One request function, so the test and the benchmark can bring their own transport. */
export type DryRunCreate = (kind: ResourceDescriptor, object: Json) => Promise<{ status: number; body: unknown }>;

export async function serverVerdict(dryRun: DryRunCreate, kind: ResourceDescriptor, object: Json): Promise<ServerVerdict> {
  const res = await dryRun(kind, object);
  if (res.status === 201 || res.status === 200) return { accepted: true, fields: [], cel: false, messages: [] };
  const body = res.body as { message?: string; details?: { causes?: { field?: string; message?: string }[] } };
  const causes = body.details?.causes ?? [];
  const isCel = (m: string | undefined): boolean => CEL_MESSAGES.some((c) => (m ?? '').includes(c));
  const fields = causes.filter((c) => !isCel(c.message)).map((c) => c.field ?? '').filter((f) => f !== '' && f !== '<nil>');
  const unknown = [...(body.message ?? '').matchAll(/unknown field "([^"]+)"/g)].map((m) => m[1]!);
  return { accepted: false, fields: [...new Set([...fields, ...unknown])].sort(), cel: causes.some((c) => isCel(c.message)), messages: causes.map((c) => c.message ?? '').concat(body.message ? [body.message] : []) };
}

/** The tally of one kind. */
export interface KindAgreement {
  kind: string;
  objects: number;
  serverAccepted: number;
  agreed: number;
  /** Refusals on both sides naming the same fields (server causes with a field vs local errors). */
  sameFields: number;
  bothRefused: number;
  /** Disagreements where the server's refusal came from a CEL rule (local validation does not run CEL). */
  celOnly: number;
  /** Up to 10 disagreements, for the report. */
  examples: { object: Json; local: readonly string[]; server: readonly string[] }[];
  /** Up to 10 refusals where the server named a field the local errors do not. */
  fieldMismatches: { object: Json; local: readonly string[]; server: readonly string[] }[];
}

/** Validates each object locally and on the server, and tallies agreement. */
export async function measureAgreement(kind: ResourceDescriptor, validator: Validator, objects: readonly Json[], dryRun: DryRunCreate, concurrency = 8): Promise<KindAgreement> {
  const tally: KindAgreement = { kind: kind.kind, objects: objects.length, serverAccepted: 0, agreed: 0, sameFields: 0, bothRefused: 0, celOnly: 0, examples: [], fieldMismatches: [] };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objects.length) {
      const object = objects[next++]!;
      const local = validator.validate(object);
      const server = await serverVerdict(dryRun, kind, object);
      if (server.accepted) tally.serverAccepted++;
      if (local.valid === server.accepted) {
        tally.agreed++;
        if (!local.valid) {
          tally.bothRefused++;
          const localFields = [...new Set(local.errors.map((e) => e.field))].sort();
          if (server.fields.every((f) => localFields.includes(f))) tally.sameFields++;
          else if (tally.fieldMismatches.length < 10) tally.fieldMismatches.push({ object, local: local.errors.map((e) => e.message), server: server.messages });
        }
      } else {
        const cel = !server.accepted && local.valid && server.cel;
        if (cel) tally.celOnly++;
        if (tally.examples.length < 10) tally.examples.push({ object, local: local.errors.map((e) => e.message), server: server.messages });
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return tally;
}
