/**
 * Group, version, kind and resource names: the types, and parsing and
 * formatting of their text forms (`apps/v1`, `v1`, `Deployment.v1.apps`,
 * `Deployment.apps`, `deployments.v1.apps`), with typed errors for malformed
 * input.
 *
 * Text forms:
 *
 * | type                   | form                          | core group form |
 * | ---------------------- | ----------------------------- | --------------- |
 * | `GroupVersion`         | `group/version` (`apps/v1`)   | `v1`            |
 * | `GroupVersionKind`     | `Kind.version.group`          | `Kind.v1`       |
 * | `GroupKind`            | `Kind.group`                  | `Kind`          |
 * | `GroupVersionResource` | `resource.version.group`      | `resource.v1`   |
 * | `GroupResource`        | `resource.group`              | `resource`      |
 *
 * Every parsed value is a frozen object.
 */
import { SchemeError } from './errors.js';
import type { SchemeErrorReason } from './errors.js';
import { groupProblem, isKubeVersion, kindProblem, resourceProblem, show, versionProblem } from './internal/names.js';

/** An API group and one of its versions. The core group is `''`. */
export interface GroupVersion {
  /** The API group: `''` for the core group, else a DNS subdomain such as `apps`. */
  readonly group: string;
  /** The version, such as `v1` or `v1beta1`. */
  readonly version: string;
}

/** A kind in an API group, without a version. */
export interface GroupKind {
  /** The API group: `''` for the core group. */
  readonly group: string;
  /** The kind, such as `Deployment`. */
  readonly kind: string;
}

/** A kind at one version of its API group: what `apiVersion` + `kind` of an object name. */
export interface GroupVersionKind extends GroupVersion {
  /** The kind, such as `Deployment`. */
  readonly kind: string;
}

/** A resource (the plural in REST paths) in an API group, without a version. */
export interface GroupResource {
  /** The API group: `''` for the core group. */
  readonly group: string;
  /** The resource, such as `deployments`. */
  readonly resource: string;
}

/** A resource at one version of its API group: what a REST path names. */
export interface GroupVersionResource extends GroupVersion {
  /** The resource, such as `deployments`. */
  readonly resource: string;
}

function invalid(reason: SchemeErrorReason, what: string, input: string, problem: string): SchemeError {
  return new SchemeError(reason, `invalid ${what} ${JSON.stringify(input)}: ${problem}`, { input });
}

function requireText(reason: SchemeErrorReason, what: string, text: unknown): string {
  if (typeof text !== 'string') {
    throw new SchemeError(reason, `invalid ${what}: expected a string, got ${show(text)}`, { input: show(text) });
  }
  if (text === '') throw invalid(reason, what, text, `${what} must not be empty`);
  return text;
}

function checkGroupVersion(what: string, input: string, group: string, version: string): void {
  const problem = groupProblem(group) ?? versionProblem(version);
  if (problem !== undefined) throw invalid('InvalidGroupVersion', what, input, problem);
}

function splitGroupVersion(what: string, text: string): GroupVersion {
  const parts = text.split('/');
  if (parts.length > 2) {
    throw invalid('InvalidGroupVersion', what, text, `expected "group/version" or "version", found ${parts.length - 1} slashes`);
  }
  if (parts.length === 1) {
    checkGroupVersion(what, text, '', text);
    return Object.freeze({ group: '', version: text });
  }
  const [group = '', version = ''] = parts;
  if (group === '') {
    throw invalid('InvalidGroupVersion', what, text, `the group is empty; the core group is written without a slash (e.g. "${version || 'v1'}")`);
  }
  if (version === '') throw invalid('InvalidGroupVersion', what, text, 'the version after "/" is empty');
  checkGroupVersion(what, text, group, version);
  return Object.freeze({ group, version });
}

/**
 * Parses `group/version` (`apps/v1`) or a bare version (`v1`, the core group).
 *
 * @throws {@link SchemeError} `InvalidGroupVersion` for empty input, more than
 * one slash, an empty group or version, or a group or version that breaks the
 * API's naming rules (uppercase, spaces, ...). The message quotes the input.
 *
 * @example
 * ```ts
 * parseGroupVersion('apps/v1'); // { group: 'apps', version: 'v1' }
 * parseGroupVersion('v1');      // { group: '', version: 'v1' }
 * ```
 */
export function parseGroupVersion(text: string): GroupVersion {
  return splitGroupVersion('group/version', requireText('InvalidGroupVersion', 'group/version', text));
}

/**
 * Parses the `apiVersion` field of an object, which may be anything when the
 * object came from outside: same grammar as {@link parseGroupVersion}, and a
 * missing or non-string value is an `InvalidGroupVersion` error too.
 *
 * @example
 * ```ts
 * const { group, version } = parseApiVersion(obj.apiVersion); // 'apps/v1' -> apps, v1
 * ```
 */
export function parseApiVersion(apiVersion: unknown): GroupVersion {
  return splitGroupVersion('apiVersion', requireText('InvalidGroupVersion', 'apiVersion', apiVersion));
}

