/**
 * RBAC roles from permission requirements, and the RBAC authorizer's
 * decision for a request against them: what `kubeloop generate rbac` writes
 * and what its recording mode checks recorded requests with.
 */
import type { PermissionRequirement } from './permissions.js';

/** An RBAC PolicyRule as the API server stores it. */
export interface PolicyRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
  readonly verbs: readonly string[];
}

/** A ClusterRole, or a Role in its namespace. */
export interface RoleManifest {
  readonly apiVersion: 'rbac.authorization.k8s.io/v1';
  readonly kind: 'ClusterRole' | 'Role';
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly rules: readonly PolicyRule[];
}

/** Options of {@link rolesFor}. */
export interface RolesOptions {
  /** Name of the ClusterRole and of each namespace's Role. */
  readonly name: string;
}

const VERB_ORDER = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

function sortVerbs(verbs: Iterable<string>): string[] {
  const set = new Set(verbs);
  if (set.has('*')) return ['*'];
  const known = VERB_ORDER.filter((v) => set.has(v));
  const other = [...set].filter((v) => !VERB_ORDER.includes(v)).sort();
  return [...known, ...other];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Folds requirements into as few rules as RBAC allows: one per group, verb set and resource names. */
function rulesOf(requirements: readonly PermissionRequirement[]): PolicyRule[] {
  const byResource = new Map<string, { group: string; resource: string; names: readonly string[] | undefined; verbs: Set<string> }>();
  const byUrl = new Map<string, Set<string>>();
  for (const r of requirements) {
    if (r.nonResourceURLs) {
      for (const url of r.nonResourceURLs) {
        const verbs = byUrl.get(url) ?? new Set<string>();
        r.verbs.forEach((v) => verbs.add(v));
        byUrl.set(url, verbs);
      }
      continue;
    }
    const names = r.resourceNames ? [...r.resourceNames].sort() : undefined;
    const key = JSON.stringify([r.group ?? '', r.resource ?? '', names ?? null]);
    const entry = byResource.get(key) ?? { group: r.group ?? '', resource: r.resource ?? '', names, verbs: new Set<string>() };
    r.verbs.forEach((v) => entry.verbs.add(v));
    byResource.set(key, entry);
  }
  const grouped = new Map<string, { group: string; names: readonly string[] | undefined; verbs: string[]; resources: string[] }>();
  for (const e of byResource.values()) {
    const verbs = sortVerbs(e.verbs);
    const key = JSON.stringify([e.group, e.names ?? null, verbs]);
    const g = grouped.get(key) ?? { group: e.group, names: e.names, verbs, resources: [] };
    g.resources.push(e.resource);
    grouped.set(key, g);
  }
  const rules: PolicyRule[] = [...grouped.values()]
    .map((g) => ({ apiGroups: [g.group], resources: g.resources.sort(), ...(g.names ? { resourceNames: g.names } : {}), verbs: g.verbs }))
    .sort((a, b) => compare(a.apiGroups[0]!, b.apiGroups[0]!) || compare(a.resources[0]!, b.resources[0]!) || compare(a.verbs.join(), b.verbs.join()));
  const urlGroups = new Map<string, string[]>();
  for (const [url, verbs] of byUrl) {
    const key = sortVerbs(verbs).join(',');
    urlGroups.set(key, [...(urlGroups.get(key) ?? []), url]);
  }
  for (const [verbs, urls] of [...urlGroups].sort((a, b) => compare(a[0], b[0]))) rules.push({ nonResourceURLs: urls.sort(), verbs: verbs.split(',') });
  return rules;
}

/**
 * The roles that grant `requirements`: one ClusterRole for what is needed
 * cluster-wide, one Role per namespace for what is needed in namespaces
 * alone (a namespace-restricted manager, the leader-election Lease), all
 * named `options.name`. Rules are merged and sorted, so the output is stable
 * for `--check`.
 *
 * @example
 * ```ts
 * const roles = rolesFor(manager.permissions(), { name: 'harddisk-operator' });
 * roles.map((r) => r.kind); // ['ClusterRole', 'Role']
 * ```
 */
export function rolesFor(requirements: readonly PermissionRequirement[], options: RolesOptions): RoleManifest[] {
  const cluster: PermissionRequirement[] = [];
  const perNamespace = new Map<string, PermissionRequirement[]>();
  for (const r of requirements) {
    if (!r.namespaces || r.nonResourceURLs) {
      cluster.push(r);
      continue;
    }
    for (const ns of r.namespaces) perNamespace.set(ns, [...(perNamespace.get(ns) ?? []), r]);
  }
  const roles: RoleManifest[] = [];
  if (cluster.length > 0) roles.push({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: options.name }, rules: rulesOf(cluster) });
  for (const ns of [...perNamespace.keys()].sort()) {
    roles.push({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: options.name, namespace: ns }, rules: rulesOf(perNamespace.get(ns)!) });
  }
  return roles;
}

