/**
 * Parsing of the discovery documents into one normalised model, for both
 * aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) and the
 * legacy documents (APIVersions, APIGroupList, APIResourceList).
 */

/** A resource served at one group-version (subresources are not listed here). */
export interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  /** The plural resource name, e.g. `deployments`. */
  readonly resource: string;
  readonly kind: string;
  /** Lower-case singular, e.g. `deployment` (the lower-cased kind when the server gives none). */
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly verbs: readonly string[];
  readonly subresources: readonly string[];
}

/** A group and its versions, preferred first. */
export interface GroupInfo {
  readonly name: string;
  readonly versions: readonly string[];
}

/** What one group-list document says. */
export interface GroupListDocument {
  readonly groups: readonly GroupInfo[];
  /**
   * For aggregated discovery: the resources of every fresh group-version,
   * keyed `group/version`. Undefined for the legacy group list.
   */
  readonly resources: ReadonlyMap<string, readonly ResourceInfo[]> | undefined;
}

/** `group/version` (core: `/v1`). */
export function gvKey(group: string, version: string): string {
  return `${group}/${version}`;
}

interface RawAggregatedResource {
  resource?: string;
  responseKind?: { group?: string; version?: string; kind?: string };
  scope?: string;
  singularResource?: string;
  shortNames?: string[];
  verbs?: string[];
  subresources?: { subresource?: string }[];
}

interface RawAggregatedList {
  kind?: string;
  items?: {
    metadata?: { name?: string };
    versions?: { version?: string; resources?: RawAggregatedResource[]; freshness?: string }[];
  }[];
}

export class DocumentError extends Error {}

function parseJson(body: string, what: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch (cause) {
    throw new DocumentError(`${what}: the body is not JSON`, { cause });
  }
}

/** Whether a Content-Type names the aggregated discovery list. */
export function isAggregated(contentType: string | undefined): boolean {
  return contentType !== undefined && /as=APIGroupDiscoveryList/i.test(contentType) && /g=apidiscovery\.k8s\.io/i.test(contentType);
}

/** Parse the answer to `/api` or `/apis`, aggregated or legacy. */
export function parseGroupList(path: '/api' | '/apis', contentType: string | undefined, body: string): GroupListDocument {
  const json = parseJson(body, path);
  if (isAggregated(contentType) || (json as { kind?: string }).kind === 'APIGroupDiscoveryList') {
    return parseAggregated(json as RawAggregatedList, path);
  }
  if (path === '/api') {
    const versions = (json as { versions?: unknown }).versions;
    if (!Array.isArray(versions) || versions.some((v) => typeof v !== 'string')) {
      throw new DocumentError('/api: expected an APIVersions document with a versions list');
    }
    return { groups: [{ name: '', versions: versions as string[] }], resources: undefined };
  }
  const groups = (json as { groups?: unknown }).groups;
  if (!Array.isArray(groups)) throw new DocumentError('/apis: expected an APIGroupList document with a groups list');
  return {
    groups: (groups as { name?: string; versions?: { version?: string }[]; preferredVersion?: { version?: string } }[]).map((g) => {
      if (typeof g.name !== 'string' || !Array.isArray(g.versions)) throw new DocumentError('/apis: a group without name or versions');
      const versions = g.versions.map((v) => v.version).filter((v): v is string => typeof v === 'string');
      const preferred = g.preferredVersion?.version;
      const ordered = preferred && versions.includes(preferred) ? [preferred, ...versions.filter((v) => v !== preferred)] : versions;
      return { name: g.name, versions: ordered };
    }),
    resources: undefined,
  };
}

function parseAggregated(json: RawAggregatedList, path: string): GroupListDocument {
  if (!Array.isArray(json.items)) throw new DocumentError(`${path}: an APIGroupDiscoveryList without items`);
  const groups: GroupInfo[] = [];
  const resources = new Map<string, ResourceInfo[]>();
  for (const item of json.items) {
    const group = item.metadata?.name ?? '';
    const versions: string[] = [];
    for (const v of item.versions ?? []) {
      if (typeof v.version !== 'string') continue;
      versions.push(v.version);
      // A stale group-version (an aggregated API that did not answer) is left
      // for the per-group-version fallback.
      if (v.freshness === 'Stale') continue;
      const list: ResourceInfo[] = [];
      for (const r of v.resources ?? []) {
        const kind = r.responseKind?.kind;
        if (!r.resource || !kind) continue;
        list.push({
          group,
          version: v.version,
          resource: r.resource,
          kind,
          singular: r.singularResource || kind.toLowerCase(),
          namespaced: r.scope === 'Namespaced',
          shortNames: r.shortNames ?? [],
          verbs: r.verbs ?? [],
          subresources: (r.subresources ?? []).map((s) => s.subresource).filter((s): s is string => typeof s === 'string'),
        });
      }
      resources.set(gvKey(group, v.version), list);
    }
    groups.push({ name: group, versions });
  }
  return { groups, resources };
}

interface RawResourceList {
  groupVersion?: string;
  resources?: { name?: string; singularName?: string; namespaced?: boolean; kind?: string; verbs?: string[]; shortNames?: string[]; group?: string; version?: string }[];
}

/** Parse `/api/v1` or `/apis/<group>/<version>` (an APIResourceList). */
export function parseResourceList(group: string, version: string, body: string): ResourceInfo[] {
  const json = parseJson(body, gvKey(group, version)) as RawResourceList;
  if (!Array.isArray(json.resources)) {
    throw new DocumentError(`${gvKey(group, version)}: expected an APIResourceList with resources`);
  }
  const subresources = new Map<string, string[]>();
  for (const r of json.resources) {
    const [parent, sub] = (r.name ?? '').split('/');
    if (parent && sub) subresources.set(parent, [...(subresources.get(parent) ?? []), sub]);
  }
  const out: ResourceInfo[] = [];
  for (const r of json.resources) {
    if (!r.name || r.name.includes('/') || !r.kind) continue;
    out.push({
      group,
      version,
      resource: r.name,
      kind: r.kind,
      singular: r.singularName || r.kind.toLowerCase(),
      namespaced: r.namespaced === true,
      shortNames: r.shortNames ?? [],
      verbs: r.verbs ?? [],
      subresources: subresources.get(r.name) ?? [],
    });
  }
  return out;
}
