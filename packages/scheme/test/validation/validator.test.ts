/** createValidator and checkDefaults without a server: what the API server does before validating, its messages, and what is left to it. */
import { describe, expect, it } from 'vitest';
import { defineKind, isSchemeError } from '../../src/index.js';
import { Type, k8s } from '../../src/schema/index.js';
import { checkDefaults, createValidator } from '../../src/validation/index.js';

const Disk = defineKind({
  group: 'v.kubeloop.dev',
  version: 'v1',
  kind: 'Disk',
  plural: 'disks',
  namespaced: true,
  schema: {
    spec: Type.Object(
      {
        size: Type.String({ pattern: '^[0-9]+Gi$' }),
        replicas: Type.Integer({ minimum: 1, default: 1 }),
        mode: Type.Optional(k8s.Enum(['fast', 'safe'], { default: 'safe' })),
        tags: Type.Optional(k8s.ListSet(Type.String(), { maxItems: 2 })),
        note: Type.Optional(Type.String()),
        keep: Type.Optional(k8s.Nullable(Type.String())),
        at: Type.Optional(k8s.DateTime()),
        mail: Type.Optional(Type.String({ format: 'email' })),
      },
      k8s.rules({ rule: 'self.replicas < 10' }),
    ),
  },
});

const disk = (spec: Record<string, unknown>, metadata: Record<string, unknown> = { name: 'd' }) => ({ apiVersion: 'v.kubeloop.dev/v1', kind: 'Disk', metadata, spec });