/** What the RBAC authorizer decides on: the attributes of one API request. */
export interface RequestAttributes {
  readonly verb: string;
  /** Set for resource requests. */
  readonly group?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** Set for non-resource requests (`/metrics`, `/apis` discovery). */
  readonly path?: string;
}

/**
 * The attributes the API server derives from a request's method and URL (its
 * RequestInfo): `GET /apis/apps/v1/namespaces/a/deployments?watch=true` is a
 * `watch` on `deployments` in `a`; `PATCH .../harddisks/d1/status` a `patch`
 * of `harddisks/status` named `d1`; `/api`, `/apis`, `/apis/g/v` and
 * `/version` are non-resource requests.
 *
 * @example
 * ```ts
 * requestAttributes('GET', '/api/v1/namespaces/default/configmaps?watch=1');
 * // { verb: 'watch', group: '', resource: 'configmaps', namespace: 'default' }
 * ```
 */
export function requestAttributes(method: string, url: string): RequestAttributes {
  const parsed = new URL(url, 'http://x');
  const parts = parsed.pathname.split('/').filter((p) => p !== '').map((p) => decodeURIComponent(p));
  const m = method.toUpperCase();
  let rest: string[];
  let group: string;
  if (parts[0] === 'api' && parts.length >= 3) {
    group = '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    group = parts[1]!;
    rest = parts.slice(3);
  } else {
    return { verb: m.toLowerCase(), path: parsed.pathname };
  }
  let watchPath = false;
  if (rest[0] === 'watch') {
    watchPath = true;
    rest = rest.slice(1);
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  } else if (rest[0] === 'namespaces' && rest.length === 2) {
    namespace = rest[1]; // a namespace is in its own namespace, as the API server says
  }
  const [resource, name, subresource] = rest;
  const q = parsed.searchParams;
  const watching = watchPath || q.get('watch') === 'true' || q.get('watch') === '1';
  let verb: string;
  switch (m) {
    case 'GET':
    case 'HEAD':
      verb = watching ? 'watch' : name !== undefined ? 'get' : 'list';
      break;
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name !== undefined ? 'delete' : 'deletecollection';
      break;
    default:
      verb = m.toLowerCase();
  }
  let objectName = name;
  if ((verb === 'list' || verb === 'watch') && objectName === undefined) {
    // A list or watch of one object by field selector is authorized as that object, as the API server does.
    const byName = /(?:^|,)metadata\.name==?([^,]+)/.exec(q.get('fieldSelector') ?? '');
    if (byName) objectName = byName[1];
  }
  return {
    verb,
    group,
    resource: resource ?? '',
    ...(subresource !== undefined ? { subresource } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(objectName !== undefined ? { name: objectName } : {}),
  };
}

function has(list: readonly string[] | undefined, value: string): boolean {
  return list !== undefined && (list.includes('*') || list.includes(value));
}

/** Whether `rule` allows `attrs` (RBAC's RuleAllows, wildcards and `/*` URL prefixes included). */
export function ruleAllows(rule: PolicyRule, attrs: RequestAttributes): boolean {
  if (!has(rule.verbs, attrs.verb)) return false;
  if (attrs.path !== undefined) {
    return (rule.nonResourceURLs ?? []).some((u) => u === '*' || u === attrs.path || (u.endsWith('*') && attrs.path!.startsWith(u.slice(0, -1))));
  }
  if (!has(rule.apiGroups, attrs.group ?? '')) return false;
  const full = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : (attrs.resource ?? '');
  const resources = rule.resources ?? [];
  const resourceOk = resources.some((r) => r === '*' || r === full || (attrs.subresource !== undefined && r === `*/${attrs.subresource}`));
  if (!resourceOk) return false;
  if (rule.resourceNames && rule.resourceNames.length > 0) return attrs.name !== undefined && rule.resourceNames.includes(attrs.name);
  return true;
}

/**
 * Whether the roles allow a request, as if each were bound to the caller:
 * a ClusterRole anywhere, a Role in its own namespace only.
 *
 * @example
 * ```ts
 * authorize(rolesFor(manager.permissions(), { name: 'op' }), requestAttributes('POST', '/api/v1/namespaces/a/configmaps'));
 * ```
 */
export function authorize(roles: readonly RoleManifest[], attrs: RequestAttributes): boolean {
  return roles.some((role) => (role.kind === 'ClusterRole' || (attrs.namespace !== undefined && role.metadata.namespace === attrs.namespace)) && role.rules.some((rule) => ruleAllows(rule, attrs)));
}

/** A request {@link auditRequests} found the roles deny. */
export interface DeniedRequest {
  readonly method: string;
  readonly url: string;
  readonly attributes: RequestAttributes;
}

/** A verb on a resource (or URL) a rule grants that no request used. */
export interface UnusedGrant {
  readonly role: string;
  readonly namespace?: string;
  /** `group/resource` (`apps/deployments`, `/configmaps` for core), or the URL. */
  readonly resource: string;
  readonly verb: string;
}

/** What {@link auditRequests} found. */
export interface RequestAudit {
  readonly denied: readonly DeniedRequest[];
  readonly unused: readonly UnusedGrant[];
}

/**
 * Checks recorded requests against roles: which the roles would deny, and
 * which granted verbs no request used. Discovery (`/api`, `/apis`,
 * `/version`, `/openapi`) is allowed to every authenticated user by the
 * default `system:discovery` role and is not counted.
 *
 * @example
 * ```ts
 * const proxy = await startApiProxy(env.kubeConfig); // the operator's traffic goes through it
 * // ... run the operator's tests ...
 * const { denied, unused } = auditRequests(roles, proxy.requests);
 * ```
 */
export function auditRequests(roles: readonly RoleManifest[], requests: readonly { readonly method: string; readonly url: string }[]): RequestAudit {
  const used = new Set<string>();
  const denied: DeniedRequest[] = [];
  for (const req of requests) {
    const attributes = requestAttributes(req.method, req.url);
    if (attributes.path !== undefined && /^\/(api|apis|version|openapi)(\/|$)/.test(attributes.path)) continue;
    let allowed = false;
    for (const role of roles) {
      if (role.kind === 'Role' && role.metadata.namespace !== attributes.namespace) continue;
      role.rules.forEach((rule, i) => {
        if (ruleAllows(rule, attributes)) {
          allowed = true;
          used.add(`${role.kind}/${role.metadata.namespace ?? ''}/${i}/${grantKey(rule, attributes)}`);
        }
      });
    }
    if (!allowed) denied.push({ method: req.method, url: req.url, attributes });
  }
  const unused: UnusedGrant[] = [];
  for (const role of roles) {
    role.rules.forEach((rule, i) => {
      const targets = rule.nonResourceURLs ?? (rule.apiGroups ?? []).flatMap((g) => (rule.resources ?? []).map((r) => `${g}/${r}`));
      for (const target of targets) {
        for (const verb of rule.verbs) {
          if (!used.has(`${role.kind}/${role.metadata.namespace ?? ''}/${i}/${target} ${verb}`)) {
            unused.push({ role: role.metadata.name, ...(role.metadata.namespace ? { namespace: role.metadata.namespace } : {}), resource: target, verb });
          }
        }
      }
    });
  }
  return { denied, unused };
}

/** The rule's own target and verb that matched, so wildcards count as used by what they matched. */
function grantKey(rule: PolicyRule, attrs: RequestAttributes): string {
  const verb = rule.verbs.includes(attrs.verb) ? attrs.verb : '*';
  if (attrs.path !== undefined) {
    const url = (rule.nonResourceURLs ?? []).find((u) => u === attrs.path) ?? (rule.nonResourceURLs ?? []).find((u) => u === '*' || (u.endsWith('*') && attrs.path!.startsWith(u.slice(0, -1)))) ?? '';
    return `${url} ${verb}`;
  }
  const group = rule.apiGroups?.includes(attrs.group ?? '') ? (attrs.group ?? '') : '*';
  const full = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : (attrs.resource ?? '');
  const resource = rule.resources?.includes(full) ? full : attrs.subresource !== undefined && rule.resources?.includes(`*/${attrs.subresource}`) ? `*/${attrs.subresource}` : '*';
  return `${group}/${resource} ${verb}`;
}
