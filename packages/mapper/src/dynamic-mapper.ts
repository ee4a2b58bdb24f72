/**
 * A lazy RESTMapper fed by discovery, built to beat controller-runtime's:
 *
 * - the group list (`/api`, `/apis`) is fetched once, asking for aggregated
 *   discovery, which carries every resource; only without it (or for a stale
 *   aggregated group-version) is a group-version fetched on its own, and only
 *   when a lookup needs it;
 * - every fetch is single-flight: concurrent lookups that need the same
 *   document share one request, and no lock is held across the network, so a
 *   lookup of a known group never waits for another group's reload;
 * - state is an immutable snapshot swapped in one assignment;
 * - a miss refreshes once (a CRD installed after start costs one request with
 *   aggregated discovery), unless discovery already ran during that lookup;
 *   a kind that still does not exist is remembered for a short while
 *   (negative cache), so a hot loop of bad lookups costs no requests;
 * - a group-version that answers 404 is dropped; a version-less lookup that
 *   misses re-reads the group's versions, so versions added later are seen.
 */
import type { GroupKind, GroupVersionKind, GroupVersionResource } from '@kubeloop/scheme';
import { AGGREGATED_DISCOVERY_ACCEPT, LEGACY_DISCOVERY_ACCEPT } from './discovery.js';
import type { DiscoveryClient } from './discovery.js';
import { MapperError } from './errors.js';
import { DocumentError, parseGroupList, parseResourceList } from './internal/documents.js';
import type { ResourceInfo } from './internal/documents.js';
import { Snapshot } from './internal/snapshot.js';
import type { PartialResource, RESTMapper, RESTMapping } from './rest-mapper.js';

/** Options for {@link createDynamicRESTMapper}. */
export interface DynamicRESTMapperOptions {
  /**
   * Ask for aggregated discovery (apidiscovery.k8s.io/v2). Default: true.
   * Servers without it answer with the legacy documents either way; false
   * forces the legacy path (one request per group-version a lookup needs).
   */
  readonly aggregatedDiscovery?: boolean;
  /**
   * How long a kind or resource that was not found even after a refresh is
   * answered NoKindMatch / NoResourceMatch without asking the server again.
   * Default: 5000 ms. 0 turns the negative cache off.
   */
  readonly negativeCacheTtlMs?: number;
  /** Clock, for tests. Default: `Date.now`. */
  readonly now?: () => number;
}

/** A RESTMapper that discovers lazily and can be told to forget. */
export interface DynamicRESTMapper extends RESTMapper {
  /** Forget everything learned; the next lookup discovers again. */
  invalidate(): void;
  /**
   * Forget one kind (its CRD was deleted, or a request for it answered 404):
   * the next lookup of it asks the server again, once, and answers
   * NoKindMatch if it is still not served. Other kinds keep their mappings.
   *
   * @example
   * ```ts
   * const dynamic = createDynamicRESTMapper(transportDiscovery(transport));
   * dynamic.forget({ group: 'crd-demo.io', kind: 'HardDisk' });
   * await dynamic.restMapping({ group: 'crd-demo.io', kind: 'HardDisk' }); // NoKindMatch once the CRD is gone
   * ```
   */
  forget(groupKind: GroupKind): void;
}

type GroupListPath = '/api' | '/apis';

function toMapping(r: ResourceInfo): RESTMapping {
  return {
    groupVersionKind: { group: r.group, version: r.version, kind: r.kind },
    resource: { group: r.group, version: r.version, resource: r.resource },
    scope: r.namespaced ? 'Namespaced' : 'Cluster',
    singular: r.singular,
    subresources: r.subresources,
    verbs: r.verbs,
  };
}

/** A kind's resources in `snap`, in the order of `versions` (or the group's preferred order when none are given). */
function kindMatches(snap: Snapshot, gk: GroupKind, versions: readonly string[]): ResourceInfo[] {
  const info = snap.groups.get(gk.group);
  if (!info) return [];
  const order = versions.length > 0 ? versions : info.versions;
  const matches = snap.byGroupKind(gk.group, gk.kind);
  return order.flatMap((v) => matches.filter((r) => r.version === v));
}

