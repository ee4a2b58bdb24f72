import { describe, expect, it } from 'vitest';
import {
  formatGroupKind,
  formatGroupResource,
  formatGroupVersion,
  formatGroupVersionKind,
  formatGroupVersionResource,
  isSchemeError,
  parseApiVersion,
  parseGroupKind,
  parseGroupResource,
  parseGroupVersion,
  parseGroupVersionKind,
  parseGroupVersionResource,
  readGroupVersionKind,
} from '../src/index.js';
import type { SchemeError, SchemeErrorReason } from '../src/index.js';

function failure(fn: () => unknown): SchemeError {
  try {
    fn();
  } catch (err) {
    if (isSchemeError(err)) return err;
    throw err;
  }
  throw new Error('expected a SchemeError, nothing was thrown');
}

function expectInvalid(fn: () => unknown, reason: SchemeErrorReason, input: string, explanation: RegExp): void {
  const err = failure(fn);
  expect(err.reason).toBe(reason);
  expect(err.input).toBe(input);
  expect(err.message).toContain(JSON.stringify(input));
  expect(err.message).toMatch(explanation);
}

describe('group/version', () => {
  it.each([
    ['apps/v1', { group: 'apps', version: 'v1' }],
    ['v1', { group: '', version: 'v1' }],
    ['crd-demo.io/v1', { group: 'crd-demo.io', version: 'v1' }],
    ['coordination.k8s.io/v1', { group: 'coordination.k8s.io', version: 'v1' }],
    ['autoscaling/v2beta2', { group: 'autoscaling', version: 'v2beta2' }],
    ['example.com/my-version', { group: 'example.com', version: 'my-version' }],
  ])('parses %j', (text, expected) => {
    const gv = parseGroupVersion(text);
    expect(gv).toEqual(expected);
    expect(Object.isFrozen(gv)).toBe(true);
    expect(formatGroupVersion(gv)).toBe(text);
  });

  it.each([
    ['', /must not be empty/],
    ['apps/v1/extra', /found 2 slashes/],
    ['a/b/c/d', /found 3 slashes/],
    ['/v1', /core group is written without a slash \(e\.g\. "v1"\)/],
    ['apps/', /version after "\/" is empty/],
    ['/', /group is empty/],
    ['Apps/v1', /group "Apps" must be a lowercase DNS subdomain/],
    ['apps/V1', /version "V1" must be a lowercase DNS label/],
    ['apps/1', /version "1" must be a lowercase DNS label starting with a letter/],
    ['apps /v1', /group "apps " must be/],
    ['apps/v1 ', /version "v1 " must be/],
    ['-apps/v1', /group "-apps"/],
    ['apps./v1', /group "apps\."/],
    ['a..b/v1', /group "a\.\.b"/],
    ['my_group/v1', /group "my_group"/],
    [`${'a'.repeat(254)}/v1`, /longer than 253 characters/],
    [`apps/v${'1'.repeat(63)}`, /longer than 63 characters/],
  ])('refuses %j', (text, explanation) => {
    expectInvalid(() => parseGroupVersion(text), 'InvalidGroupVersion', text, explanation);
  });

  it('formats only valid parts', () => {
    expectInvalid(() => formatGroupVersion({ group: 'Apps', version: 'v1' }), 'InvalidGroupVersion', 'Apps/v1', /group "Apps"/);
    expectInvalid(() => formatGroupVersion({ group: '', version: '' }), 'InvalidGroupVersion', '', /version must not be empty/);
  });

  it('parses the apiVersion field of objects, whatever it holds', () => {
    expect(parseApiVersion('apps/v1')).toEqual({ group: 'apps', version: 'v1' });
    expect(parseApiVersion('v1')).toEqual({ group: '', version: 'v1' });
    expect(failure(() => parseApiVersion(undefined)).message).toBe('invalid apiVersion: expected a string, got undefined');
    expect(failure(() => parseApiVersion(42)).reason).toBe('InvalidGroupVersion');
    expect(failure(() => parseApiVersion({ group: 'apps' })).message).toContain('got an object');
    expectInvalid(() => parseApiVersion('apps/v1/x'), 'InvalidGroupVersion', 'apps/v1/x', /invalid apiVersion "apps\/v1\/x"/);
  });
});

