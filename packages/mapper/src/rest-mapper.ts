/** The RESTMapper interface: kinds to resources and back, with scope. */
import type { GroupKind, GroupVersionKind, GroupVersionResource } from '@kubeloop/scheme';

/** Whether a resource lives in a namespace or at cluster scope. */
export type Scope = 'Namespaced' | 'Cluster';

/** How to reach a kind over REST: its resource and scope. */
export interface RESTMapping {
  readonly groupVersionKind: GroupVersionKind;
  readonly resource: GroupVersionResource;
  readonly scope: Scope;
  /** Lower-case singular name, e.g. `deployment`. */
  readonly singular: string;
  /** Subresources the server lists for it, e.g. `status`, `scale`. */
  readonly subresources: readonly string[];
  /** Verbs the server allows on it. */
  readonly verbs: readonly string[];
}

/** A resource name with optional group and version; `resource` may be plural or singular. */
export interface PartialResource {
  readonly group?: string;
  readonly version?: string;
  readonly resource: string;
}

/**
 * Maps kinds to resources and back. All lookups are async: an implementation
 * may discover what it does not know yet.
 *
 * @example
 * ```ts
 * const m = await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
 * m.resource; // { group: 'apps', version: 'v1', resource: 'deployments' }
 * m.scope;    // 'Namespaced'
 * ```
 */
export interface RESTMapper {
  /** The preferred mapping of a group/kind, or the first of `versions` that serves it. Rejects with NoKindMatch. */
  restMapping(groupKind: GroupKind, ...versions: string[]): Promise<RESTMapping>;
  /** Every mapping of a group/kind, preferred (or asked) order. Rejects with NoKindMatch when there is none. */
  restMappings(groupKind: GroupKind, ...versions: string[]): Promise<RESTMapping[]>;
  /** The kind a (partial) resource serves. Rejects with NoResourceMatch or AmbiguousResource. */
  kindFor(resource: PartialResource): Promise<GroupVersionKind>;
  /** Every kind matching a (partial) resource, preferred first. */
  kindsFor(resource: PartialResource): Promise<GroupVersionKind[]>;
  /** The fully qualified resource for a partial one. Rejects with NoResourceMatch or AmbiguousResource. */
  resourceFor(resource: PartialResource): Promise<GroupVersionResource>;
  /** Every resource matching a partial one, preferred first. */
  resourcesFor(resource: PartialResource): Promise<GroupVersionResource[]>;
  /** The singular name of a plural resource (`deployments` → `deployment`). */
  resourceSingularizer(resource: string): Promise<string>;
  /** Whether a kind is namespaced (a shorthand for `restMapping(...).scope`). */
  isNamespaced(gvk: GroupVersionKind): Promise<boolean>;
}
