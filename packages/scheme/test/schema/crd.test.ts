/** generateCRDs: the Kubernetes dialect written from TypeBox idioms, versions merged into one CRD, and the errors for what cannot be one. */
import { describe, expect, it } from 'vitest';
import { defineKind, isSchemeError } from '../../src/index.js';
import type { SchemeError } from '../../src/index.js';
import { QUANTITY_PATTERN, Type, crdSchemaOf, generateCRDs, k8s } from '../../src/schema/index.js';

function failure(fn: () => unknown): SchemeError {
  try {
    fn();
  } catch (err) {
    if (isSchemeError(err)) return err;
    throw err;
  }
  throw new Error('expected a SchemeError');
}

const base = { group: 'crd.kubeloop.dev', kind: 'Thing', plural: 'things', namespaced: true } as const;

describe('crdSchemaOf', () => {
  it('writes TypeBox idioms in the CRD dialect', () => {
    const Thing = defineKind({
      ...base,
      version: 'v1',
      schema: {
        spec: Type.Object({
          lit: Type.Literal('only'),
          union: Type.Union([Type.Literal('a'), Type.Literal('b')]),
          num: Type.Union([Type.Literal(1), Type.Literal(2)]),
          maybe: Type.Union([Type.String(), Type.Null()]),
          maybeEnum: Type.Union([Type.Literal('x'), Type.Null()]),
          bare: Type.Enum(['p', 'q']),
          record: Type.Record(Type.String(), Type.Integer()),
          ratio: Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 }),
        }),
      },
    });
    const spec = (crdSchemaOf(Thing)['properties'] as Record<string, Record<string, unknown>>)['spec']!;
    expect(spec['properties']).toEqual({
      lit: { type: 'string', enum: ['only'] },
      union: { type: 'string', enum: ['a', 'b'] },
      num: { type: 'integer', enum: [1, 2] },
      maybe: { type: 'string', nullable: true },
      maybeEnum: { type: 'string', enum: ['x'], nullable: true },
      bare: { type: 'string', enum: ['p', 'q'] },
      record: { type: 'object', additionalProperties: { type: 'integer' } },
      ratio: { type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true },
    });
    expect(crdSchemaOf(Thing)['required']).toEqual(['spec']);
  });

  it('writes the k8s builders as Kubernetes extensions', () => {
    expect(k8s.IntOrString()).toEqual({ 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] });
    expect(k8s.Quantity()).toMatchObject({ 'x-kubernetes-int-or-string': true, pattern: QUANTITY_PATTERN });
    expect(k8s.ListMap(Type.Object({ name: Type.String() }), ['name'])).toMatchObject({ type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] });
    expect(k8s.ListSet(Type.String())).toMatchObject({ 'x-kubernetes-list-type': 'set' });
    expect(k8s.AtomicList(Type.String())).toMatchObject({ 'x-kubernetes-list-type': 'atomic' });
    expect(k8s.Map(Type.String(), { mapType: 'atomic' })).toEqual({ type: 'object', additionalProperties: { type: 'string' }, 'x-kubernetes-map-type': 'atomic' });
    expect(k8s.EmbeddedResource()).toEqual({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true, 'x-kubernetes-embedded-resource': true });
    expect(k8s.PreserveUnknownFields()).toEqual({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    expect(k8s.Any()).toEqual({ 'x-kubernetes-preserve-unknown-fields': true });
    expect(k8s.Nullable(Type.String())).toEqual({ type: 'string', nullable: true });
    expect(k8s.Enum([1, 2])).toEqual({ type: 'integer', enum: [1, 2] });
    expect(k8s.rules({ rule: 'self.a > 0' })).toEqual({ 'x-kubernetes-validations': [{ rule: 'self.a > 0' }] });
    expect(new RegExp(QUANTITY_PATTERN).test('1.5Gi') && new RegExp(QUANTITY_PATTERN).test('500m') && !new RegExp(QUANTITY_PATTERN).test('5 Gi')).toBe(true);
  });
});

