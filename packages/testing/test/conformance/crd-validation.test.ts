/**
 * Conformance: what kube-apiserver checks in a CRD's schema before it takes
 * the CRD, and what follows for objects under it. A default that does not
 * validate where it sits, or holds a field its schema prunes, is refused
 * (in `spec.validation.openAPIV3Schema` paths: one version's schema is
 * hoisted there); set-list items may not be nullable; an unknown format is
 * taken with a warning. Objects: a string with a format given a number is
 * "must be of type <format>", enum values are quoted, the type error comes
 * before the enum error, and the fields of objects in a list given where
 * the schema declares none are pruned with a warning each. Found by the
 * schema-change fuzzer (packages/testing/test/fuzz/schema-changes.test.ts)
 * against kube-apiserver v1.37.2; the fake took every CRD before.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../../src/index.js';
import { BACKENDS, useBackend } from './backends.js';
import { raw, thingCRD } from './support.js';

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const BASE = 'spec.validation.openAPIV3Schema.properties[spec]';

function crd(group: string, spec: Record<string, unknown>): Record<string, unknown> {
  return thingCRD(group, { type: 'object', properties: { spec } });
}

/** A refusal's causes as `field: message`, sorted (the server checks sibling properties in Go's map order). */
function causes(body: Record<string, unknown>): string[] {
  return ((body['details'] as { causes?: { field: string; message: string }[] } | undefined)?.causes ?? []).map((c) => `${c.field}: ${c.message}`).sort();
}

