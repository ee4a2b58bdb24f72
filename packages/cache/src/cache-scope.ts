/**
 * What the informer cache holds of each kind: which namespaces (all, a
 * list, or those a label selector on Namespace objects chooses) and, per
 * namespace, which selectors and transform, worked out from the cache-wide
 * and per-kind options (controller-runtime's `cache.Options.DefaultNamespaces`
 * and `ByObject`). Bad settings are a `CacheError` `InvalidOptions` when the
 * cache is made, saying what to write instead.
 */
import { parseFieldSelector, parseLabelSelector } from '@kubeloop/client';
import type { Selector } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import { CacheError } from './errors.js';
import type { Transform } from './informer.js';

/**
 * Settings of one namespace, over the kind's and the cache's (as
 * controller-runtime's per-namespace `cache.Config`). Every field is
 * optional; one left out falls back to the kind's setting, then the cache's.
 *
 * @example
 * ```ts
 * const cache = createInformerCache({
 *   client,
 *   namespaces: { prod: { labelSelector: 'tier=critical' }, staging: {} },
 * });
 * ```
 */
export interface NamespaceOptions {
  /** Only objects in this namespace matching it are cached. Default: the kind's `labelSelector`, else the cache's `defaultLabelSelector`, else all. */
  readonly labelSelector?: Selector;
  /** Only objects in this namespace matching it are cached. Default: the kind's `fieldSelector`, else the cache's `defaultFieldSelector`, else all. */
  readonly fieldSelector?: Selector;
  /** Applied to this namespace's objects before they are cached. Default: the kind's `transform`, else the cache's. */
  readonly transform?: Transform<KubeObject>;
}

/** Namespaces to cache: their names, or their names with settings of their own. */
export type Namespaces = readonly string[] | Readonly<Record<string, NamespaceOptions>>;

/** The options scope is worked out from: the cache-wide ones and one kind's. */
export interface ScopeOptions {
  readonly namespaces?: Namespaces;
  readonly namespaceSelector?: Selector;
  readonly labelSelector?: Selector;
  readonly fieldSelector?: Selector;
  readonly transform?: Transform<KubeObject>;
}

/** Where a kind's namespaces come from. */
export type NamespacePlan =
  | { readonly mode: 'all' }
  | { readonly mode: 'listed'; readonly names: readonly string[]; readonly byKind: boolean }
  | { readonly mode: 'selected'; readonly selector: Selector; readonly byKind: boolean };

