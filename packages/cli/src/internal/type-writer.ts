/**
 * OpenAPI v3 schemas (a CRD's `openAPIV3Schema`, or the components of the
 * API server's OpenAPI documents) to TypeScript type text: objects become
 * object types with their required fields required, arrays `T[]`, enums
 * literal unions, int-or-string `number | string`, nullable `| null`,
 * kept-unknown fields an index signature, `$ref`s named types. Descriptions
 * become TSDoc comments.
 */

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How `$ref`s are named, and where the type of `metadata` comes from. */
export interface TypeWriterContext {
  /** The TypeScript name of a `$ref` target. */
  refName(ref: string): string;
  /** Names used from `@kubeloop/scheme` (ObjectMeta ...), collected while writing. */
  readonly schemeImports: Set<string>;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A property name as TypeScript writes it: bare when it can be, quoted otherwise. */
export function propertyName(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/** A TSDoc comment for a description, indented; empty when there is none. */
export function docComment(description: unknown, indent: string): string {
  if (typeof description !== 'string' || description.trim() === '') return '';
  const text = description.trim().replace(/\*\//g, '*\\/');
  const lines = text.split('\n');
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} *${l === '' ? '' : ` ${l}`}`).join('\n')}\n${indent} */\n`;
}

/** The single `$ref` of a schema written as `{ $ref }` or `{ allOf: [{ $ref }] }` (OpenAPI v3's way to annotate a reference). */
export function refOf(schema: Json): string | undefined {
  if (typeof schema['$ref'] === 'string') return schema['$ref'];
  const allOf = schema['allOf'];
  if (Array.isArray(allOf) && allOf.length === 1 && isObject(allOf[0]) && typeof allOf[0]['$ref'] === 'string') return allOf[0]['$ref'];
  return undefined;
}

/** The TypeScript type of a schema. `indent` is the indentation of the line the type starts on. */
export function typeOf(schema: unknown, ctx: TypeWriterContext, indent: string): string {
  if (!isObject(schema)) return 'unknown';
  const ref = refOf(schema);
  let type: string;
  if (ref !== undefined) type = ctx.refName(ref);
  else type = baseType(schema, ctx, indent);
  return schema['nullable'] === true && type !== 'unknown' ? `${type} | null` : type;
}

function literalUnion(values: unknown[]): string {
  return values.map((v) => JSON.stringify(v)).join(' | ');
}

function baseType(s: Json, ctx: TypeWriterContext, indent: string): string {
  if (s['x-kubernetes-int-or-string'] === true || s['format'] === 'int-or-string') return 'number | string';
  if (Array.isArray(s['enum']) && s['enum'].length > 0 && s['enum'].every((v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) return literalUnion(s['enum']);
  switch (s['type']) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array': {
      const item = typeOf(s['items'], ctx, indent);
      return /[|&]/.test(item) && !item.trimStart().startsWith('{') ? `(${item})[]` : `${item}[]`;
    }
    case 'object':
      return objectType(s, ctx, indent);
    default: {
      if (isObject(s['properties'])) return objectType(s, ctx, indent);
      // a union without an outer type (OpenAPI documents write Quantity as oneOf string | number)
      const branches = Array.isArray(s['oneOf']) ? s['oneOf'] : Array.isArray(s['anyOf']) ? s['anyOf'] : undefined;
      if (branches && branches.length > 0 && branches.every((b) => isObject(b) && (b['type'] !== undefined || refOf(b) !== undefined))) {
        return [...new Set(branches.map((b) => typeOf(b, ctx, indent)))].join(' | ');
      }
      return 'unknown';
    }
  }
}

/** An object schema as an object type literal (multi-line when it has properties). */
export function objectType(s: Json, ctx: TypeWriterContext, indent: string): string {
  const props = isObject(s['properties']) ? s['properties'] : undefined;
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  const embedded = s['x-kubernetes-embedded-resource'] === true;
  const additional = s['additionalProperties'];
  if (!props && !embedded) {
    if (isObject(additional)) return `{ [key: string]: ${typeOf(additional, ctx, indent)} }`;
    return '{ [key: string]: unknown }';
  }
  const required = new Set(Array.isArray(s['required']) ? (s['required'] as string[]) : []);
  const inner = `${indent}  `;
  let body = '';
  const fields: [string, Json, boolean][] = Object.entries(props ?? {}).map(([name, p]) => [name, isObject(p) ? p : {}, required.has(name)]);
  if (embedded) {
    for (const [name, req] of [['apiVersion', true], ['kind', true], ['metadata', false]] as const) {
      if (!fields.some(([n]) => n === name)) fields.unshift([name, name === 'metadata' ? { type: 'object' } : { type: 'string' }, req]);
    }
  }
  for (const [name, p, req] of fields) {
    let t: string;
    if (name === 'metadata' && embedded && refOf(p) === undefined) {
      ctx.schemeImports.add('ObjectMeta');
      t = 'ObjectMeta';
    } else t = typeOf(p, ctx, inner);
    body += `${docComment(p['description'], inner)}${inner}${propertyName(name)}${req ? '' : '?'}: ${t};\n`;
  }
  if (preserve || embedded) body += `${inner}[key: string]: unknown;\n`;
  return `{\n${body}${indent}}`;
}
