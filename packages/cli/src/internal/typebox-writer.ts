/**
 * A CRD's OpenAPI v3 schema as TypeBox source code using the `k8s` builders
 * of `@kubeloop/scheme/schema`, written so that the schema the code builds
 * is the schema read (up to key order): schema → CRD → code → CRD holds.
 */

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function key(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/** A JSON value as a TypeScript literal, on one line. */
function literal(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  if (isObject(value)) {
    const entries = Object.entries(value).map(([k, v]) => `${key(k)}: ${literal(v)}`);
    return entries.length === 0 ? '{}' : `{ ${entries.join(', ')} }`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

function options(rest: Json): string {
  return Object.keys(rest).length === 0 ? '' : literal(rest);
}

function call(fn: string, args: string[]): string {
  return `${fn}(${args.filter((a) => a !== '').join(', ')})`;
}

function without(s: Json, keys: readonly string[]): Json {
  return Object.fromEntries(Object.entries(s).filter(([k]) => !keys.includes(k)));
}

function isIntOrStringPair(branches: unknown): boolean {
  return Array.isArray(branches) && branches.length === 2 && isObject(branches[0]) && Object.keys(branches[0]).length === 1 && branches[0]['type'] === 'integer' && isObject(branches[1]) && Object.keys(branches[1]).length === 1 && branches[1]['type'] === 'string';
}

/**
 * The TypeBox expression of a schema. `indent` is the indentation of the
 * line the expression starts on; object properties go one level deeper.
 */
export function typeboxOf(schema: unknown, indent: string): string {
  if (!isObject(schema)) return 'k8s.Any()';
  if (schema['nullable'] === true) return call('k8s.Nullable', [typeboxOf(without(schema, ['nullable']), indent)]);
  const s = schema;

  if (s['x-kubernetes-int-or-string'] === true) {
    const rest = without(s, ['x-kubernetes-int-or-string', ...(isIntOrStringPair(s['anyOf']) ? ['anyOf'] : [])]);
    return call('k8s.IntOrString', [options(rest)]);
  }
  if (s['type'] === undefined && s['x-kubernetes-preserve-unknown-fields'] === true && s['properties'] === undefined) {
    return call('k8s.Any', [options(without(s, ['x-kubernetes-preserve-unknown-fields']))]);
  }
  if (Array.isArray(s['enum']) && (s['type'] === 'string' || s['type'] === 'integer' || s['type'] === 'number') && s['enum'].every((v) => typeof v === (s['type'] === 'string' ? 'string' : 'number'))) {
    const values = s['enum'] as unknown[];
    const inferred = values.every((v) => typeof v === 'string') ? 'string' : values.every((v) => Number.isInteger(v)) ? 'integer' : 'number';
    if (inferred === s['type']) return call('k8s.Enum', [literal(values), options(without(s, ['type', 'enum']))]);
  }
  if (s['type'] === 'integer' && s['format'] === 'int64' && s['exclusiveMinimum'] === undefined && s['exclusiveMaximum'] === undefined) {
    return call('k8s.Int64', [options(without(s, ['type', 'format']))]);
  }
  switch (s['type']) {
    case 'string':
      return call('Type.String', [options(without(s, ['type']))]);
    case 'integer':
    case 'number': {
      const rest = without(s, ['type']);
      // CRDs say `minimum: 0, exclusiveMinimum: true`; TypeBox says `exclusiveMinimum: 0` (rewritten back when the CRD is generated)
      for (const [exclusive, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
        if (rest[exclusive] === true && typeof rest[bound] === 'number') {
          rest[exclusive] = rest[bound];
          delete rest[bound];
        } else if (rest[exclusive] === false) delete rest[exclusive];
      }
      return call(s['type'] === 'integer' ? 'Type.Integer' : 'Type.Number', [options(rest)]);
    }
    case 'boolean':
      return call('Type.Boolean', [options(without(s, ['type']))]);
    case 'array': {
      const item = typeboxOf(s['items'], indent);
      const listType = s['x-kubernetes-list-type'];
      if (listType === 'set') return call('k8s.ListSet', [item, options(without(s, ['type', 'items', 'x-kubernetes-list-type']))]);
      if (listType === 'atomic') return call('k8s.AtomicList', [item, options(without(s, ['type', 'items', 'x-kubernetes-list-type']))]);
      if (listType === 'map' && Array.isArray(s['x-kubernetes-list-map-keys'])) {
        return call('k8s.ListMap', [item, literal(s['x-kubernetes-list-map-keys']), options(without(s, ['type', 'items', 'x-kubernetes-list-type', 'x-kubernetes-list-map-keys']))]);
      }
      return call('Type.Array', [item, options(without(s, ['type', 'items']))]);
    }
    default:
      return objectOf(s, indent);
  }
}

/** The properties of an object schema as a TypeBox properties literal (`{ a: Type.String(), b: Type.Optional(...) }`). */
export function propertiesOf(s: Json, indent: string): string {
  const props = isObject(s['properties']) ? s['properties'] : {};
  const required = new Set(Array.isArray(s['required']) ? (s['required'] as string[]) : []);
  const inner = `${indent}  `;
  const lines = Object.entries(props).map(([name, p]) => {
    const t = typeboxOf(p, inner);
    return `${inner}${key(name)}: ${required.has(name) ? t : `Type.Optional(${t})`},\n`;
  });
  return lines.length === 0 ? '{}' : `{\n${lines.join('')}${indent}}`;
}

function objectOf(s: Json, indent: string): string {
  const hasProps = isObject(s['properties']);
  if (s['x-kubernetes-embedded-resource'] === true) {
    const rest = without(s, ['type', 'x-kubernetes-embedded-resource', 'properties', 'required', ...(hasProps ? [] : ['x-kubernetes-preserve-unknown-fields'])]);
    return call('k8s.EmbeddedResource', [hasProps ? propertiesOf(s, indent) : (Object.keys(rest).length > 0 ? 'undefined' : ''), options(rest)]);
  }
  if (s['x-kubernetes-preserve-unknown-fields'] === true) {
    const rest = without(s, ['type', 'x-kubernetes-preserve-unknown-fields', 'properties', 'required']);
    return call('k8s.PreserveUnknownFields', [hasProps ? propertiesOf(s, indent) : (Object.keys(rest).length > 0 ? 'undefined' : ''), options(rest)]);
  }
  if (isObject(s['additionalProperties'])) {
    const rest = without(s, ['type', 'additionalProperties', 'x-kubernetes-map-type']);
    if (s['x-kubernetes-map-type'] !== undefined) rest['mapType'] = s['x-kubernetes-map-type'];
    return call('k8s.Map', [typeboxOf(s['additionalProperties'], indent), options(rest)]);
  }
  return call('Type.Object', [propertiesOf(s, indent), options(without(s, ['type', 'properties', 'required']))]);
}