/**
 * Formats a group/version as an `apiVersion`: `apps/v1`, or `v1` for the core
 * group.
 *
 * @throws {@link SchemeError} `InvalidGroupVersion` when a part breaks the naming rules.
 *
 * @example
 * ```ts
 * formatGroupVersion({ group: 'apps', version: 'v1' }); // 'apps/v1'
 * formatGroupVersion({ group: '', version: 'v1' });     // 'v1'
 * ```
 */
export function formatGroupVersion(gv: GroupVersion): string {
  const text = gv.group === '' ? gv.version : `${gv.group}/${gv.version}`;
  checkGroupVersion('group/version', text, gv.group, gv.version);
  return text;
}

/** Splits `Name.version.group` / `Name.version` (core) for kinds and resources. */
function splitVersioned(
  reason: SchemeErrorReason,
  what: string,
  text: string,
  nameProblem: (name: string) => string | undefined,
  unversionedHint: string,
): { name: string; group: string; version: string } {
  const parts = text.split('.');
  const [name = '', version = ''] = parts;
  const group = parts.slice(2).join('.');
  if (parts.length < 2) {
    throw invalid(reason, what, text, `expected "Name.version.group", or "Name.v1" for the core group; ${unversionedHint}`);
  }
  if (parts.length === 2 && !isKubeVersion(version)) {
    throw invalid(reason, what, text, `"${version}" is not a version, so this names a group without a version; ${unversionedHint}`);
  }
  if (parts.length > 2 && group.split('.').some((label) => label === '')) {
    throw invalid(reason, what, text, 'the group has an empty part (a leading, trailing or doubled ".")');
  }
  const problem = nameProblem(name) ?? versionProblem(version) ?? groupProblem(group);
  if (problem !== undefined) throw invalid(reason, what, text, problem);
  return { name, group, version };
}

/** Splits `Name.group` / `Name` (core) for kinds and resources. */
function splitUnversioned(
  reason: SchemeErrorReason,
  what: string,
  text: string,
  nameProblem: (name: string) => string | undefined,
): { name: string; group: string } {
  const dot = text.indexOf('.');
  const name = dot === -1 ? text : text.slice(0, dot);
  const group = dot === -1 ? '' : text.slice(dot + 1);
  if (dot !== -1 && group === '') throw invalid(reason, what, text, 'the group after "." is empty');
  const problem = nameProblem(name) ?? groupProblem(group);
  if (problem !== undefined) throw invalid(reason, what, text, problem);
  return { name, group };
}

/**
 * Parses `Kind.version.group` (`Deployment.v1.apps`, `HardDisk.v1.crd-demo.io`)
 * or `Kind.version` for the core group (`Pod.v1`).
 *
 * A two-part form must end in a Kubernetes version (`v1`, `v2beta1`), so
 * `Deployment.apps` is refused with a hint to {@link parseGroupKind} rather
 * than read as version "apps".
 *
 * @throws {@link SchemeError} `InvalidKind` for any malformed input.
 *
 * @example
 * ```ts
 * parseGroupVersionKind('Deployment.v1.apps'); // { group: 'apps', version: 'v1', kind: 'Deployment' }
 * parseGroupVersionKind('Pod.v1');             // { group: '', version: 'v1', kind: 'Pod' }
 * ```
 */
export function parseGroupVersionKind(text: string): GroupVersionKind {
  const what = 'group/version/kind';
  const { name, group, version } = splitVersioned('InvalidKind', what, requireText('InvalidKind', what, text), kindProblem, 'use parseGroupKind for "Kind.group"');
  return Object.freeze({ group, version, kind: name });
}

/**
 * Formats a group/version/kind as `Kind.version.group`, or `Kind.version` for
 * the core group: the inverse of {@link parseGroupVersionKind}.
 *
 * @throws {@link SchemeError} `InvalidKind` when a part breaks the naming rules.
 *
 * @example
 * ```ts
 * formatGroupVersionKind({ group: 'apps', version: 'v1', kind: 'Deployment' }); // 'Deployment.v1.apps'
 * ```
 */
export function formatGroupVersionKind(gvk: GroupVersionKind): string {
  const text = gvk.group === '' ? `${gvk.kind}.${gvk.version}` : `${gvk.kind}.${gvk.version}.${gvk.group}`;
  const problem = kindProblem(gvk.kind) ?? versionProblem(gvk.version) ?? groupProblem(gvk.group);
  if (problem !== undefined) throw invalid('InvalidKind', 'group/version/kind', text, problem);
  return text;
}

/**
 * Parses `Kind.group` (`Deployment.apps`, `HardDisk.crd-demo.io`) or a bare
 * `Kind` (the core group).
 *
 * @throws {@link SchemeError} `InvalidKind` for any malformed input.
 *
 * @example
 * ```ts
 * parseGroupKind('Deployment.apps'); // { group: 'apps', kind: 'Deployment' }
 * parseGroupKind('Pod');             // { group: '', kind: 'Pod' }
 * ```
 */
export function parseGroupKind(text: string): GroupKind {
  const what = 'group/kind';
  const { name, group } = splitUnversioned('InvalidKind', what, requireText('InvalidKind', what, text), kindProblem);
  return Object.freeze({ group, kind: name });
}