/** The settings that apply to one namespace ('' for a cluster-wide list-watch). */
export interface Settings {
  readonly labelSelector?: Selector;
  readonly fieldSelector?: Selector;
  readonly transform?: Transform<KubeObject>;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * The namespace names of a `namespaces` option, in either form (a list, or a
 * map of names to their settings); none when it is not set.
 *
 * @example
 * ```ts
 * namespaceNames({ payments: { labelSelector: 'tier=db' }, ops: {} }); // ['payments', 'ops']
 * ```
 */
export function namespaceNames(ns: Namespaces | undefined): readonly string[] {
  if (ns === undefined) return [];
  return Array.isArray(ns) ? (ns as readonly string[]) : Object.keys(ns);
}

function own(ns: Namespaces | undefined, namespace: string): NamespaceOptions | undefined {
  if (ns === undefined || Array.isArray(ns)) return undefined;
  return Object.hasOwn(ns, namespace) ? (ns as Readonly<Record<string, NamespaceOptions>>)[namespace] : undefined;
}

/** A kind's namespaces: its own options first (namespaces or a selector), then the cache's. */
export function namespacePlan(cache: ScopeOptions, kind: ScopeOptions): NamespacePlan {
  if (kind.namespaceSelector !== undefined) return { mode: 'selected', selector: kind.namespaceSelector, byKind: true };
  if (namespaceNames(kind.namespaces).length > 0) return { mode: 'listed', names: namespaceNames(kind.namespaces), byKind: true };
  if (cache.namespaceSelector !== undefined) return { mode: 'selected', selector: cache.namespaceSelector, byKind: false };
  if (namespaceNames(cache.namespaces).length > 0) return { mode: 'listed', names: namespaceNames(cache.namespaces), byKind: false };
  return { mode: 'all' };
}

/**
 * The settings of one namespace of a kind, each field from the first that
 * names it: the kind's settings for the namespace, the cache's for the
 * namespace, the kind's, the cache's defaults.
 */
export function settingsFor(cache: ScopeOptions, kind: ScopeOptions, namespace: string): Settings {
  const k = namespace ? own(kind.namespaces, namespace) : undefined;
  const c = namespace ? own(cache.namespaces, namespace) : undefined;
  const labelSelector = k?.labelSelector ?? c?.labelSelector ?? kind.labelSelector ?? cache.labelSelector;
  const fieldSelector = k?.fieldSelector ?? c?.fieldSelector ?? kind.fieldSelector ?? cache.fieldSelector;
  const transform = k?.transform ?? c?.transform ?? kind.transform ?? cache.transform;
  return {
    ...(labelSelector !== undefined ? { labelSelector } : {}),
    ...(fieldSelector !== undefined ? { fieldSelector } : {}),
    ...(transform !== undefined ? { transform } : {}),
  };
}

function isEmptySelector(selector: Selector): boolean {
  return typeof selector === 'string' ? selector.trim() === '' : Object.keys(selector).length === 0;
}

/**
 * Throws `CacheError` `InvalidOptions` for scope settings that cannot work,
 * naming the setting (`where`: `createInformerCache` or `byKind[2] (ConfigMap)`)
 * and what to write instead.
 */
export function checkScope(where: string, options: ScopeOptions): void {
  const fail = (message: string, cause?: unknown): CacheError => new CacheError('InvalidOptions', `${where}: ${message}`, cause === undefined ? {} : { cause });
  const selector = (name: string, value: Selector | undefined, parse: (s: Selector) => unknown): void => {
    if (value === undefined) return;
    try {
      parse(value);
    } catch (cause) {
      throw fail(`${name} is not a selector the API server accepts (${cause instanceof Error ? cause.message : String(cause)}); write it as 'key=value,other in (a,b)' or a map of labels`, cause);
    }
  };
  selector('labelSelector', options.labelSelector, parseLabelSelector);
  selector('fieldSelector', options.fieldSelector, parseFieldSelector);
  const ns = options.namespaces;
  if (ns !== undefined) {
    if (typeof ns !== 'object' || ns === null) throw fail("namespaces must be a list of names (['team-a']) or a map of names to their settings ({ 'team-a': { labelSelector: 'app=web' } })");
    for (const name of namespaceNames(ns)) {
      if (typeof name !== 'string' || !DNS_LABEL.test(name)) {
        throw fail(`namespaces: ${JSON.stringify(name)} is not a namespace name (lowercase letters, digits and '-', at most 63 characters); to cache every namespace, leave namespaces out`);
      }
    }
    if (!Array.isArray(ns)) {
      for (const [name, settings] of Object.entries(ns as Record<string, unknown>)) {
        if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) throw fail(`namespaces[${JSON.stringify(name)}] must be an object of settings ({} for the defaults), not ${JSON.stringify(settings)}`);
        const s = settings as NamespaceOptions;
        const unknown = Object.keys(s).filter((k) => k !== 'labelSelector' && k !== 'fieldSelector' && k !== 'transform');
        if (unknown.length > 0) throw fail(`namespaces[${JSON.stringify(name)}] has unknown settings ${unknown.join(', ')} (known: labelSelector, fieldSelector, transform)`);
        selector(`namespaces[${JSON.stringify(name)}].labelSelector`, s.labelSelector, parseLabelSelector);
        selector(`namespaces[${JSON.stringify(name)}].fieldSelector`, s.fieldSelector, parseFieldSelector);
        if (s.transform !== undefined && typeof s.transform !== 'function') throw fail(`namespaces[${JSON.stringify(name)}].transform must be a function (object) => object`);
      }
    }
  }
  const sel = options.namespaceSelector;
  if (sel !== undefined) {
    if (namespaceNames(ns).length > 0) {
      throw fail('namespaces and namespaceSelector both choose the namespaces: keep one (namespaces for a fixed list, namespaceSelector for the namespaces whose labels match, followed while running)');
    }
    selector('namespaceSelector', sel, parseLabelSelector);
    if (isEmptySelector(sel)) throw fail('namespaceSelector is empty, which selects every namespace: leave it out to cache all namespaces, or name the labels to select (team=payments)');
  }
}