function kindKey(groupKind: GroupKind, versions: readonly string[]): string {
  return `k\u0000${groupKind.group}\u0000${groupKind.kind}\u0000${versions.join(',')}`;
}

function formatPartial(p: PartialResource): string {
  return [p.resource, p.version, p.group].filter((s) => s !== undefined && s !== '').join('.');
}

/**
 * Create a lazy, coalescing RESTMapper over a discovery client.
 *
 * @example
 * ```ts
 * import { createTransport, loadKubeConfig, transportDiscovery } from '@kubeloop/client';
 * import { createDynamicRESTMapper } from '@kubeloop/mapper';
 *
 * const mapper = createDynamicRESTMapper(transportDiscovery(createTransport(loadKubeConfig())));
 * const { resource, scope } = await mapper.restMapping({ group: 'crd-demo.io', kind: 'HardDisk' });
 * ```
 */
export function createDynamicRESTMapper(discovery: DiscoveryClient, options: DynamicRESTMapperOptions = {}): DynamicRESTMapper {
  return new LazyMapper(discovery, options);
}

class LazyMapper implements DynamicRESTMapper {
  private snapshot = Snapshot.empty;
  /** Completed fetches per group-list path; a lookup compares before/after to know if discovery ran meanwhile. */
  private readonly generation: Record<GroupListPath, number> = { '/api': 0, '/apis': 0 };
  private readonly inflightLists = new Map<GroupListPath, Promise<void>>();
  private readonly inflightVersions = new Map<string, Promise<void>>();
  private readonly negative = new Map<string, number>();
  private readonly accept: string;
  private readonly negativeTtl: number;
  private readonly now: () => number;
  /** Bumped by invalidate(): fetches started before it do not write their result. */
  private epoch = 0;
  /**
   * Kind lookups answered from `snapshot`: asking again (every request a client sends asks) costs a
   * map read, no discovery and no allocation, until discovery replaces the snapshot.
   */
  private answered: { snapshot: Snapshot; byKey: Map<string, readonly RESTMapping[]> } = { snapshot: Snapshot.empty, byKey: new Map() };

  constructor(
    private readonly discovery: DiscoveryClient,
    options: DynamicRESTMapperOptions,
  ) {
    this.accept = options.aggregatedDiscovery === false ? LEGACY_DISCOVERY_ACCEPT : AGGREGATED_DISCOVERY_ACCEPT;
    this.negativeTtl = options.negativeCacheTtlMs ?? 5000;
    this.now = options.now ?? Date.now;
  }

  invalidate(): void {
    this.epoch++;
    this.snapshot = Snapshot.empty;
    this.generation['/api'] = 0;
    this.generation['/apis'] = 0;
    this.inflightLists.clear();
    this.inflightVersions.clear();
    this.negative.clear();
    this.answered = { snapshot: Snapshot.empty, byKey: new Map() };
  }

  forget(groupKind: GroupKind): void {
    const next = this.snapshot.withoutKind(groupKind.group, groupKind.kind);
    if (next === this.snapshot) return;
    // A fetch under way may still write the old picture back; the next miss of the kind refreshes it again.
    this.snapshot = next;
  }

  async restMapping(groupKind: GroupKind, ...versions: string[]): Promise<RESTMapping> {
    const all = this.answer(groupKind, versions) ?? (await this.restMappings(groupKind, ...versions));
    return all[0]!;
  }

