/**
 * checkStructural against the real API server: for each schema in the
 * table, the generator refuses it exactly when kube-apiserver refuses a CRD
 * holding it (dry-run create, strict field validation), and a refusal names
 * a path the server also names.
 */
import { describe, expect, it } from 'vitest';
import { checkStructural } from '../../src/schema/index.js';
import { kubeRequest } from '../../../../test/support/kube-request.js';

type Json = Record<string, unknown>;

const str = { type: 'string' };
const int = { type: 'integer' };

/** Cases: a schema for `spec` (or the whole root with `root: true`), and whether the server refuses it. */
const CASES: { name: string; spec?: Json; root?: Json; refused: boolean }[] = [
  { name: 'plain typed object', spec: { type: 'object', required: ['size'], properties: { size: str, count: int, ratio: { type: 'number' }, on: { type: 'boolean' } } }, refused: false },
  { name: 'int-or-string', spec: { type: 'object', properties: { port: { 'x-kubernetes-int-or-string': true, anyOf: [int, str] } } }, refused: false },
  { name: 'int-or-string without anyOf', spec: { type: 'object', properties: { port: { 'x-kubernetes-int-or-string': true } } }, refused: false },
  { name: 'int-or-string in allOf form', spec: { type: 'object', properties: { port: { 'x-kubernetes-int-or-string': true, allOf: [{ anyOf: [int, str] }, { pattern: '^[0-9a-z]+$' }] } } }, refused: false },
  { name: 'preserve-unknown-fields without a type', spec: { type: 'object', properties: { any: { 'x-kubernetes-preserve-unknown-fields': true } } }, refused: false },
  { name: 'embedded resource', spec: { type: 'object', properties: { template: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true } } }, refused: false },
  { name: 'embedded resource with properties', spec: { type: 'object', properties: { template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { apiVersion: str, kind: str, metadata: { type: 'object' }, data: { type: 'object', additionalProperties: str } } } } }, refused: false },
  { name: 'list map keyed by a required field', spec: { type: 'object', properties: { ports: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', required: ['name'], properties: { name: str, port: int } } } } }, refused: false },
  { name: 'list map keyed by a defaulted field', spec: { type: 'object', properties: { ports: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['protocol'], items: { type: 'object', properties: { protocol: { type: 'string', default: 'TCP' } } } } } }, refused: false },
  { name: 'list set of strings', spec: { type: 'object', properties: { tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: str } } }, refused: false },
  { name: 'list set of atomic objects', spec: { type: 'object', properties: { refs: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'object', 'x-kubernetes-map-type': 'atomic', properties: { name: str } } } } }, refused: false },
  { name: 'nullable', spec: { type: 'object', properties: { note: { type: 'string', nullable: true } } }, refused: false },
  { name: 'enum, format, bounds, pattern, default', spec: { type: 'object', properties: { phase: { type: 'string', enum: ['A', 'B'], default: 'A' }, at: { type: 'string', format: 'date-time' }, n: { type: 'integer', minimum: 0, maximum: 10, multipleOf: 2 }, s: { type: 'string', minLength: 1, maxLength: 5, pattern: '^[a-z]+$' }, l: { type: 'array', items: str, minItems: 1, maxItems: 3 } } }, refused: false },
  { name: 'map of strings', spec: { type: 'object', properties: { labels: { type: 'object', additionalProperties: str, maxProperties: 10 } } }, refused: false },
  { name: 'value validations in allOf on specified fields', spec: { type: 'object', properties: { a: str, b: str }, allOf: [{ required: ['a'] }, { properties: { b: { minLength: 2 } } }] }, refused: false },
  { name: 'anyOf of required sets', spec: { type: 'object', properties: { a: str, b: str }, anyOf: [{ required: ['a'] }, { required: ['b'] }] }, refused: false },
  { name: 'CEL rule', spec: { type: 'object', properties: { min: int, max: int }, 'x-kubernetes-validations': [{ rule: 'self.min <= self.max', message: 'min must not exceed max' }] }, refused: false },
  { name: 'CEL rules in allOf', spec: { type: 'object', properties: { min: int }, allOf: [{ 'x-kubernetes-validations': [{ rule: 'self.min >= 0' }] }] }, refused: true },
  { name: 'metadata.name restricted at the root', root: { type: 'object', properties: { apiVersion: str, kind: str, metadata: { type: 'object', properties: { name: { type: 'string', maxLength: 20 } } }, spec: { type: 'object' } } }, refused: false },
  { name: 'RE2 inline flags in a pattern', spec: { type: 'object', properties: { s: { type: 'string', pattern: '(?i)^abc$' } } }, refused: false },
  { name: 'map type atomic', spec: { type: 'object', properties: { m: { type: 'object', 'x-kubernetes-map-type': 'atomic', additionalProperties: str } } }, refused: false },

  { name: 'a field without a type', spec: { type: 'object', properties: { size: { description: 'no type' } } }, refused: true },
  { name: 'array items without a type', spec: { type: 'object', properties: { l: { type: 'array', items: { minLength: 1 } } } }, refused: true },
  { name: 'an array without items', spec: { type: 'object', properties: { l: { type: 'array' } } }, refused: true },
  { name: 'anyOf with types (a union)', spec: { type: 'object', properties: { v: { anyOf: [str, { type: 'boolean' }] } } }, refused: true },
  { name: 'a field only under anyOf', spec: { type: 'object', properties: { a: str }, anyOf: [{ properties: { b: { minLength: 1 } } }] }, refused: false },
  { name: 'a field only under allOf of an object without properties', spec: { type: 'object', allOf: [{ properties: { b: { minLength: 1 } } }] }, refused: false },
  { name: 'items only under anyOf', spec: { type: 'object', properties: { l: { type: 'array', items: str, anyOf: [{ items: { minLength: 1 } }] } } }, refused: false },
  { name: 'description under allOf', spec: { type: 'object', properties: { a: str }, allOf: [{ description: 'x' }] }, refused: true },
  { name: 'default under anyOf', spec: { type: 'object', properties: { a: str }, anyOf: [{ properties: { a: { default: 'x' } } }] }, refused: true },
  { name: 'nullable under anyOf', spec: { type: 'object', properties: { a: str }, anyOf: [{ properties: { a: { nullable: true } } }] }, refused: true },
  { name: 'CEL rules under anyOf', spec: { type: 'object', properties: { a: str }, anyOf: [{ 'x-kubernetes-validations': [{ rule: 'true' }] }] }, refused: true },
  { name: 'properties and additionalProperties', spec: { type: 'object', properties: { a: str }, additionalProperties: str }, refused: true },
  { name: 'additionalProperties false', spec: { type: 'object', additionalProperties: false }, refused: false },
  { name: 'uniqueItems', spec: { type: 'object', properties: { l: { type: 'array', items: str, uniqueItems: true } } }, refused: true },
  { name: '$ref', spec: { type: 'object', properties: { a: { $ref: '#/definitions/x' } } }, refused: true },
  { name: 'patternProperties', spec: { type: 'object', patternProperties: { '^a': str } }, refused: true },
  { name: 'const (not a CRD keyword)', spec: { type: 'object', properties: { a: { type: 'string', const: 'x' } } }, refused: true },
  { name: 'prefixItems (a tuple)', spec: { type: 'object', properties: { t: { type: 'array', items: str, prefixItems: [str] } } }, refused: true },
  { name: 'items as an array', spec: { type: 'object', properties: { t: { type: 'array', items: [str] } } }, refused: true },
  { name: 'type null', spec: { type: 'object', properties: { n: { type: 'null' } } }, refused: true },
  { name: 'metadata.labels at the root', root: { type: 'object', properties: { metadata: { type: 'object', properties: { labels: { type: 'object', additionalProperties: str } } }, spec: { type: 'object' } } }, refused: true },
  { name: 'embedded resource that is not an object', spec: { type: 'object', properties: { t: { type: 'string', 'x-kubernetes-embedded-resource': true } } }, refused: true },
  { name: 'embedded resource with neither properties nor preserve', spec: { type: 'object', properties: { t: { type: 'object', 'x-kubernetes-embedded-resource': true } } }, refused: true },
  { name: 'list map without keys', spec: { type: 'object', properties: { l: { type: 'array', 'x-kubernetes-list-type': 'map', items: { type: 'object', properties: { name: str } } } } }, refused: true },
  { name: 'list map key neither required nor defaulted', spec: { type: 'object', properties: { l: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', properties: { name: str } } } } }, refused: true },
  { name: 'list map keys without list type map', spec: { type: 'object', properties: { l: { type: 'array', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', required: ['name'], properties: { name: str } } } } }, refused: true },
  // found by the schema-change fuzzer (packages/testing/test/fuzz/schema-changes.test.ts)
  { name: 'list set of nullable items', spec: { type: 'object', properties: { l: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string', nullable: true } } } }, refused: true },
  { name: 'list map keyed by a nullable field', spec: { type: 'object', properties: { l: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', required: ['name'], properties: { name: { type: 'string', nullable: true } } } } } }, refused: true },
  { name: 'list atomic of nullable items', spec: { type: 'object', properties: { l: { type: 'array', 'x-kubernetes-list-type': 'atomic', items: { type: 'string', nullable: true } } } }, refused: false },
  { name: 'list type on a string', spec: { type: 'object', properties: { s: { type: 'string', 'x-kubernetes-list-type': 'set' } } }, refused: true },
  { name: 'list set of granular objects', spec: { type: 'object', properties: { l: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'object', properties: { name: str } } } } }, refused: true },
  { name: 'map type on a string', spec: { type: 'object', properties: { s: { type: 'string', 'x-kubernetes-map-type': 'atomic' } } }, refused: true },
  { name: 'int-or-string with preserve-unknown-fields', spec: { type: 'object', properties: { p: { 'x-kubernetes-int-or-string': true, 'x-kubernetes-preserve-unknown-fields': true } } }, refused: true },
  { name: 'a lookahead pattern', spec: { type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)a+$' } } }, refused: true },
  { name: 'a backreference pattern', spec: { type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } } }, refused: true },
  { name: 'an unbalanced pattern', spec: { type: 'object', properties: { s: { type: 'string', pattern: '^(a$' } } }, refused: true },
  { name: 'preserve-unknown-fields false', spec: { type: 'object', properties: { a: { type: 'object', 'x-kubernetes-preserve-unknown-fields': false } } }, refused: true },
  { name: 'a CEL rule message with a line break', spec: { type: 'object', properties: { a: int }, 'x-kubernetes-validations': [{ rule: 'self.a > 0', message: 'line\nbreak' }] }, refused: true },
  { name: 'a root that is not an object', root: { type: 'array', items: str }, refused: true },
  { name: 'a root without a type', root: { properties: { spec: { type: 'object' } } }, refused: true },
];

function rootOf(c: (typeof CASES)[number]): Json {
  return c.root ?? { type: 'object', properties: { apiVersion: str, kind: str, metadata: { type: 'object' }, spec: c.spec } };
}

function crd(root: Json): Json {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'probes.structural.kubeloop.dev' },
    spec: {
      group: 'structural.kubeloop.dev',
      scope: 'Namespaced',
      names: { plural: 'probes', singular: 'probe', kind: 'Probe', listKind: 'ProbeList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: root } }],
    },
  };
}

/**
 * Paths the server names in its Status causes. With one schema for every
 * version it reports them under the internal `spec.validation.openAPIV3Schema`;
 * the manifest's path is `spec.versions[0].schema.openAPIV3Schema`.
 */
function serverPaths(body: unknown): string[] {
  const details = (body as { details?: { causes?: { field?: string }[] } }).details;
  return (details?.causes ?? []).map((c) => (c.field ?? '').replace(/^spec\.validation\.openAPIV3Schema/, 'spec.versions[0].schema.openAPIV3Schema')).filter((f) => f !== '');
}

describe('checkStructural agrees with kube-apiserver', () => {
  for (const c of CASES) {
    it(`${c.refused ? 'refuses' : 'accepts'} ${c.name}`, async () => {
      const problems = checkStructural(rootOf(c), { basePath: 'spec.versions[0].schema.openAPIV3Schema' });
      const res = await kubeRequest('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All&fieldValidation=Strict', crd(rootOf(c)));
      const serverRefused = res.status !== 201;
      expect(serverRefused, `server answered ${res.status}: ${JSON.stringify(res.body).slice(0, 600)}`).toBe(c.refused);
      expect(problems.length > 0, `local problems: ${JSON.stringify(problems)}`).toBe(c.refused);
      if (c.refused) {
        const paths = serverPaths(res.body);
        const message = (res.body as { message?: string }).message ?? '';
        // Every path we report is one the server reports; a keyword CRDs do not
        // have is refused by strict field validation as an unknown field instead.
        for (const p of problems) {
          const unknownField = message.includes(`unknown field "${p.path.replace(/\[([^\]0-9][^\]]*)\]/g, '.$1')}"`);
          expect(paths.includes(p.path) || unknownField, `${p.path} not among ${JSON.stringify(paths)} / ${message.slice(0, 400)}`).toBe(true);
        }
      }
    });
  }
});
