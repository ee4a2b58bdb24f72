/**
 * TypeBox writes some types in JSON Schema forms a CRD does not accept
 * (`const`, `anyOf` of literals, `anyOf [X, null]`, `patternProperties` for
 * records, `enum` without `type`). This rewrites them into the Kubernetes
 * dialect, keeping every other keyword; what cannot be rewritten is left
 * for the structural check to report with its path.
 */
import type { JsonSchema } from '../kind-schema.js';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function scalarType(values: readonly unknown[]): string | undefined {
  if (values.length === 0) return undefined;
  if (values.every((v) => typeof v === 'string')) return 'string';
  if (values.every((v) => typeof v === 'boolean')) return 'boolean';
  if (values.every((v) => typeof v === 'number')) return values.every((v) => Number.isInteger(v)) ? 'integer' : 'number';
  return undefined;
}

/** The values a branch allows when it is a literal (`const`) or a scalar enum; else undefined. */
function literalValues(branch: unknown): unknown[] | undefined {
  if (!isObject(branch)) return undefined;
  const keys = Object.keys(branch).filter((k) => k !== 'type' && k !== 'description');
  if (keys.length !== 1) return undefined;
  if (keys[0] === 'const') return [branch['const']];
  if (keys[0] === 'enum' && Array.isArray(branch['enum'])) return branch['enum'] as unknown[];
  return undefined;
}

const MATCH_ALL = new Set(['^.*$', '.*', '^(.*)$']);

/** Returns the schema in the CRD dialect; the input is not modified. */
export function normalizeSchema(schema: JsonSchema): JsonSchema {
  return normalize(schema) as JsonSchema;
}

function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (!isObject(value)) return value;
  let s: Json = {};
  for (const [k, v] of Object.entries(value)) {
    // Schemas live under these keywords; everything else (default, enum, example, x-kubernetes-validations) is data.
    if (k === 'properties' && isObject(v)) s[k] = Object.fromEntries(Object.entries(v).map(([name, p]) => [name, normalize(p)]));
    else if (['items', 'additionalProperties', 'not'].includes(k)) s[k] = normalize(v);
    else if (['allOf', 'anyOf', 'oneOf'].includes(k) && Array.isArray(v)) s[k] = v.map(normalize);
    else if (k === 'patternProperties' && isObject(v)) s[k] = Object.fromEntries(Object.entries(v).map(([name, p]) => [name, normalize(p)]));
    else s[k] = v;
  }

  // const → enum with one value
  if ('const' in s) {
    const { const: c, ...rest } = s;
    s = { ...rest, enum: [c] };
  }

  // anyOf of literals (a union of Type.Literal) → one enum; anyOf [X, null] → X nullable
  if (Array.isArray(s['anyOf']) && s['x-kubernetes-int-or-string'] !== true) {
    const branches = s['anyOf'] as unknown[];
    const nonNull = branches.filter((b) => !(isObject(b) && b['type'] === 'null' && Object.keys(b).length === 1));
    const hadNull = nonNull.length < branches.length;
    const literals = nonNull.map(literalValues);
    if (nonNull.length > 0 && literals.every((l) => l !== undefined)) {
      const values = literals.flat();
      const type = scalarType(values);
      if (type !== undefined) {
        const { anyOf: _anyOf, ...rest } = s;
        s = { ...rest, type, enum: [...new Set(values)] };
        if (hadNull) s['nullable'] = true;
      }
    } else if (hadNull && nonNull.length === 1 && isObject(nonNull[0])) {
      const { anyOf: _anyOf, ...rest } = s;
      s = { ...nonNull[0], ...rest, nullable: true };
    }
  }

  // enum without a type: the type of its values
  if (Array.isArray(s['enum']) && s['type'] === undefined) {
    const type = scalarType(s['enum'] as unknown[]);
    if (type !== undefined) s['type'] = type;
  }
  // a Type.Literal(3) is `type: number`: say integer when every value is one
  if (s['type'] === 'number' && Array.isArray(s['enum']) && scalarType(s['enum'] as unknown[]) === 'integer') s['type'] = 'integer';

  // JSON Schema's numeric exclusive bounds (TypeBox's form) → OpenAPI v3.0's boolean form that CRDs use
  for (const [exclusive, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
    if (typeof s[exclusive] === 'number') {
      const value = s[exclusive];
      const existing = s[bound];
      // both given: the stricter one wins
      const stricter = typeof existing !== 'number' || (bound === 'minimum' ? value >= existing : value <= existing);
      if (stricter) {
        s[bound] = value;
        s[exclusive] = true;
      } else {
        delete s[exclusive];
      }
    }
  }

  // a record with any string key (Type.Record(Type.String(), V)) → additionalProperties
  if (isObject(s['patternProperties']) && s['properties'] === undefined && s['additionalProperties'] === undefined) {
    const entries = Object.entries(s['patternProperties']);
    if (entries.length === 1 && MATCH_ALL.has(entries[0]![0])) {
      const { patternProperties: _p, ...rest } = s;
      s = { ...rest, additionalProperties: entries[0]![1] };
    }
  }
  return s;
}