  async restMappings(groupKind: GroupKind, ...versions: string[]): Promise<RESTMapping[]> {
    const answered = this.answer(groupKind, versions);
    if (answered) return [...answered];
    const key = kindKey(groupKind, versions);
    const path: GroupListPath = groupKind.group === '' ? '/api' : '/apis';
    const miss = (): MapperError =>
      new MapperError(
        'NoKindMatch',
        `no matches for kind "${groupKind.kind}" in ${groupKind.group ? `group "${groupKind.group}"` : 'the core group'}` +
          (versions.length > 0 ? ` (versions ${versions.join(', ')})` : ''),
      );
    let from: Snapshot | undefined;
    const mappings = await this.lookup(key, [path], miss, async () => {
      await this.loadVersions(groupKind.group, versions);
      from = this.snapshot;
      return kindMatches(from, groupKind, versions).map((m) => Object.freeze(toMapping(m)));
    }, groupKind.group);
    // Remembered only for the snapshot it was read from (discovery may have moved on meanwhile).
    if (from === this.snapshot) {
      if (this.answered.snapshot !== from) this.answered = { snapshot: from, byKey: new Map() };
      this.answered.byKey.set(key, Object.freeze([...mappings]));
    }
    return mappings;
  }

  /** The mappings the current snapshot already gave for this kind, if it did. */
  private answer(groupKind: GroupKind, versions: readonly string[]): readonly RESTMapping[] | undefined {
    return this.answered.snapshot === this.snapshot ? this.answered.byKey.get(kindKey(groupKind, versions)) : undefined;
  }

  async kindFor(resource: PartialResource): Promise<GroupVersionKind> {
    return this.single(resource, await this.matchResources(resource), (r) => ({ group: r.group, version: r.version, kind: r.kind }));
  }

  async kindsFor(resource: PartialResource): Promise<GroupVersionKind[]> {
    return (await this.matchResources(resource)).map((r) => ({ group: r.group, version: r.version, kind: r.kind }));
  }

  async resourceFor(resource: PartialResource): Promise<GroupVersionResource> {
    return this.single(resource, await this.matchResources(resource), (r) => ({ group: r.group, version: r.version, resource: r.resource }));
  }

  async resourcesFor(resource: PartialResource): Promise<GroupVersionResource[]> {
    return (await this.matchResources(resource)).map((r) => ({ group: r.group, version: r.version, resource: r.resource }));
  }

  async resourceSingularizer(resource: string): Promise<string> {
    const matches = await this.matchResources({ resource });
    const plural = matches.find((r) => r.resource === resource.toLowerCase());
    return (plural ?? matches[0])!.singular;
  }

  async isNamespaced(gvk: GroupVersionKind): Promise<boolean> {
    return (await this.restMapping({ group: gvk.group, kind: gvk.kind }, gvk.version)).scope === 'Namespaced';
  }

  // --- lookups -------------------------------------------------------------

  /**
   * Run `find` against what is known (discovering the group list first); on a
   * miss refresh once, unless discovery already ran during this lookup, then
   * remember the miss for the negative-cache TTL.
   */
  private async lookup<T>(
    key: string,
    paths: readonly GroupListPath[],
    miss: () => MapperError,
    find: () => Promise<T[]>,
    reloadGroup: string | undefined,
  ): Promise<T[]> {
    const expires = this.negative.get(key);
    if (expires !== undefined) {
      if (expires > this.now()) throw miss();
      this.negative.delete(key);
    }
    const before = paths.map((p) => this.generation[p]);
    await Promise.all(paths.filter((p) => this.generation[p] === 0).map((p) => this.fetchGroupList(p, undefined)));
    let found = await find();
    if (found.length > 0) return found;
    const stale = paths.filter((p, i) => this.generation[p] === before[i]);
    if (stale.length > 0) {
      await Promise.all(stale.map((p) => this.fetchGroupList(p, reloadGroup)));
      found = await find();
      if (found.length > 0) return found;
    }
    if (this.negativeTtl > 0) this.negative.set(key, this.now() + this.negativeTtl);
    throw miss();
  }

  private async matchResources(partial: PartialResource): Promise<ResourceInfo[]> {
    const name = partial.resource.toLowerCase();
    const key = `r\u0000${partial.group ?? '*'}\u0000${partial.version ?? '*'}\u0000${name}`;
    const paths: GroupListPath[] = partial.group === undefined ? ['/api', '/apis'] : partial.group === '' ? ['/api'] : ['/apis'];
    const miss = (): MapperError => new MapperError('NoResourceMatch', `no matches for resource "${formatPartial(partial)}"`);
    return this.lookup(key, paths, miss, async () => {
      const groups = partial.group !== undefined ? [partial.group] : [...this.snapshot.groups.keys()];
      await Promise.all(groups.map((g) => this.loadVersions(g, partial.version ? [partial.version] : [])));
      return this.snapshot
        .allResources()
        .filter(
          (r) =>
            (r.resource === name || r.singular === name) &&
            (partial.group === undefined || r.group === partial.group) &&
            (partial.version === undefined || r.version === partial.version),
        );
    }, partial.group);
  }