describe('group/version/kind', () => {
  it.each([
    ['Deployment.v1.apps', { group: 'apps', version: 'v1', kind: 'Deployment' }],
    ['Pod.v1', { group: '', version: 'v1', kind: 'Pod' }],
    ['HardDisk.v1.crd-demo.io', { group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' }],
    ['Lease.v1.coordination.k8s.io', { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease' }],
    ['HardDisk.v1beta1.crd-demo.io', { group: 'crd-demo.io', version: 'v1beta1', kind: 'HardDisk' }],
  ])('parses %j and formats it back', (text, expected) => {
    const gvk = parseGroupVersionKind(text);
    expect(gvk).toEqual(expected);
    expect(Object.isFrozen(gvk)).toBe(true);
    expect(formatGroupVersionKind(gvk)).toBe(text);
  });

  it.each([
    ['', /must not be empty/],
    ['Deployment', /expected "Name\.version\.group"/],
    ['Deployment.apps', /"apps" is not a version.*use parseGroupKind/],
    ['.v1.apps', /kind must not be empty/],
    ['Deployment..apps', /version must not be empty/],
    ['Deployment.v1.apps.', /empty part/],
    ['Deployment.v1..io', /empty part/],
    ['Deployment.v1.Apps', /group "Apps"/],
    ['Deployment.V1.apps', /version "V1"/],
    ['Deploy ment.v1.apps', /kind "Deploy ment"/],
    ['1Deployment.v1.apps', /kind "1Deployment" must start with a letter/],
  ])('refuses %j', (text, explanation) => {
    expectInvalid(() => parseGroupVersionKind(text), 'InvalidKind', text, explanation);
  });

  it('formats only valid parts', () => {
    expectInvalid(() => formatGroupVersionKind({ group: 'apps', version: 'v1', kind: '' }), 'InvalidKind', '.v1.apps', /kind must not be empty/);
  });
});

describe('group/kind', () => {
  it.each([
    ['Deployment.apps', { group: 'apps', kind: 'Deployment' }],
    ['Pod', { group: '', kind: 'Pod' }],
    ['HardDisk.crd-demo.io', { group: 'crd-demo.io', kind: 'HardDisk' }],
  ])('parses %j and formats it back', (text, expected) => {
    expect(parseGroupKind(text)).toEqual(expected);
    expect(formatGroupKind(parseGroupKind(text))).toBe(text);
  });

  it.each([
    ['', /must not be empty/],
    ['Deployment.', /group after "\." is empty/],
    ['.apps', /kind must not be empty/],
    ['Deployment.Apps', /group "Apps"/],
    ['Deployment.apps..io', /group "apps\.\.io"/],
  ])('refuses %j', (text, explanation) => {
    expectInvalid(() => parseGroupKind(text), 'InvalidKind', text, explanation);
  });
});

describe('group/version/resource and group/resource', () => {
  it('parses and formats the kubectl forms', () => {
    expect(parseGroupVersionResource('deployments.v1.apps')).toEqual({ group: 'apps', version: 'v1', resource: 'deployments' });
    expect(parseGroupVersionResource('pods.v1')).toEqual({ group: '', version: 'v1', resource: 'pods' });
    expect(formatGroupVersionResource({ group: 'crd-demo.io', version: 'v1', resource: 'harddisks' })).toBe('harddisks.v1.crd-demo.io');
    expect(formatGroupVersionResource({ group: '', version: 'v1', resource: 'endpoints' })).toBe('endpoints.v1');
    expect(parseGroupResource('leases.coordination.k8s.io')).toEqual({ group: 'coordination.k8s.io', resource: 'leases' });
    expect(parseGroupResource('pods')).toEqual({ group: '', resource: 'pods' });
    expect(formatGroupResource({ group: 'apps', resource: 'deployments' })).toBe('deployments.apps');
    expect(formatGroupResource({ group: '', resource: 'nodes' })).toBe('nodes');
  });

  it('refuses malformed resources', () => {
    expectInvalid(() => parseGroupVersionResource('Deployments.v1.apps'), 'InvalidResource', 'Deployments.v1.apps', /resource "Deployments" must be a lowercase/);
    expectInvalid(() => parseGroupVersionResource('deployments.apps'), 'InvalidResource', 'deployments.apps', /use parseGroupResource/);
    expectInvalid(() => parseGroupResource('Pods'), 'InvalidResource', 'Pods', /resource "Pods"/);
    expectInvalid(() => parseGroupResource(''), 'InvalidResource', '', /must not be empty/);
    expectInvalid(() => formatGroupResource({ group: 'apps', resource: 'de_ployments' }), 'InvalidResource', 'de_ployments.apps', /resource "de_ployments"/);
  });
});

describe('readGroupVersionKind', () => {
  it('reads apiVersion and kind of a plain object', () => {
    expect(readGroupVersionKind({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } })).toEqual({
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
    });
    expect(readGroupVersionKind({ apiVersion: 'v1', kind: 'PodList', items: [] })).toEqual({ group: '', version: 'v1', kind: 'PodList' });
  });

  it('says what is missing or malformed', () => {
    expect(failure(() => readGroupVersionKind(null)).message).toBe('expected a Kubernetes object with apiVersion and kind, got null');
    expect(failure(() => readGroupVersionKind([])).reason).toBe('InvalidObject');
    expect(failure(() => readGroupVersionKind('Pod')).message).toContain('got "Pod"');
    expect(failure(() => readGroupVersionKind({ apiVersion: 'v1' })).message).toBe('object has no string kind (apiVersion: "v1", kind: undefined)');
    expect(failure(() => readGroupVersionKind({ kind: 'Pod', apiVersion: 1 })).message).toBe('object has no string apiVersion (apiVersion: 1, kind: "Pod")');
    expect(failure(() => readGroupVersionKind({})).message).toContain('no string apiVersion and kind');
    expect(failure(() => readGroupVersionKind({ apiVersion: 'Apps/v1', kind: 'Deployment' })).reason).toBe('InvalidGroupVersion');
    expectInvalid(() => readGroupVersionKind({ apiVersion: 'apps/v1', kind: 'Deploy ment' }), 'InvalidKind', 'Deploy ment', /kind "Deploy ment"/);
  });
});