/**
 * Formats a group/kind as `Kind.group`, or `Kind` for the core group.
 *
 * @throws {@link SchemeError} `InvalidKind` when a part breaks the naming rules.
 *
 * @example
 * ```ts
 * formatGroupKind({ group: 'apps', kind: 'Deployment' }); // 'Deployment.apps'
 * formatGroupKind({ group: '', kind: 'Pod' });            // 'Pod'
 * ```
 */
export function formatGroupKind(gk: GroupKind): string {
  const text = gk.group === '' ? gk.kind : `${gk.kind}.${gk.group}`;
  const problem = kindProblem(gk.kind) ?? groupProblem(gk.group);
  if (problem !== undefined) throw invalid('InvalidKind', 'group/kind', text, problem);
  return text;
}

/**
 * Parses `resource.version.group` (`deployments.v1.apps`) or
 * `resource.version` for the core group (`pods.v1`), as kubectl writes them.
 *
 * @throws {@link SchemeError} `InvalidResource` for any malformed input.
 *
 * @example
 * ```ts
 * parseGroupVersionResource('deployments.v1.apps'); // { group: 'apps', version: 'v1', resource: 'deployments' }
 * ```
 */
export function parseGroupVersionResource(text: string): GroupVersionResource {
  const what = 'group/version/resource';
  const { name, group, version } = splitVersioned(
    'InvalidResource',
    what,
    requireText('InvalidResource', what, text),
    resourceProblem,
    'use parseGroupResource for "resource.group"',
  );
  return Object.freeze({ group, version, resource: name });
}

/**
 * Formats a group/version/resource as `resource.version.group`, or
 * `resource.version` for the core group.
 *
 * @throws {@link SchemeError} `InvalidResource` when a part breaks the naming rules.
 *
 * @example
 * ```ts
 * formatGroupVersionResource({ group: '', version: 'v1', resource: 'pods' }); // 'pods.v1'
 * ```
 */
export function formatGroupVersionResource(gvr: GroupVersionResource): string {
  const text = gvr.group === '' ? `${gvr.resource}.${gvr.version}` : `${gvr.resource}.${gvr.version}.${gvr.group}`;
  const problem = resourceProblem(gvr.resource) ?? versionProblem(gvr.version) ?? groupProblem(gvr.group);
  if (problem !== undefined) throw invalid('InvalidResource', 'group/version/resource', text, problem);
  return text;
}

/**
 * Parses `resource.group` (`deployments.apps`) or a bare `resource` (the core group).
 *
 * @throws {@link SchemeError} `InvalidResource` for any malformed input.
 *
 * @example
 * ```ts
 * parseGroupResource('leases.coordination.k8s.io'); // { group: 'coordination.k8s.io', resource: 'leases' }
 * ```
 */
export function parseGroupResource(text: string): GroupResource {
  const what = 'group/resource';
  const { name, group } = splitUnversioned('InvalidResource', what, requireText('InvalidResource', what, text), resourceProblem);
  return Object.freeze({ group, resource: name });
}

/**
 * Formats a group/resource as `resource.group`, or `resource` for the core group.
 *
 * @throws {@link SchemeError} `InvalidResource` when a part breaks the naming rules.
 *
 * @example
 * ```ts
 * formatGroupResource({ group: 'apps', resource: 'deployments' }); // 'deployments.apps'
 * ```
 */
export function formatGroupResource(gr: GroupResource): string {
  const text = gr.group === '' ? gr.resource : `${gr.resource}.${gr.group}`;
  const problem = resourceProblem(gr.resource) ?? groupProblem(gr.group);
  if (problem !== undefined) throw invalid('InvalidResource', 'group/resource', text, problem);
  return text;
}

/**
 * Reads the group/version/kind of a plain object from its `apiVersion` and
 * `kind` fields.
 *
 * @throws {@link SchemeError} `InvalidObject` when the value is not an object
 * or lacks a string `apiVersion` or `kind`; `InvalidGroupVersion` or
 * `InvalidKind` when they are malformed.
 *
 * @example
 * ```ts
 * readGroupVersionKind({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } });
 * // { group: 'apps', version: 'v1', kind: 'Deployment' }
 * ```
 */
export function readGroupVersionKind(obj: unknown): GroupVersionKind {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new SchemeError('InvalidObject', `expected a Kubernetes object with apiVersion and kind, got ${show(obj)}`, { input: show(obj) });
  }
  const { apiVersion, kind } = obj as { apiVersion?: unknown; kind?: unknown };
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
    const missing = [typeof apiVersion === 'string' ? undefined : 'apiVersion', typeof kind === 'string' ? undefined : 'kind'].filter(Boolean).join(' and ');
    throw new SchemeError('InvalidObject', `object has no string ${missing} (apiVersion: ${show(apiVersion)}, kind: ${show(kind)})`, {
      input: `${show(apiVersion)} ${show(kind)}`,
    });
  }
  const { group, version } = parseApiVersion(apiVersion);
  const problem = kindProblem(kind);
  if (problem !== undefined) throw invalid('InvalidKind', 'kind', kind, problem);
  return Object.freeze({ group, version, kind });
}
