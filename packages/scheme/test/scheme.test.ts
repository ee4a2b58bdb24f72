import { describe, expect, it } from 'vitest';
import {
  ConfigMap,
  Deployment,
  Pod,
  Secret,
  builtinScheme,
  corev1,
  createScheme,
  createSchemeBuilder,
  defineKind,
  describeDescriptor,
  eventsv1,
  isScheme,
  isSchemeError,
} from '../src/index.js';
import type { ResourceDescriptor, Scheme, SchemeError } from '../src/index.js';
import { HardDisk, generatedKind } from './fixtures.js';

function failure(fn: () => unknown): SchemeError {
  try {
    fn();
  } catch (err) {
    if (isSchemeError(err)) return err;
    throw err;
  }
  throw new Error('expected a SchemeError, nothing was thrown');
}

const HardDiskV1beta1 = defineKind<HardDisk>({ ...HardDisk, version: 'v1beta1' });

describe('recognising plain objects', () => {
  const scheme = builtinScheme.extend(HardDisk);

  it('maps apiVersion/kind to the registered descriptor', () => {
    expect(scheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', spec: { sizeGiB: 10 } })).toBe(HardDisk);
    expect(scheme.recognize({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' } })).toBe(Pod);
    expect(scheme.recognize({ apiVersion: 'apps/v1', kind: 'Deployment' })).toBe(Deployment);
    expect(scheme.recognize({ apiVersion: 'v1', kind: 'Event' })).toBe(corev1.Event);
    expect(scheme.recognize({ apiVersion: 'events.k8s.io/v1', kind: 'Event' })).toBe(eventsv1.Event);
  });

  it('recognises a list as the list of its item kind, and only through recognizeList', () => {
    const list = { apiVersion: 'crd-demo.io/v1', kind: 'HardDiskList', metadata: { resourceVersion: '7' }, items: [] };
    expect(scheme.recognizeList(list)).toBe(HardDisk);
    expect(scheme.recognize(list)).toBeUndefined();
    expect(scheme.recognizeList({ apiVersion: 'v1', kind: 'EndpointsList', items: [] })).toBe(corev1.Endpoints);
    expect(scheme.recognizeList({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' })).toBeUndefined();
  });

  it('gives the group/version/kind of registered kinds and list kinds', () => {
    expect(scheme.gvkOf({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' })).toEqual({ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' });
    expect(scheme.gvkOf({ apiVersion: 'crd-demo.io/v1', kind: 'HardDiskList' })).toEqual({ group: 'crd-demo.io', version: 'v1', kind: 'HardDiskList' });
    expect(scheme.gvkOf({ apiVersion: 'v1', kind: 'PodList' })).toEqual({ group: '', version: 'v1', kind: 'PodList' });
    expect(scheme.gvkOf({ apiVersion: 'crd-demo.io/v2', kind: 'HardDisk' })).toBeUndefined();
  });

  it.each([
    ['an unknown kind', { apiVersion: 'crd-demo.io/v1', kind: 'SoftDisk' }],
    ['a known kind at an unknown version', { apiVersion: 'crd-demo.io/v2', kind: 'HardDisk' }],
    ['a known kind in the wrong group', { apiVersion: 'v1', kind: 'Deployment' }],
    ['a non-canonical apiVersion', { apiVersion: '/v1', kind: 'Pod' }],
    ['a kind in the wrong case', { apiVersion: 'v1', kind: 'pod' }],
    ['no kind', { apiVersion: 'v1' }],
    ['no apiVersion', { kind: 'Pod' }],
    ['a numeric kind', { apiVersion: 'v1', kind: 1 }],
    ['null', null],
    ['a string', 'v1 Pod'],
    ['an array', [{ apiVersion: 'v1', kind: 'Pod' }]],
    ['apiVersion and kind swapped around a space', { apiVersion: 'v1 Pod', kind: '' }],
  ])('answers undefined, without throwing, for %s', (_label, obj) => {
    expect(scheme.recognize(obj)).toBeUndefined();
    expect(scheme.recognizeList(obj)).toBeUndefined();
    expect(scheme.gvkOf(obj)).toBeUndefined();
  });
});

describe('lookups', () => {
  const scheme = createScheme(builtinScheme, HardDisk, HardDiskV1beta1);

  it('finds a descriptor by group/version/kind, by group/kind and by resource', () => {
    expect(scheme.lookup({ group: 'crd-demo.io', version: 'v1beta1', kind: 'HardDisk' })).toBe(HardDiskV1beta1);
    expect(scheme.lookup({ group: 'coordination.k8s.io', version: 'v1', kind: 'Lease' })?.plural).toBe('leases');
    expect(scheme.lookup({ group: 'crd-demo.io', version: 'v2', kind: 'HardDisk' })).toBeUndefined();
    expect(scheme.lookupGroupKind({ group: 'crd-demo.io', kind: 'HardDisk' })).toEqual([HardDisk, HardDiskV1beta1]);
    expect(scheme.lookupGroupKind({ group: '', kind: 'Pod' })).toEqual([Pod]);
    expect(scheme.lookupGroupKind({ group: 'crd-demo.io', kind: 'SoftDisk' })).toEqual([]);
    expect(scheme.lookupResource({ group: 'crd-demo.io', version: 'v1', resource: 'harddisks' })).toBe(HardDisk);
    expect(scheme.lookupResource({ group: '', version: 'v1', resource: 'endpoints' })).toBe(corev1.Endpoints);
    expect(scheme.lookupResource({ group: '', version: 'v1', resource: 'pod' })).toBeUndefined();
  });

  it('lists kinds, descriptors and group/versions in registration order', () => {
    const small = createScheme(Pod, HardDisk, Secret, HardDiskV1beta1);
    expect(small.size).toBe(4);
    expect(small.kinds()).toEqual([
      { group: '', version: 'v1', kind: 'Pod' },
      { group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' },
      { group: '', version: 'v1', kind: 'Secret' },
      { group: 'crd-demo.io', version: 'v1beta1', kind: 'HardDisk' },
    ]);
    expect(small.descriptors()).toEqual([Pod, HardDisk, Secret, HardDiskV1beta1]);
    expect(small.groupVersions()).toEqual([
      { group: '', version: 'v1' },
      { group: 'crd-demo.io', version: 'v1' },
      { group: 'crd-demo.io', version: 'v1beta1' },
    ]);
  });

  it('knows a descriptor by what it says', () => {
    expect(scheme.has(HardDisk)).toBe(true);
    expect(scheme.has(defineKind({ ...HardDisk }))).toBe(true);
    expect(scheme.has(defineKind({ ...HardDisk, plural: 'disks' }))).toBe(false);
    expect(scheme.has(generatedKind(1))).toBe(false);
  });
});

describe('registration', () => {
  it('is idempotent for the same descriptor and for a structurally identical one', () => {
    const copy = defineKind<HardDisk>({ ...HardDisk });
    const builder = createSchemeBuilder().register(Pod, HardDisk).register(HardDisk).register(copy);
    builder.addKnownTypes('crd-demo.io/v1', HardDisk);
    builder.include(createScheme(Pod, HardDisk));
    const scheme = builder.build();
    expect(scheme.size).toBe(2);
    expect(scheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' })).toBe(HardDisk);
    expect(JSON.stringify(scheme.extend(copy, Pod))).toBe(JSON.stringify(scheme));
  });

  it('accepts a plain descriptor-shaped object and keeps a frozen copy of it', () => {
    const plain = { group: 'crd-demo.io', version: 'v1', kind: 'SoftDisk', apiVersion: 'crd-demo.io/v1', plural: 'softdisks' };
    const scheme = createScheme(plain);
    const stored = scheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'SoftDisk' });
    expect(stored).toEqual(plain);
    expect(stored).not.toBe(plain);
    expect(Object.isFrozen(stored)).toBe(true);
    plain.plural = 'changed';
    expect(stored?.plural).toBe('softdisks');
  });

  it('refuses a descriptor whose apiVersion contradicts its group and version', () => {
    const forged = { ...HardDisk, version: 'v2' } as ResourceDescriptor;
    const err = failure(() => createSchemeBuilder().register(forged));
    expect(err.reason).toBe('InvalidDescriptor');
    expect(err.message).toContain('apiVersion "crd-demo.io/v1" does not match group "crd-demo.io" and version "v2"');
  });

  it('refuses the same group/version/kind with a different descriptor, naming both', () => {
    const other = defineKind({ ...HardDisk, plural: 'disks', namespaced: false });
    const builder = createSchemeBuilder().register(HardDisk);
    const err = failure(() => builder.register(other));
    expect(err.reason).toBe('Conflict');
    expect(err.input).toBe('HardDisk.v1.crd-demo.io');
    expect(err.message).toBe(
      'conflicting registration of HardDisk.v1.crd-demo.io (plural disks, cluster-scoped, list HardDiskList): ' +
        'HardDisk.v1.crd-demo.io is already registered as HardDisk.v1.crd-demo.io (plural harddisks, namespaced, list HardDiskList)',
    );
    expect(builder.build().recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' })).toBe(HardDisk);
  });

  it('refuses one descriptor under a second group/version/kind, naming both', () => {
    const err = failure(() => createSchemeBuilder().addKnownTypes({ group: 'crd-demo.io', version: 'v2' }, HardDisk));
    expect(err.reason).toBe('Conflict');
    expect(err.message).toContain(describeDescriptor(HardDisk));
    expect(err.message).toContain('known as both HardDisk.v1.crd-demo.io and HardDisk.v2.crd-demo.io');
    expect(failure(() => createSchemeBuilder().addKnownTypes('apps/v1', Pod)).message).toContain('Pod.v1 and Pod.v1.apps');
    expect(failure(() => createSchemeBuilder().addKnownTypes('apps//v1', Deployment)).reason).toBe('InvalidGroupVersion');
    expect(createSchemeBuilder().addKnownTypes('apps/v1', Deployment).build().size).toBe(1);
  });

  it('refuses two kinds that claim the same resource', () => {
    const impostor = defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'Disk', plural: 'harddisks' });
    const err = failure(() => createScheme(HardDisk, impostor));
    expect(err.reason).toBe('Conflict');
    expect(err.message).toBe(
      'conflicting registration of Disk.v1.crd-demo.io (plural harddisks, scope unknown, list none): ' +
        'resource harddisks.v1.crd-demo.io is already served by HardDisk.v1.crd-demo.io (plural harddisks, namespaced, list HardDiskList)',
    );
  });

  it('refuses list kinds that collide with kinds or with other list kinds', () => {
    const listAsKind = defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'HardDiskList' });
    expect(failure(() => createScheme(HardDisk, listAsKind)).message).toContain(
      'HardDiskList.v1.crd-demo.io is already the list kind of HardDisk.v1.crd-demo.io',
    );
    expect(failure(() => createScheme(listAsKind, HardDisk)).message).toContain(
      'its list kind HardDiskList is already registered as HardDiskList.v1.crd-demo.io',
    );
    const sameList = defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'Disk', listKind: 'HardDiskList' });
    const err = failure(() => createScheme(HardDisk, sameList));
    expect(err.reason).toBe('Conflict');
    expect(err.message).toContain('its list kind HardDiskList is already the list kind of HardDisk.v1.crd-demo.io');
  });

  it('applies a call entirely or not at all', () => {
    const conflicting = defineKind({ ...Pod, plural: 'pod' });
    const builder = createSchemeBuilder().register(Pod);
    expect(failure(() => builder.register(ConfigMap, HardDisk, conflicting)).reason).toBe('Conflict');
    expect(builder.descriptors()).toEqual([Pod]);
    expect(failure(() => builder.include(createScheme(ConfigMap), createScheme(conflicting))).reason).toBe('Conflict');
    expect(builder.build().kinds()).toEqual([{ group: '', version: 'v1', kind: 'Pod' }]);
  });

  it('refuses every registration into a frozen builder, with a message that says what to do', () => {
    const shared = createSchemeBuilder().register(HardDisk).freeze();
    expect(shared.frozen).toBe(true);
    const err = failure(() => shared.register(Pod));
    expect(err.reason).toBe('Frozen');
    expect(err.message).toBe(
      'cannot register Pod.v1: this SchemeBuilder is frozen because it is shared. ' +
        'Build a scheme and extend(...) it, or include(...) the builder in a new one from createSchemeBuilder()',
    );
    expect(failure(() => shared.register(HardDisk)).reason).toBe('Frozen');
    expect(failure(() => shared.addKnownTypes('crd-demo.io/v1', HardDisk)).reason).toBe('Frozen');
    expect(failure(() => shared.include(builtinScheme)).reason).toBe('Frozen');
    expect(shared.descriptors()).toEqual([HardDisk]);
    // Building from it, and building on it elsewhere, still work.
    expect(shared.build().size).toBe(1);
    expect(createSchemeBuilder().include(shared).register(Pod).build().size).toBe(2);
  });
});

describe('immutability', () => {
  function snapshot(scheme: Scheme): string {
    return JSON.stringify(scheme);
  }

  it('freezes a built scheme, its prototype and everything it returns', () => {
    const scheme = builtinScheme.extend(HardDisk);
    expect(Object.isFrozen(scheme)).toBe(true);
    expect(Object.isFrozen(Object.getPrototypeOf(scheme))).toBe(true);
    for (const list of [scheme.kinds(), scheme.descriptors(), scheme.groupVersions(), scheme.lookupGroupKind({ group: '', kind: 'Pod' })]) {
      expect(Object.isFrozen(list)).toBe(true);
    }
    expect(scheme.kinds().every((gvk) => Object.isFrozen(gvk))).toBe(true);
    expect(scheme.descriptors().every((d) => Object.isFrozen(d))).toBe(true);
  });

  it('rejects attempts to change a built scheme', () => {
    const scheme = builtinScheme.extend(HardDisk);
    const before = snapshot(scheme);
    const loose = scheme as unknown as Record<string, unknown>;
    expect(() => (scheme.kinds() as unknown as unknown[]).push({ group: 'x', version: 'v1', kind: 'X' })).toThrow(TypeError);
    expect(() => (scheme.descriptors() as unknown as unknown[]).pop()).toThrow(TypeError);
    expect(() => (scheme.lookupGroupKind({ group: 'x', kind: 'Y' }) as unknown as unknown[]).push(HardDisk)).toThrow(TypeError);
    expect(() => {
      loose.recognize = () => HardDisk;
    }).toThrow(TypeError);
    expect(() => {
      loose.size = 0;
    }).toThrow(TypeError);
    expect(() => {
      loose.register = () => undefined;
    }).toThrow(TypeError);
    const prototype = Object.getPrototypeOf(scheme) as object;
    expect(() => {
      Object.defineProperty(prototype, 'recognize', { value: () => HardDisk });
    }).toThrow(TypeError);
    expect('register' in scheme).toBe(false);
    expect(snapshot(scheme)).toBe(before);
    expect(scheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' })).toBe(HardDisk);
  });

  it('extends into a new scheme and leaves the old one as it was', () => {
    const base = createScheme(Pod);
    const before = snapshot(base);
    const extended = base.extend(HardDisk, createScheme(Secret));
    expect(extended).not.toBe(base);
    expect(extended.size).toBe(3);
    expect(base.size).toBe(1);
    expect(base.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' })).toBeUndefined();
    expect(snapshot(base)).toBe(before);
    // A failed extend changes nothing either.
    expect(failure(() => extended.extend(generatedKind(1), defineKind({ ...HardDisk, plural: 'disks' }))).reason).toBe('Conflict');
    expect(extended.size).toBe(3);
  });

  it('does not change schemes already built when the builder registers more', () => {
    const builder = createSchemeBuilder().register(Pod);
    const first = builder.build();
    const before = snapshot(first);
    builder.register(HardDisk, generatedKind(1));
    const second = builder.build();
    expect(first.size).toBe(1);
    expect(first.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' })).toBeUndefined();
    expect(snapshot(first)).toBe(before);
    expect(second.size).toBe(3);
  });

  it('includes a builder as it is now, not as it will be', () => {
    const part = createSchemeBuilder().register(Pod);
    const whole = createSchemeBuilder().include(part);
    part.register(HardDisk);
    expect(whole.build().size).toBe(1);
    expect(part.build().size).toBe(2);
  });

  it('keeps builtinScheme unchanged whatever is built from it', () => {
    const before = snapshot(builtinScheme);
    builtinScheme.extend(HardDisk);
    createSchemeBuilder().include(builtinScheme).register(HardDiskV1beta1).build();
    expect(snapshot(builtinScheme)).toBe(before);
    expect(builtinScheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' })).toBeUndefined();
  });
});

describe('serialisation and identity', () => {
  it('serialises deterministically, whatever the registration order', () => {
    const a = createScheme(HardDisk, Pod, HardDiskV1beta1, Deployment);
    const b = createScheme(Deployment, HardDiskV1beta1, Pod, HardDisk);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(a.toJSON().kinds.map((k) => `${k.group}/${k.version}/${k.kind}`)).toEqual([
      '/v1/Pod',
      'apps/v1/Deployment',
      'crd-demo.io/v1/HardDisk',
      'crd-demo.io/v1beta1/HardDisk',
    ]);
    expect(createScheme(defineKind({ group: 'x.io', version: 'v1', kind: 'Bare' })).toJSON()).toEqual({
      kinds: [{ group: 'x.io', version: 'v1', kind: 'Bare' }],
    });
  });

  it('tells schemes from other values', () => {
    expect(isScheme(builtinScheme)).toBe(true);
    expect(isScheme(createSchemeBuilder())).toBe(false);
    expect(isScheme(Pod)).toBe(false);
    expect(isScheme({ recognize: () => undefined })).toBe(false);
    expect(isScheme(null)).toBe(false);
  });

  it('builds one scheme from descriptors, schemes and builders together', () => {
    const scheme = createScheme(createScheme(Pod), createSchemeBuilder().register(Secret), HardDisk);
    expect(scheme.descriptors()).toEqual([Pod, Secret, HardDisk]);
  });
});