describe('createValidator', () => {
  const validator = createValidator(Disk);

  it('accepts a valid object and returns it as stored: defaults applied, nulls dropped, unknown fields pruned', () => {
    const input = disk({ size: '10Gi', note: null, keep: null, extra: 1 });
    const result = validator.validate(input);
    expect(result.errors).toEqual([]);
    expect(result.valid).toBe(true);
    expect(result.object.spec).toEqual({ size: '10Gi', replicas: 1, mode: 'safe', keep: null });
    expect(result.warnings).toEqual(['unknown field "spec.extra"']);
    expect(input.spec).toHaveProperty('extra'); // the input is not modified
  });

  it('reports errors as the API server words them', () => {
    const result = validator.validate(disk({ size: 5, replicas: 0, mode: 'slow', tags: ['a', 'a', 'b'], at: 'yesterday' }, { name: 'Bad_Name' }));
    expect(result.valid).toBe(false);
    expect(result.errors.map((e) => e.message).sort()).toEqual(
      [
        'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character',
        'spec.size: Invalid value: "integer": spec.size in body must be of type string: "integer"',
        'spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1',
        'spec.mode: Unsupported value: "slow": supported values: "fast", "safe"',
        'spec.tags: Too many: 3: must have at most 2 items',
        'spec.tags[1]: Duplicate value: "a"',
        'spec.at: Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday"',
      ].sort(),
    );
    expect(result.errors.find((e) => e.field === 'spec.mode')?.type).toBe('FieldValueNotSupported');
    expect(validator.validate(disk({})).errors.map((e) => e.message)).toEqual(['spec.size: Required value']);
    expect(validator.validate(disk({ size: '1TB' })).errors[0]?.message).toBe('spec.size: Invalid value: "1TB": spec.size in body should match \'^[0-9]+Gi$\'');
  });

  it('reports a missing field after the errors inside its object\'s other fields, as the API server orders them', () => {
    // spec.size is required; the errors of spec's present fields come first, then the missing one
    expect(validator.validate(disk({ replicas: 0 })).errors.map((e) => e.message)).toEqual([
      'spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1',
      'spec.size: Required value',
    ]);
    // and spec itself, missing at the top, after the errors of the object's other fields
    expect(validator.validate({ apiVersion: 'v.kubeloop.dev/v1', kind: 'Disk', metadata: { name: 'd' } }).errors.map((e) => e.message)).toEqual(['spec: Required value']);
  });

  it('words format, enum and type errors as the API server does, in its order, and prunes objects in a list the schema does not declare', () => {
    const Odd = defineKind({
      group: 'v.kubeloop.dev',
      version: 'v1',
      kind: 'Odd',
      plural: 'odds',
      namespaced: true,
      schema: { spec: Type.Object({ day: Type.Optional(Type.String({ format: 'date' })), size: Type.Optional(Type.Integer({ enum: [1, 3] })), name: Type.Optional(Type.String({ maxLength: 2, enum: ['ab'] })) }) },
    });
    const result = createValidator(Odd).validate({ apiVersion: 'v.kubeloop.dev/v1', kind: 'Odd', metadata: { name: 'o' }, spec: { day: 5, size: 2, name: [{ x: 1 }, 'ab'] } });
    // kube-apiserver v1.37.2's answer to the same object (packages/testing/test/conformance/crd-validation.test.ts holds both backends to it)
    expect(result.errors.map((e) => e.message)).toEqual([
      'spec.day: Invalid value: "int64": spec.day in body must be of type date: "int64"',
      'spec.size: Unsupported value: 2: supported values: "1", "3"',
      'spec.name: Invalid value: "array": spec.name in body must be of type string: "array"',
      'spec.name: Unsupported value: [{},"ab"]: supported values: "ab"',
    ]);
    expect(result.warnings).toEqual(['unknown field "spec.name[0].x"']);
  });

  it('checks apiVersion, kind and that it is an object at all', () => {
    expect(validator.validate({ ...disk({ size: '1Gi' }), apiVersion: 'v.kubeloop.dev/v2' }).errors.map((e) => e.field)).toEqual(['apiVersion']);
    expect(validator.validate('text').errors[0]?.detail).toBe('must be an object');
    expect(validator.validate(disk({ size: '1Gi' }, {})).errors[0]?.message).toBe('metadata.name: Required value: name or generateName is required');
  });

  it('strict unknown fields are errors', () => {
    const strict = createValidator(Disk, { unknownFields: 'error' });
    expect(strict.validate(disk({ size: '1Gi', extra: 1 })).errors.map((e) => [e.type, e.field])).toEqual([['FieldValueUnknown', 'spec.extra']]);
  });

  it('says which checks it leaves to the server: CEL rules and formats it has no checker for', () => {
    expect(validator.validate(disk({ size: '1Gi', replicas: 50 })).valid).toBe(true); // the CEL rule would refuse it
    expect(validator.validate(disk({ size: '1Gi' })).unchecked).toEqual([
      'openAPIV3Schema.properties[spec].properties[mail].format: "email" (no local checker)',
      'openAPIV3Schema.properties[spec].x-kubernetes-validations[0]: CEL rule "self.replicas < 10" (server-only)',
    ]);
  });

  it('assert returns the stored object or throws SchemeError Invalid with the field errors', () => {
    expect(validator.assert(disk({ size: '1Gi' })).spec.replicas).toBe(1);
    try {
      validator.assert(disk({ size: '1' }));
      throw new Error('expected a throw');
    } catch (err) {
      expect(isSchemeError(err) && err.reason === 'Invalid').toBe(true);
      if (isSchemeError(err)) expect(err.fieldErrors.map((e) => e.field)).toEqual(['spec.size']);
    }
  });

  it('refuses kinds without a schema', () => {
    const Plain = defineKind({ group: 'v.kubeloop.dev', version: 'v1', kind: 'Plain' });
    expect(() => createValidator(Plain)).toThrow(/has no schema/);
  });
});

describe('checkDefaults', () => {
  it('finds defaults the API server would refuse', () => {
    expect(checkDefaults(Disk)).toEqual([]);
    const Bad = defineKind({
      group: 'v.kubeloop.dev', version: 'v1', kind: 'Bad', plural: 'bads', namespaced: true,
      schema: { spec: Type.Object({ mode: Type.String({ enum: ['a', 'b'], default: 'c' }), obj: Type.Optional(Type.Object({ x: Type.Integer() }, { default: { x: 1, y: 2 } })) }) },
    });
    const problems = checkDefaults(Bad);
    expect(problems.map((p) => p.path)).toEqual(['openAPIV3Schema.properties[spec].properties[mode].default', 'openAPIV3Schema.properties[spec].properties[obj].default']);
    expect(problems[0]!.detail).toContain('Unsupported value: "c"');
    expect(problems[1]!.detail).toContain('must not have unknown fields: spec.obj.y');
  });
});
