/**
 * What a manager needs the API server to allow: the counterpart of
 * kubebuilder's `+kubebuilder:rbac` markers, computed from what the manager
 * was given rather than written beside it.
 *
 * Reads follow from what controllers watch (`for`, `owns`, `watches`: get,
 * list and watch, as the cache lists and watches them and uncached reads get
 * them); writes are declared on the controller (`permissions`); the
 * manager's own needs follow from its options (the event recorder, leader
 * election's Lease, secure metrics' reviews).
 */
import type { KindRef } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { ResourceDescriptor, Scheme } from '@kubeloop/scheme';
import { parseApiVersion } from '@kubeloop/scheme';
import type { ControllerDefinition } from '../controller/builder.js';
import { nameOf } from '../controller/builder.js';
import { ManagerError } from '../errors.js';

/** An API verb as RBAC names it. `'*'` is every verb. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection' | '*' | (string & {});

/** A resource named by group and plural, for kinds the scheme does not describe. */
export interface ResourceName {
  /** API group; `''` for the core group. */
  readonly group: string;
  /** The plural resource name (`configmaps`). */
  readonly resource: string;
  /** `false` for cluster-scoped resources. Default: true. */
  readonly namespaced?: boolean;
}

/** Permission on a resource: the kind's descriptor (group and plural come from it) or a {@link ResourceName}. */
export interface ResourcePermission {
  readonly resource: ResourceDescriptor | ResourceName;
  /** A subresource (`status`, `scale`, `finalizers`). Default: the resource itself. */
  readonly subresource?: string;
  readonly verbs: readonly Verb[];
  /** Only these objects. Default: any. */
  readonly resourceNames?: readonly string[];
}

/** Permission on URLs outside the resource API (`/metrics`, `/healthz`). */
export interface NonResourcePermission {
  readonly nonResourceURLs: readonly string[];
  readonly verbs: readonly Verb[];
}

/**
 * What a controller declares it does beyond reading what it watches: the
 * writes (create, update, patch, delete), reads of kinds it does not watch,
 * subresources. Set on the controller definition as `permissions`, or with
 * the builder's `withPermissions`.
 *
 * @example
 * ```ts
 * manager.register(HardDiskReconciler, {
 *   for: HardDisk,
 *   owns: [ConfigMap],
 *   permissions: [
 *     { resource: HardDisk, verbs: ['update', 'patch'] }, // finalizer
 *     { resource: ConfigMap, verbs: ['create', 'update', 'patch', 'delete'] },
 *   ],
 * });
 * ```
 */
export type Permission = ResourcePermission | NonResourcePermission;

/**
 * One permission the manager needs, with the reason it needs it. Resources
 * with a subresource read `harddisks/status`, as in an RBAC rule.
 */
export interface PermissionRequirement {
  /** API group (`''` for core); absent for non-resource URLs. */
  readonly group?: string;
  /** `configmaps`, `harddisks/status`; absent for non-resource URLs. */
  readonly resource?: string;
  readonly nonResourceURLs?: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
  /** Namespaces it is needed in; absent: cluster-wide (a ClusterRole). */
  readonly namespaces?: readonly string[];
  /** Why: `controller harddisk watches ConfigMap`, `leader election`. */
  readonly reason: string;
}

/** What {@link requiredPermissions} reads from a manager. */
export interface PermissionSources {
  readonly scheme: Scheme;
  readonly controllers: readonly ControllerDefinition[];
  /** The manager's `namespaces` option: namespaced permissions are needed there alone. */
  readonly namespaces?: readonly string[];
  /** The Lease's namespace when leader election is on. */
  readonly leaderElectionNamespace?: string;
  /** What the manager's leadership gate needs (see `LeadershipGate.permissions`). */
  readonly leadership?: readonly PermissionRequirement[];
  /** Secure metrics with authorization: TokenReview and SubjectAccessReview. */
  readonly metricsAuthorization?: boolean;
  /** The event recorder is in use (it is whenever a controller is registered). */
  readonly events?: boolean;
  /**
   * The cache chooses namespaces by a label selector (its `namespaceSelector`,
   * cache-wide or for a kind): list and watch on namespaces, and the kinds'
   * reads cluster-wide (which namespaces match is known only while running).
   * Default: false.
   */
  readonly followsNamespaces?: boolean;
}

/** Whether cache options choose namespaces by a label selector (cache-wide or for a kind). */
export function cacheFollowsNamespaces(cache: { readonly namespaceSelector?: unknown; readonly byKind?: readonly { readonly options: { readonly namespaceSelector?: unknown } }[] } | undefined): boolean {
  return cache?.namespaceSelector !== undefined || cache?.byKind?.some((b) => b.options.namespaceSelector !== undefined) === true;
}

