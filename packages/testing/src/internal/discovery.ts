/**
 * Discovery documents as kube-apiserver serves them: aggregated
 * (apidiscovery.k8s.io/v2, asked for with the Accept header) and the legacy
 * APIVersions / APIGroupList / APIGroup / APIResourceList.
 */
import type { ResourceType } from './resources.js';

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const SUB_VERBS = ['get', 'patch', 'update'];

export const AGGREGATED_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** Whether an Accept header asks for aggregated discovery first among what it accepts. */
export function wantsAggregated(accept: string | undefined): boolean {
  if (!accept) return false;
  for (const part of accept.split(',')) {
    const p = part.trim();
    if (/as=APIGroupDiscoveryList/i.test(p) && /g=apidiscovery\.k8s\.io/i.test(p) && /v=v2(;|$)/i.test(p)) return true;
    if (/^application\/json\s*(;|$)/i.test(p) && !/as=/i.test(p)) return false;
  }
  return false;
}

interface GroupVersions {
  readonly group: string;
  readonly versions: string[];
}

/** Groups and their versions, core first, in the order types were registered. */
export function groupVersions(types: Iterable<ResourceType>): GroupVersions[] {
  const byGroup = new Map<string, string[]>();
  for (const t of types) {
    const list = byGroup.get(t.group) ?? [];
    for (const v of t.versions) if (!list.includes(v)) list.push(v);
    byGroup.set(t.group, list);
  }
  return [...byGroup.entries()].map(([group, versions]) => ({ group, versions })).sort((a, b) => (a.group === '' ? -1 : b.group === '' ? 1 : 0));
}

/** Subresources served besides status and scale (subresources.ts): what they answer with and their verbs. */
export const OTHER_SUBRESOURCES: Readonly<Record<string, { readonly name: string; readonly group?: string; readonly version?: string; readonly kind?: string; readonly verbs: readonly string[] }>> = {
  '/pods': { name: 'eviction', group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] },
  '/serviceaccounts': { name: 'token', group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] },
  '/namespaces': { name: 'finalize', verbs: ['update'] },
};

function subresources(t: ResourceType): string[] {
  const other = t.builtin ? OTHER_SUBRESOURCES[`${t.group}/${t.plural}`] : undefined;
  return [...(t.status ? ['status'] : []), ...(t.scale ? ['scale'] : []), ...(other ? [other.name] : [])].sort();
}

/** What a subresource answers with (undefined: the kind itself) and its verbs. */
function subresourceKind(t: ResourceType, s: string): { group?: string; version?: string; kind?: string; verbs: readonly string[] } {
  if (s === 'scale') return { group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: SUB_VERBS };
  if (s === 'status') return { verbs: SUB_VERBS };
  return OTHER_SUBRESOURCES[`${t.group}/${t.plural}`]!;
}

function aggregatedResource(t: ResourceType): Record<string, unknown> {
  return {
    resource: t.plural,
    responseKind: { group: '', version: '', kind: t.kind },
    scope: t.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: t.singular,
    verbs: VERBS,
    ...(t.shortNames.length > 0 ? { shortNames: t.shortNames } : {}),
    ...(t.categories.length > 0 ? { categories: t.categories } : {}),
    ...(subresources(t).length > 0
      ? {
          subresources: subresources(t).map((s) => {
            const k = subresourceKind(t, s);
            return { subresource: s, responseKind: { group: k.group ?? '', version: k.version ?? '', kind: k.kind ?? t.kind }, verbs: k.verbs };
          }),
        }
      : {}),
  };
}

/** `/api` or `/apis` as an APIGroupDiscoveryList. */
export function aggregatedDocument(types: readonly ResourceType[], core: boolean): string {
  const groups = groupVersions(types).filter((g) => (g.group === '') === core);
  return JSON.stringify({
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: groups.map((g) => ({
      metadata: { name: g.group, creationTimestamp: null },
      versions: g.versions.map((v) => ({
        version: v,
        resources: types.filter((t) => t.group === g.group && t.versions.includes(v)).map(aggregatedResource),
        freshness: 'Current',
      })),
    })),
  });
}

export function apiVersionsDocument(): string {
  return JSON.stringify({ kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:6443' }] });
}

function groupDoc(g: GroupVersions): Record<string, unknown> {
  const gv = (v: string): Record<string, string> => ({ groupVersion: `${g.group}/${v}`, version: v });
  return { name: g.group, versions: g.versions.map(gv), preferredVersion: gv(g.versions[0]!) };
}

export function apiGroupListDocument(types: readonly ResourceType[]): string {
  return JSON.stringify({ kind: 'APIGroupList', apiVersion: 'v1', groups: groupVersions(types).filter((g) => g.group !== '').map(groupDoc) });
}

export function apiGroupDocument(types: readonly ResourceType[], group: string): string | undefined {
  const g = groupVersions(types).find((x) => x.group === group);
  return g ? JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(g) }) : undefined;
}

export function resourceListDocument(types: readonly ResourceType[], group: string, version: string): string | undefined {
  const served = types.filter((t) => t.group === group && t.versions.includes(version));
  if (served.length === 0) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const t of served) {
    resources.push({
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: VERBS,
      ...(t.shortNames.length > 0 ? { shortNames: t.shortNames } : {}),
      ...(t.categories.length > 0 ? { categories: t.categories } : {}),
    });
    for (const s of subresources(t)) {
      const k = subresourceKind(t, s);
      resources.push({ name: `${t.plural}/${s}`, singularName: '', namespaced: t.namespaced, ...(k.group !== undefined ? { group: k.group, version: k.version } : {}), kind: k.kind ?? t.kind, verbs: k.verbs });
    }
  }
  return JSON.stringify({ kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources });
}