describe.each(BACKENDS)('CRD schema validation ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it('refuses defaults that do not validate where they sit, and nullable items of a set list', async () => {
    const group = `${h().name('cv')}.conformance.kubeloop.dev`;
    const refused = await raw(h(), 'POST', CRDS, {
      body: crd(group, {
        type: 'object',
        default: { a: 'x' },
        properties: {
          a: { type: 'object', properties: { b: { type: 'string' } } },
          size: { type: 'integer', maximum: 3, enum: [1, 3], default: 7 },
          tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string', nullable: true }, minItems: 1, default: [] },
          mode: { type: 'object', properties: { c: { type: 'string' } }, required: ['c'], default: { c: 'on', extra: 1 } },
        },
      }),
    });
    expect(refused.status).toBe(422);
    expect(causes(refused.body)).toEqual([
      `${BASE}.default.a: Invalid value: "string": a in body must be of type object: "string"`,
      `${BASE}.properties[mode].default: Invalid value: {"c":"on","extra":1}: must not have unknown fields`,
      `${BASE}.properties[size].default: Invalid value: 7:  in body should be less than or equal to 3`,
      `${BASE}.properties[size].default: Unsupported value: 7: supported values: "1", "3"`,
      `${BASE}.properties[tags].default: Invalid value: 0:  in body should have at least 1 items`,
      `${BASE}.properties[tags].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set`,
    ]);
    // nothing was created
    expect((await raw(h(), 'GET', `${CRDS}/things.${group}`)).status).toBe(404);
  });

  it('takes an unknown format with a warning, and validates objects in the server words', async () => {
    const group = `${h().name('cv')}.conformance.kubeloop.dev`;
    const made = await raw(h(), 'POST', CRDS, {
      body: crd(group, { type: 'object', properties: { day: { type: 'string', format: 'date' }, size: { type: 'integer', enum: [1, 3] }, name: { type: 'string', maxLength: 2, enum: ['ab'] }, odd: { type: 'string', format: 'not-a-format' } } }),
    });
    expect({ status: made.status, warning: made.warning }).toEqual({ status: 201, warning: '299 - "unrecognized format \\"not-a-format\\""' });
    const path = `/apis/${group}/v1/namespaces/${h().namespace}/things`;
    const thing = (spec: Record<string, unknown>): Record<string, unknown> => ({ apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec });
    const wrong = await eventually(async () => {
      const res = await raw(h(), 'POST', path, { body: thing({ day: 5, size: 2, name: [{ x: 1 }, 'ab'] }), query: { dryRun: 'All' } });
      expect(res.status).toBe(422);
      return res;
    }, { timeoutMs: 15_000 });
    expect(causes(wrong.body)).toEqual([
      'spec.day: Invalid value: "int64": spec.day in body must be of type date: "int64"',
      'spec.name: Invalid value: "array": spec.name in body must be of type string: "array"',
      'spec.name: Unsupported value: [{},"ab"]: supported values: "ab"',
      'spec.size: Unsupported value: 2: supported values: "1", "3"',
    ]);
    // the type error first, then the enum's, for one value
    const name = ((wrong.body['details'] as { causes: { field: string; message: string }[] }).causes).filter((c) => c.field === 'spec.name').map((c) => c.message.split(':')[0]);
    expect(name).toEqual(['Invalid value', 'Unsupported value']);
    expect(wrong.warning).toBe('299 - "unknown field \\"spec.name[0].x\\""');
    // an unknown format is not checked: any string goes
    expect((await raw(h(), 'POST', path, { body: thing({ odd: 'anything', day: '2026-12-07' }), query: { dryRun: 'All' } })).status).toBe(201);
    await raw(h(), 'DELETE', `${CRDS}/things.${group}`);
  });

  it('takes a set or map list default that repeats an item, and words a default of the wrong type as its own validator does', async () => {
    // the default's validator is the schema validator alone: no list-type check (a create that takes the default is refused)
    const group = `${h().name('cv')}.conformance.kubeloop.dev`;
    const ports = { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } }, default: [{ name: 'a' }, { name: 'a' }] };
    expect((await raw(h(), 'POST', CRDS, { body: crd(group, { type: 'object', properties: { tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'integer' }, default: [1, 1] }, ports } }) })).status).toBe(201);
    const path = `/apis/${group}/v1/namespaces/${h().namespace}/things`;
    const made = await eventually(async () => {
      const res = await raw(h(), 'POST', path, { body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: {} } });
      expect(res.status).not.toBe(404);
      return res;
    }, { timeoutMs: 15_000 });
    expect({ status: made.status, causes: causes(made.body) }).toEqual({ status: 422, causes: ['spec.ports[1]: Duplicate value: {"name":"a"}', 'spec.tags[1]: Duplicate value: 1'] });
    await raw(h(), 'DELETE', `${CRDS}/things.${group}`);

    // the schema as written (an unknown format kept, checked as a type), values named by their Go type where a format is set
    const refused = await raw(h(), 'POST', CRDS, {
      body: crd(`${h().name('cv')}.conformance.kubeloop.dev`, {
        type: 'object',
        properties: {
          plain: { type: 'string', default: 3 },
          day: { type: 'string', format: 'date', default: 3 },
          odd: { type: 'string', format: 'int-or-string-not-a-format', default: 3 },
          flag: { type: 'string', format: 'int-or-string-not-a-format', default: true },
          raw: { type: 'string', format: 'byte', default: ['x'] },
          half: { type: 'integer', default: 1.5 },
          counts: { type: 'object', additionalProperties: { type: 'integer' }, default: { k: 'x' } },
          port: { 'x-kubernetes-int-or-string': true, default: true },
          since: { type: 'string', format: 'date', default: 'abc' },
          ratio: { type: 'number', multipleOf: 0.5, default: 0 },
        },
      }),
    });
    expect(refused.status).toBe(422);
    expect(causes(refused.body)).toEqual([
      `${BASE}.properties[counts].default.k: Invalid value: "string": .k in body must be of type integer: "string"`,
      `${BASE}.properties[day].default: Invalid value: "int64":  in body must be of type date: "int64"`,
      `${BASE}.properties[flag].default: Invalid value: "":  in body must be of type int-or-string-not-a-format: ""`,
      `${BASE}.properties[half].default: Invalid value: "": Checked value must be of type integer (default format) in `,
      `${BASE}.properties[half].default: Invalid value: "number":  in body must be of type integer: "number"`,
      `${BASE}.properties[odd].default: Invalid value: "int64":  in body must be of type int-or-string-not-a-format: "int64"`,
      `${BASE}.properties[plain].default: Invalid value: "integer":  in body must be of type string: "integer"`,
      `${BASE}.properties[ratio].default: Invalid value: 0: factor MultipleOf declared for  must be positive: 0`,
      `${BASE}.properties[since].default: Invalid value: "abc":  in body must be of type date: "abc"`,
    ]);
  });

  it('stores a schema without its empty fields, as Go leaves them out', async () => {
    const group = `${h().name('cv')}.conformance.kubeloop.dev`;
    const made = await raw(h(), 'POST', CRDS, {
      body: crd(group, { type: 'object', properties: { open: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: {} }, name: { type: 'string', description: '', format: '', pattern: '' }, sub: { type: 'object', required: [], properties: { a: { type: 'string', enum: [] } } } } }),
    });
    const schema = (made.body['spec'] as { versions: { schema: { openAPIV3Schema: { properties: Record<string, unknown> } } }[] }).versions[0]!.schema.openAPIV3Schema.properties['spec'];
    expect({ status: made.status, schema }).toEqual({
      status: 201,
      schema: { type: 'object', properties: { open: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, name: { type: 'string' }, sub: { type: 'object', properties: { a: { type: 'string' } } } } },
    });
    await raw(h(), 'DELETE', `${CRDS}/things.${group}`);
  });

  it('validates an applied scalar in a string with a format, and conflicts on an int-or-string scalar another manager owns', async () => {
    const group = `${h().name('cv')}.conformance.kubeloop.dev`;
    expect((await raw(h(), 'POST', CRDS, { body: crd(group, { type: 'object', properties: { day: { type: 'string', format: 'date' }, name: { type: 'string' }, port: { 'x-kubernetes-int-or-string': true } } }) })).status).toBe(201);
    const path = `/apis/${group}/v1/namespaces/${h().namespace}/things`;
    await eventually(async () => {
      const res = await raw(h(), 'POST', path, { query: { fieldManager: 'maker' }, body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: { port: 1 } } });
      expect(res.status).toBe(201);
    }, { timeoutMs: 15_000 });
    const apply = async (spec: Record<string, unknown>, force = false): Promise<{ status: number; message: unknown }> => {
      const res = await raw(h(), 'PATCH', `${path}/a`, { query: { fieldManager: 'applier', ...(force ? { force: 'true' } : {}) }, contentType: 'application/apply-patch+yaml', body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec } });
      return { status: res.status, message: res.body['message'] };
    };
    // a format makes the field an untyped scalar to the typed converter: a number goes on to validation; a list does not
    expect(await apply({ day: 7 })).toEqual({ status: 422, message: `Thing.${group} "a" is invalid: spec.day: Invalid value: "int64": spec.day in body must be of type date: "int64"` });
    expect(await apply({ day: ['x'] })).toEqual({ status: 500, message: `failed to create typed patch object (/a; ${group}/v1, Kind=Thing): .spec.day: expected any scalar, got &{[x]}` });
    expect(await apply({ name: { a: 'x' } })).toEqual({ status: 500, message: `failed to create typed patch object (/a; ${group}/v1, Kind=Thing): .spec.name: expected string, got &value.valueUnstructured{Value:map[string]interface {}{"a":"x"}}` });
    // a map where the owner set a scalar changes that field itself: a conflict before validation
    expect(await apply({ port: { a: 1 } })).toEqual({ status: 409, message: `Apply failed with 1 conflict: conflict with "maker" using ${group}/v1: .spec.port` });
    expect(await apply({ port: { a: 1 } }, true)).toEqual({ status: 422, message: `Thing.${group} "a" is invalid: spec.port: Invalid value: "object": spec.port in body must be of type integer,string: "object"` });
    await raw(h(), 'DELETE', `${CRDS}/things.${group}`);
  });

  it('answers a group version nothing serves (a CRD not there) with the plain-text 404, not a Status', async () => {
    const res = await raw(h(), 'GET', `/apis/${h().name('gone')}.conformance.kubeloop.dev/v1/namespaces/${h().namespace}/things`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { text: '404 page not found\n' } });
  });

  it('checks a number against fractional bounds and an enum as Go converts the value', async () => {
    const group = `${h().name('cv')}.conformance.kubeloop.dev`;
    const spec = { type: 'object', properties: { ratio: { type: 'number', minimum: 0.5, maximum: 3.5 }, half: { type: 'number', multipleOf: 0.5 }, level: { type: 'integer', enum: [-1, 3] }, letter: { type: 'string', enum: ['a'] } } };
    expect((await raw(h(), 'POST', CRDS, { body: crd(group, spec) })).status).toBe(201);
    const path = `/apis/${group}/v1/namespaces/${h().namespace}/things`;
    const answer = (body: Record<string, unknown>) => eventually(async () => {
      const res = await raw(h(), 'POST', path, { body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: body }, query: { dryRun: 'All' } });
      expect(res.status).not.toBe(404);
      return { status: res.status, causes: causes(res.body) };
    }, { timeoutMs: 15_000 });
    // a whole value is an int64 to kube-openapi: the bounds are cut to 0 and 3, the factor to 0 (not positive)
    expect(await answer({ ratio: 0 })).toEqual({ status: 201, causes: [] });
    expect(await answer({ ratio: 4 })).toEqual({ status: 422, causes: ['spec.ratio: Invalid value: 4: spec.ratio in body should be less than or equal to 3'] });
    expect(await answer({ ratio: 0.25 })).toEqual({ status: 422, causes: ['spec.ratio: Invalid value: 0.25: spec.ratio in body should be greater than or equal to 0.5'] });
    expect(await answer({ half: 2 })).toEqual({ status: 422, causes: ['spec.half: Invalid value: 0: factor MultipleOf declared for spec.half must be positive: 0'] });
    expect(await answer({ half: 1.5 })).toEqual({ status: 201, causes: [] });
    // an enum compares the value converted to each allowed value's type: -1.5 is -1, 97 is "a"; a fraction in an integer is also "Checked value ..."
    expect(await answer({ level: -1.5 })).toEqual({
      status: 422,
      causes: ['<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.level', 'spec.level: Invalid value: "number": spec.level in body must be of type integer: "number"'],
    });
    expect(await answer({ letter: 97 })).toEqual({ status: 422, causes: ['spec.letter: Invalid value: "integer": spec.letter in body must be of type string: "integer"'] });
    await raw(h(), 'DELETE', `${CRDS}/things.${group}`);
  });
});