const READ = ['get', 'list', 'watch'] as const;

function isResourceName(r: ResourceDescriptor | ResourceName): r is ResourceName {
  return typeof (r as ResourceName).resource === 'string' && typeof (r as { apiVersion?: unknown }).apiVersion !== 'string';
}

interface Resolved {
  readonly group: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly label: string;
  readonly statusSubresource: boolean;
}

function resolveKind(scheme: Scheme, ref: KindRef | ResourceDescriptor, where: string): Resolved {
  const target = isMetadataRef(ref) ? (ref as { of: ResourceDescriptor }).of : (ref as ResourceDescriptor);
  const { group, version } = parseApiVersion(target.apiVersion);
  const known = scheme.lookup({ group, version, kind: target.kind });
  const plural = target.plural ?? known?.plural;
  const namespaced = target.namespaced ?? known?.namespaced;
  if (plural === undefined || namespaced === undefined) {
    throw new ManagerError(
      'InvalidRegistration',
      `${where}: cannot tell the resource name and scope of ${target.kind}.${target.apiVersion}: register its descriptor (with plural and namespaced) in the manager's scheme, or declare it as { group, resource, namespaced }`,
    );
  }
  const schema = (target.schema ?? known?.schema)?.crd;
  // A kind of another project (crd.foreign): its status is its controller's, not ours to write.
  return { group, plural, namespaced, label: target.kind, statusSubresource: Boolean(schema?.subresources?.status) && schema?.foreign !== true };
}

function kindOf(entry: unknown): KindRef | undefined {
  if (entry === null || typeof entry !== 'object') return undefined;
  if ('start' in entry && typeof (entry).start === 'function') return undefined; // a ready source: declare what it reads
  const wrapped = (entry as { kind?: unknown }).kind;
  return (typeof wrapped === 'object' ? wrapped : entry) as KindRef;
}

/**
 * The permissions a manager with these controllers and options needs, in a
 * stable order. `manager.permissions()` calls this with the manager's own
 * parts; `kubeloop generate rbac` turns the result into Roles.
 *
 * For each controller: get, list and watch on every kind it watches (the
 * cache lists and watches it; reads of uncached kinds get it); on its `for`
 * kind's `status` subresource get, update and patch when the kind declares
 * the subresource and is the project's own (not `crd.foreign`: another
 * project's kind is only read unless its writes are declared); `update` on the `for` kind's `finalizers` when it owns
 * kinds (an owner reference with blockOwnerDeletion needs it where the
 * OwnerReferencesPermissionEnforcement admission plugin runs); whatever it
 * declares in `permissions`. For the manager: create and patch on
 * events.k8s.io events (the recorder writes and folds series), get, create
 * and update on its Lease's namespace's leases, create on tokenreviews and
 * subjectaccessreviews for secure metrics.
 *
 * @throws {@link ManagerError} `InvalidRegistration` when a kind's resource name or scope is unknown.
 * @example
 * ```ts
 * const needs = requiredPermissions({ scheme, controllers: [{ for: HardDisk, owns: [ConfigMap] }], events: true });
 * needs[0]; // { group: 'crd-demo.io', resource: 'harddisks', verbs: ['get', 'list', 'watch'], reason: 'controller harddisk reconciles HardDisk' }
 * ```
 */
