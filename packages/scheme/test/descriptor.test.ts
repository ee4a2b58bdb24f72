import { describe, expect, it } from 'vitest';
import { Pod, createSchemeBuilder, defineKind, describeDescriptor, isSchemeError, sameDescriptor } from '../src/index.js';
import type { KindDefinition, SchemeError } from '../src/index.js';
import { HardDisk } from './fixtures.js';

function failure(fn: () => unknown): SchemeError {
  try {
    fn();
  } catch (err) {
    if (isSchemeError(err)) return err;
    throw err;
  }
  throw new Error('expected a SchemeError, nothing was thrown');
}

describe('defineKind', () => {
  it('declares the seed custom resource as a frozen descriptor', () => {
    expect(HardDisk).toEqual({
      group: 'crd-demo.io',
      version: 'v1',
      kind: 'HardDisk',
      apiVersion: 'crd-demo.io/v1',
      plural: 'harddisks',
      namespaced: true,
      listKind: 'HardDiskList',
    });
    expect(Object.isFrozen(HardDisk)).toBe(true);
  });

  it('leaves unknown facts out instead of guessing them', () => {
    const d = defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' });
    expect(Object.keys(d)).toEqual(['group', 'version', 'kind', 'apiVersion']);
    expect(d.plural).toBeUndefined();
    expect(d.namespaced).toBeUndefined();
    expect(d.listKind).toBeUndefined();
  });

  it('derives apiVersion, without a slash for the core group', () => {
    expect(defineKind({ group: '', version: 'v1', kind: 'Pod' }).apiVersion).toBe('v1');
    expect(defineKind({ group: 'apps', version: 'v1', kind: 'Deployment' }).apiVersion).toBe('apps/v1');
  });

  it('declares another version of a kind from a copy of its descriptor', () => {
    const v1beta1 = defineKind<HardDisk>({ ...HardDisk, version: 'v1beta1' });
    expect(v1beta1.apiVersion).toBe('crd-demo.io/v1beta1');
    expect(v1beta1.plural).toBe('harddisks');
  });

  it('keeps only the descriptor fields of its input and does not alias it', () => {
    const input = { group: 'crd-demo.io', version: 'v1', kind: 'HardDisk', plural: 'harddisks', extra: 'ignored' } as KindDefinition;
    const d = defineKind(input);
    expect(d).not.toBe(input);
    expect('extra' in d).toBe(false);
    (input as { plural: string }).plural = 'changed';
    expect(d.plural).toBe('harddisks');
  });

  it('cannot be changed after the fact', () => {
    expect(() => {
      (HardDisk as { plural: string }).plural = 'disks';
    }).toThrow(TypeError);
    expect(() => Object.defineProperty(HardDisk, 'namespaced', { value: false })).toThrow(TypeError);
    expect(HardDisk.plural).toBe('harddisks');
    expect(HardDisk.namespaced).toBe(true);
  });

  it.each([
    [{ group: 'Crd-Demo.io', version: 'v1', kind: 'HardDisk' }, /HardDisk\.v1\.Crd-Demo\.io: group "Crd-Demo\.io"/],
    [{ group: 'crd-demo.io', version: 'V1', kind: 'HardDisk' }, /version "V1"/],
    [{ group: 'crd-demo.io', version: 'v1', kind: 'Hard Disk' }, /kind "Hard Disk"/],
    [{ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk', plural: 'HardDisks' }, /plural: resource "HardDisks"/],
    [{ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk', namespaced: 'yes' }, /namespaced must be true or false, got "yes"/],
    [{ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk', listKind: 'HardDisk' }, /listKind must differ from the kind "HardDisk"/],
    [{ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk', listKind: 'Hard-Disk-List-' }, /listKind: kind "Hard-Disk-List-"/],
    [{ group: 'crd-demo.io', version: 1, kind: 'HardDisk' }, /version must be a string, got 1/],
  ])('refuses a malformed definition %j', (definition, explanation) => {
    const err = failure(() => defineKind(definition as unknown as KindDefinition));
    expect(err.reason).toBe('InvalidDescriptor');
    expect(err.message).toMatch(/^invalid resource descriptor /);
    expect(err.message).toMatch(explanation);
  });
});

describe('sameDescriptor and describeDescriptor', () => {
  it('compares what a descriptor says, not its identity', () => {
    expect(sameDescriptor(HardDisk, defineKind({ ...HardDisk }))).toBe(true);
    expect(sameDescriptor(HardDisk, defineKind({ ...HardDisk, plural: 'disks' }))).toBe(false);
    expect(sameDescriptor(HardDisk, defineKind({ ...HardDisk, namespaced: false }))).toBe(false);
    expect(sameDescriptor(HardDisk, defineKind({ ...HardDisk, version: 'v2' }))).toBe(false);
    expect(sameDescriptor(HardDisk, defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' }))).toBe(false);
  });

  it('names a descriptor and what it says in one line', () => {
    expect(describeDescriptor(HardDisk)).toBe('HardDisk.v1.crd-demo.io (plural harddisks, namespaced, list HardDiskList)');
    expect(describeDescriptor(Pod)).toBe('Pod.v1 (plural pods, namespaced, list PodList)');
    expect(describeDescriptor(defineKind({ group: 'x.io', version: 'v1', kind: 'Thing', namespaced: false }))).toBe(
      'Thing.v1.x.io (plural unknown, cluster-scoped, list none)',
    );
    expect(describeDescriptor(defineKind({ group: 'x.io', version: 'v1', kind: 'Thing' }))).toBe('Thing.v1.x.io (plural unknown, scope unknown, list none)');
  });
});

describe('defineKind with a schema', () => {
  const spec = { type: 'object', properties: { size: { type: 'string' } } };
  const define = (extra: Record<string, unknown> = {}) =>
    defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'Schemed', plural: 'scheds', namespaced: true, schema: { spec }, ...extra } as never);

  it('carries the schema, frozen, with apiVersion, kind and metadata added and listKind defaulted', () => {
    const d = define();
    expect(d.listKind).toBe('SchemedList');
    expect(d.schema?.openAPIV3Schema).toEqual({
      type: 'object',
      properties: { apiVersion: { type: 'string', description: 'The group/version of this object.' }, kind: { type: 'string', description: 'The kind of this object.' }, metadata: { type: 'object' }, spec },
      required: ['spec'],
    });
    expect(Object.isFrozen(d.schema) && Object.isFrozen(d.schema?.openAPIV3Schema)).toBe(true);
  });

  it('compares schemas when comparing descriptors, and a scheme says when only the schema differs', () => {
    expect(sameDescriptor(define(), define())).toBe(true);
    const twice = createSchemeBuilder().register(define()).register(define()).build();
    expect(twice.lookup({ group: 'crd-demo.io', version: 'v1', kind: 'Schemed' })?.schema).toBeDefined();
    const clash = failure(() => createSchemeBuilder().register(define()).register(defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'Schemed', plural: 'scheds', namespaced: true, listKind: 'SchemedList' })));
    expect(clash.reason).toBe('Conflict');
    expect(clash.message).toContain('(one has a schema, the other not)');
    const other = defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'Schemed', plural: 'scheds', namespaced: true, schema: { spec: { type: 'object' } } } as never);
    expect(sameDescriptor(define(), other)).toBe(false);
  });

  it('refuses what a CRD could not be', () => {
    expect(failure(() => defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'S', namespaced: true, schema: {} } as never)).message).toContain('needs its plural');
    expect(failure(() => defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'S', plural: 's', schema: {} } as never)).message).toContain('needs namespaced');
    expect(failure(() => define({ schema: { metadata: { type: 'object' } } })).message).toContain('must not define "metadata"');
    expect(failure(() => define({ schema: { spec: 'text' } })).message).toContain('schema.spec must be a schema object');
    expect(failure(() => define({ schema: { spec: { type: 'object', default: 10n } } })).message).toContain('is not JSON');
  });
});