describe('generateCRDs', () => {
  it('merges versions into one CRD with one storage version, names and scope from the kind', () => {
    const v1 = defineKind({ ...base, version: 'v1', schema: { spec: Type.Object({ a: Type.String() }) }, crd: { storage: true, shortNames: ['th'], categories: ['all'], validations: [{ rule: 'self.metadata.name.size() < 20' }] } });
    const v2alpha1 = defineKind({ ...base, version: 'v2alpha1', schema: { spec: Type.Object({ a: Type.String() }) }, crd: { served: false, deprecated: true } });
    const [crd, ...rest] = generateCRDs([v2alpha1, v1, v1]);
    expect(rest).toEqual([]);
    expect(crd!.metadata.name).toBe('things.crd.kubeloop.dev');
    expect(crd!.spec.names).toEqual({ kind: 'Thing', listKind: 'ThingList', plural: 'things', singular: 'thing', shortNames: ['th'], categories: ['all'] });
    expect(crd!.spec.scope).toBe('Namespaced');
    expect(crd!.spec.versions.map((v) => [v.name, v.served, v.storage, v.deprecated])).toEqual([
      ['v1', true, true, undefined],
      ['v2alpha1', false, false, true],
    ]);
    expect(crd!.spec.versions[0]!.schema!.openAPIV3Schema!['x-kubernetes-validations']).toEqual([{ rule: 'self.metadata.name.size() < 20' }]);
  });

  it('writes a conversion webhook stanza (service or URL) that every version agrees on', () => {
    const spec = { spec: Type.Object({ size: Type.String() }) };
    const service = { service: { namespace: 'ops', name: 'thing-webhook' } } as const;
    const [crd] = generateCRDs([
      defineKind({ ...base, version: 'v1', schema: spec, crd: { storage: true, conversion: service } }),
      defineKind({ ...base, version: 'v2', schema: spec, crd: { conversion: service } }),
    ]);
    expect((crd!.spec as { conversion?: unknown }).conversion).toEqual({
      strategy: 'Webhook',
      webhook: { conversionReviewVersions: ['v1'], clientConfig: { service: { namespace: 'ops', name: 'thing-webhook', path: '/convert', port: 443 } } },
    });
    const [byUrl] = generateCRDs([defineKind({ ...base, version: 'v1', schema: spec, crd: { conversion: { url: 'https://127.0.0.1:9443/convert' } } })]);
    expect((byUrl!.spec as { conversion?: { webhook: { clientConfig: unknown } } }).conversion?.webhook.clientConfig).toEqual({ url: 'https://127.0.0.1:9443/convert' });
    const [none] = generateCRDs([defineKind({ ...base, version: 'v1', schema: spec })]);
    expect(none!.spec).not.toHaveProperty('conversion');
    const err = failure(() =>
      generateCRDs([
        defineKind({ ...base, version: 'v1', schema: spec, crd: { storage: true, conversion: service } }),
        defineKind({ ...base, version: 'v2', schema: spec, crd: { conversion: { url: 'https://elsewhere/convert' } } }),
      ]),
    );
    expect(err.message).toMatch(/^cannot generate the CRD of Thing.*: versions disagree on conversion: v2 and v1/);
  });

  it('refuses what no single CRD can be', () => {
    const v1 = defineKind({ ...base, version: 'v1', schema: { spec: Type.Object({}) } });
    const v2 = defineKind({ ...base, version: 'v2', schema: { spec: Type.Object({}) } });
    expect(failure(() => generateCRDs([v1, v2])).message).toContain('no version is the storage version');
    const both = [defineKind({ ...base, version: 'v1', schema: {}, crd: { storage: true } }), defineKind({ ...base, version: 'v2', schema: {}, crd: { storage: true } })];
    expect(failure(() => generateCRDs(both)).message).toContain('2 versions say crd.storage: true');
    const scope = [defineKind({ ...base, version: 'v1', schema: {}, crd: { storage: true } }), defineKind({ ...base, namespaced: false, version: 'v2', schema: {} })];
    expect(failure(() => generateCRDs(scope)).reason).toBe('InvalidCRD');
    const noDot = defineKind({ ...base, group: 'local', version: 'v1', schema: {} });
    expect(failure(() => generateCRDs([noDot])).message).toContain('must contain a dot');
    const handTyped = defineKind({ group: 'crd.kubeloop.dev', version: 'v1', kind: 'Plain' });
    expect(failure(() => generateCRDs([handTyped])).message).toContain('has no schema');
    const column = defineKind({ ...base, version: 'v1', schema: {}, crd: { printerColumns: [{ name: 'X', type: 'string', jsonPath: 'spec.x' }], subresources: { scale: { specReplicasPath: '.status.r', statusReplicasPath: '.status.r' } } } });
    const err = failure(() => generateCRDs([column]));
    expect(err.problems.map((p) => p.path)).toEqual(['spec.versions[0].additionalPrinterColumns[0].jsonPath', 'spec.versions[0].subresources.scale.specReplicasPath']);
    const fields = Array.from({ length: 9 }, (_, i) => ({ jsonPath: i === 0 ? 'spec.x' : `.spec.f${i}` }));
    const selectable = failure(() => generateCRDs([defineKind({ ...base, version: 'v1', schema: {}, crd: { selectableFields: fields } })]));
    expect(selectable.problems.map((p) => p.path)).toEqual(['spec.versions[0].selectableFields', 'spec.versions[0].selectableFields[0].jsonPath']);
  });

  it('refuses a non-structural schema with every offending path', () => {
    const Bad = defineKind({ ...base, version: 'v1', schema: { spec: Type.Object({ u: Type.Union([Type.String(), Type.Integer()]), t: Type.Tuple([Type.String()]), any: Type.Unknown() }) } });
    const err = failure(() => generateCRDs([Bad]));
    expect(err.reason).toBe('NonStructural');
    const p = 'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties';
    expect(err.problems.map((x) => x.path)).toEqual(expect.arrayContaining([`${p}[u].type`, `${p}[u].anyOf[0].type`, `${p}[t].items`, `${p}[any].type`]));
    expect(err.message).toContain(`${p}[any].type: Required: must not be empty for specified object fields`);
  });
});