export function requiredPermissions(sources: PermissionSources): PermissionRequirement[] {
  const out: PermissionRequirement[] = [];
  const scoped = (namespaced: boolean): { namespaces?: readonly string[] } =>
    namespaced && sources.namespaces && sources.namespaces.length > 0 ? { namespaces: [...sources.namespaces] } : {};
  for (const def of sources.controllers) {
    const name = nameOf(def);
    const forKind = resolveKind(sources.scheme, def.for, `controller ${name}`);
    out.push({ group: forKind.group, resource: forKind.plural, verbs: [...READ], ...scoped(forKind.namespaced), reason: `controller ${name} reconciles ${forKind.label}` });
    if (forKind.statusSubresource) {
      out.push({ group: forKind.group, resource: `${forKind.plural}/status`, verbs: ['get', 'update', 'patch'], ...scoped(forKind.namespaced), reason: `controller ${name} reports ${forKind.label} status` });
    }
    const owned = (def.owns ?? []).map(kindOf).filter((k): k is KindRef => k !== undefined);
    if (owned.length > 0) {
      out.push({ group: forKind.group, resource: `${forKind.plural}/finalizers`, verbs: ['update'], ...scoped(forKind.namespaced), reason: `controller ${name} sets owner references to ${forKind.label} (blockOwnerDeletion)` });
    }
    for (const kind of owned) {
      const k = resolveKind(sources.scheme, kind, `controller ${name}`);
      out.push({ group: k.group, resource: k.plural, verbs: [...READ], ...scoped(k.namespaced), reason: `controller ${name} owns ${k.label}` });
    }
    for (const w of def.watches ?? []) {
      const kind = kindOf(w);
      if (kind) out.push(...kindReads(sources.scheme, kind, `controller ${name} watches`, sources.namespaces));
    }
    out.push(...declaredPermissions(sources.scheme, def.permissions ?? [], `controller ${name}`, sources.namespaces));
  }
  if (sources.events ?? sources.controllers.length > 0) {
    out.push({ group: 'events.k8s.io', resource: 'events', verbs: ['create', 'patch'], ...scoped(true), reason: 'the event recorder' });
  }
  if (sources.followsNamespaces) {
    out.push({ group: '', resource: 'namespaces', verbs: ['list', 'watch'], reason: 'the cache follows the namespaces its namespaceSelector chooses' });
  }
  if (sources.leaderElectionNamespace !== undefined) out.push(leasePermission(sources.leaderElectionNamespace));
  if (sources.leadership) out.push(...sources.leadership);
  if (sources.metricsAuthorization) {
    out.push({ group: 'authentication.k8s.io', resource: 'tokenreviews', verbs: ['create'], reason: 'secure metrics: who is calling' });
    out.push({ group: 'authorization.k8s.io', resource: 'subjectaccessreviews', verbs: ['create'], reason: 'secure metrics: may they' });
  }
  return out;
}

/**
 * What a shard ring member needs: its own Lease in `namespace` (get, create,
 * renew, delete when it leaves) and the others' (list).
 *
 * @example
 * ```ts
 * const roles = rolesFor([...manager.permissions(), shardRingPermission('harddisk-system')], { name: 'harddisk-operator' });
 * ```
 */
export function shardRingPermission(namespace: string): PermissionRequirement {
  return { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'list', 'create', 'update', 'delete'], namespaces: [namespace], reason: 'shard ring membership' };
}

/**
 * Get, list and watch on `kind` (what a cache or a watch of it needs), with
 * the reason `<who> <Kind>`; in `namespaces` when given and the kind is namespaced.
 *
 * @throws {@link ManagerError} `InvalidRegistration` when the kind's resource name or scope is unknown.
 */
export function kindReads(scheme: Scheme, kind: KindRef, who: string, namespaces?: readonly string[]): PermissionRequirement[] {
  const k = resolveKind(scheme, kind, who);
  const scoped = k.namespaced && namespaces && namespaces.length > 0 ? { namespaces: [...namespaces] } : {};
  return [{ group: k.group, resource: k.plural, verbs: [...READ], ...scoped, reason: `${who} ${k.label}` }];
}

/**
 * What `who` declares it needs (a controller's `permissions`), as
 * requirements with the reason `<who> declares it`.
 *
 * @throws {@link ManagerError} `InvalidRegistration` when a kind's resource name or scope is unknown.
 */
export function declaredPermissions(scheme: Scheme, permissions: readonly Permission[], who: string, namespaces?: readonly string[]): PermissionRequirement[] {
  const out: PermissionRequirement[] = [];
  for (const p of permissions) {
    if ('nonResourceURLs' in p) {
      out.push({ nonResourceURLs: [...p.nonResourceURLs], verbs: [...p.verbs], reason: `${who} declares it` });
      continue;
    }
    const r = isResourceName(p.resource)
      ? { group: p.resource.group, plural: p.resource.resource, namespaced: p.resource.namespaced ?? true }
      : resolveKind(scheme, p.resource, who);
    out.push({
      group: r.group,
      resource: p.subresource ? `${r.plural}/${p.subresource}` : r.plural,
      verbs: [...p.verbs],
      ...(p.resourceNames ? { resourceNames: [...p.resourceNames] } : {}),
      ...(r.namespaced && namespaces && namespaces.length > 0 ? { namespaces: [...namespaces] } : {}),
      reason: `${who} declares it`,
    });
  }
  return out;
}

/** What a Lease election needs: get, create and update on leases in `namespace`. */
export function leasePermission(namespace: string): PermissionRequirement {
  return { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'create', 'update'], namespaces: [namespace], reason: 'leader election' };
}