  private single<T>(partial: PartialResource, matches: ResourceInfo[], pick: (r: ResourceInfo) => T): T {
    const groups = [...new Set(matches.map((r) => r.group))];
    if (groups.length > 1) {
      const candidates = matches.map((r) => `${r.resource}.${r.version}.${r.group || 'core'}`);
      throw new MapperError(
        'AmbiguousResource',
        `resource "${formatPartial(partial)}" matches several groups: ${candidates.join(', ')}; name the group`,
        { candidates },
      );
    }
    return pick(matches[0]!);
  }

  // --- discovery -----------------------------------------------------------

  private fetchGroupList(path: GroupListPath, reloadGroup: string | undefined): Promise<void> {
    const existing = this.inflightLists.get(path);
    if (existing) return existing;
    const epoch = this.epoch;
    const promise = (async () => {
      const res = await this.get(path, this.accept);
      if (res.status !== 200) throw this.discoveryError(path, res.status, res.body);
      let doc;
      try {
        doc = parseGroupList(path, res.contentType, res.body);
      } catch (cause) {
        throw this.malformed(path, cause);
      }
      if (epoch !== this.epoch) return;
      const covers = path === '/api' ? (g: string) => g === '' : (g: string) => g !== '';
      this.snapshot = this.snapshot.withGroupList(covers, doc.groups, doc.resources, reloadGroup);
      this.generation[path]++;
    })().finally(() => {
      if (this.inflightLists.get(path) === promise) this.inflightLists.delete(path);
    });
    this.inflightLists.set(path, promise);
    return promise;
  }

  private async loadVersions(group: string, wanted: readonly string[]): Promise<void> {
    const missing = this.snapshot.unloadedVersions(group, wanted);
    if (missing.length === 0) return;
    await Promise.all(missing.map((v) => this.fetchGroupVersion(group, v)));
  }

  private fetchGroupVersion(group: string, version: string): Promise<void> {
    const key = `${group}/${version}`;
    const existing = this.inflightVersions.get(key);
    if (existing) return existing;
    const epoch = this.epoch;
    const path = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    const promise = (async () => {
      const res = await this.get(path, LEGACY_DISCOVERY_ACCEPT);
      if (epoch !== this.epoch) return;
      if (res.status === 404) {
        // Removed since the group list was read (a deleted CRD version).
        this.snapshot = this.snapshot.withoutGroupVersion(group, version);
        return;
      }
      if (res.status !== 200) throw this.discoveryError(path, res.status, res.body);
      let resources;
      try {
        resources = parseResourceList(group, version, res.body);
      } catch (cause) {
        throw this.malformed(path, cause);
      }
      this.snapshot = this.snapshot.withGroupVersion(group, version, resources);
    })().finally(() => {
      if (this.inflightVersions.get(key) === promise) this.inflightVersions.delete(key);
    });
    this.inflightVersions.set(key, promise);
    return promise;
  }

  private async get(path: string, accept: string) {
    try {
      return await this.discovery.get(path, accept);
    } catch (cause) {
      throw new MapperError('DiscoveryFailed', `discovery GET ${path} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
  }

  private discoveryError(path: string, status: number, body: string): MapperError {
    return new MapperError('DiscoveryFailed', `discovery GET ${path} answered ${status}: ${body.slice(0, 300)}`);
  }

  private malformed(path: string, cause: unknown): MapperError {
    const detail = cause instanceof DocumentError ? cause.message : String(cause);
    return new MapperError('DiscoveryFailed', `discovery GET ${path}: malformed document: ${detail}`, { cause });
  }
}
