/**
 * Roles from permission requirements, request attributes from URLs, and the
 * authorizer's decision. The decision is checked against the real RBAC
 * authorizer: the same roles are created on the API server and each request
 * is asked about with a SubjectAccessReview for a user bound to them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@kubeloop/client';
import { auditRequests, authorize, requestAttributes, rolesFor } from '../../src/rbac/index.js';
import type { PermissionRequirement, RequestAttributes, RoleManifest } from '../../src/rbac/index.js';
import { newNamespace, testClient } from '../support.js';
import { uniqueName } from '../../../../test/support/env.js';

const needs: PermissionRequirement[] = [
  { group: 'crd-demo.io', resource: 'harddisks', verbs: ['get', 'list', 'watch'], reason: 'r' },
  { group: 'crd-demo.io', resource: 'harddisks', verbs: ['patch', 'update'], reason: 'r' },
  { group: 'crd-demo.io', resource: 'harddisks/status', verbs: ['get', 'update', 'patch'], reason: 'r' },
  { group: '', resource: 'configmaps', verbs: ['watch', 'list', 'get'], reason: 'r' },
  { group: '', resource: 'secrets', verbs: ['get'], resourceNames: ['tls'], namespaces: ['ops'], reason: 'r' },
  { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'create', 'update'], namespaces: ['ops'], reason: 'r' },
  { nonResourceURLs: ['/metrics'], verbs: ['get'], reason: 'r' },
];

describe('rolesFor', () => {
  it('merges verbs per resource and resources per verb set, cluster-wide into a ClusterRole and namespaced into Roles', () => {
    const roles = rolesFor(needs, { name: 'op' });
    expect(roles).toEqual([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'op' },
        rules: [
          { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: ['crd-demo.io'], resources: ['harddisks'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
          { apiGroups: ['crd-demo.io'], resources: ['harddisks/status'], verbs: ['get', 'update', 'patch'] },
          { nonResourceURLs: ['/metrics'], verbs: ['get'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'op', namespace: 'ops' },
        rules: [
          { apiGroups: [''], resources: ['secrets'], resourceNames: ['tls'], verbs: ['get'] },
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
        ],
      },
    ]);
  });

  it('is stable: the order of requirements does not change the output', () => {
    expect(rolesFor([...needs].reverse(), { name: 'op' })).toEqual(rolesFor(needs, { name: 'op' }));
  });
});

describe('requestAttributes', () => {
  it.each<[string, string, RequestAttributes]>([
    ['GET', '/api/v1/namespaces/a/configmaps?watch=true&resourceVersion=5', { verb: 'watch', group: '', resource: 'configmaps', namespace: 'a' }],
    ['GET', '/api/v1/configmaps?limit=500', { verb: 'list', group: '', resource: 'configmaps' }],
    ['GET', '/apis/crd-demo.io/v1/namespaces/a/harddisks/d1', { verb: 'get', group: 'crd-demo.io', resource: 'harddisks', namespace: 'a', name: 'd1' }],
    ['PATCH', '/apis/crd-demo.io/v1/namespaces/a/harddisks/d1/status', { verb: 'patch', group: 'crd-demo.io', resource: 'harddisks', subresource: 'status', namespace: 'a', name: 'd1' }],
    ['POST', '/apis/events.k8s.io/v1/namespaces/a/events', { verb: 'create', group: 'events.k8s.io', resource: 'events', namespace: 'a' }],
    ['PUT', '/apis/coordination.k8s.io/v1/namespaces/ops/leases/op', { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'ops', name: 'op' }],
    ['DELETE', '/api/v1/namespaces/a/configmaps', { verb: 'deletecollection', group: '', resource: 'configmaps', namespace: 'a' }],
    ['DELETE', '/api/v1/namespaces/a', { verb: 'delete', group: '', resource: 'namespaces', namespace: 'a', name: 'a' }],
    ['GET', '/api/v1/watch/namespaces/a/pods', { verb: 'watch', group: '', resource: 'pods', namespace: 'a' }],
    ['GET', '/api/v1/namespaces/a/secrets?fieldSelector=metadata.name%3Dtls&watch=1', { verb: 'watch', group: '', resource: 'secrets', namespace: 'a', name: 'tls' }],
    ['GET', '/apis/apps/v1', { verb: 'get', path: '/apis/apps/v1' }],
    ['GET', '/metrics', { verb: 'get', path: '/metrics' }],
  ])('%s %s', (method, url, expected) => {
    expect(requestAttributes(method, url)).toEqual(expected);
  });
});

describe('authorize agrees with the API server’s RBAC authorizer', () => {
  let admin: Client;
  let ns: string;
  const user = uniqueName('rbac-probe');
  let roles: RoleManifest[];
  const created: { kind: string; name: string; namespace?: string }[] = [];

  beforeAll(async () => {
    admin = testClient('rbac-test');
    ns = await newNamespace(admin, 'rbac');
    const name = uniqueName('rbac-role');
    roles = rolesFor(
      needs.map((n) => (n.namespaces ? { ...n, namespaces: [ns] } : n)),
      { name },
    );
    for (const role of roles) {
      await admin.create({ ...role, rules: role.rules.map((r) => ({ ...r })) } as never);
      const binding =
        role.kind === 'ClusterRole'
          ? { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name } }
          : { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, namespace: ns } };
      await admin.create({ ...binding, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: role.kind, name }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }] } as never);
      created.push({ kind: role.kind, name, ...(role.metadata.namespace ? { namespace: ns } : {}) });
    }
  });

  afterAll(async () => {
    for (const c of created) {
      const group = 'rbac.authorization.k8s.io/v1';
      await admin.delete({ apiVersion: group, kind: c.kind === 'ClusterRole' ? 'ClusterRoleBinding' : 'RoleBinding' }, { name: c.name, ...(c.namespace ? { namespace: c.namespace } : {}) }).catch(() => undefined);
      await admin.delete({ apiVersion: group, kind: c.kind }, { name: c.name, ...(c.namespace ? { namespace: c.namespace } : {}) }).catch(() => undefined);
    }
  });

  it('on resource and non-resource requests, allowed and denied alike', async () => {
    const requests: [string, string][] = [
      ['GET', `/api/v1/namespaces/${ns}/configmaps?watch=true`],
      ['POST', `/api/v1/namespaces/${ns}/configmaps`],
      ['GET', '/apis/crd-demo.io/v1/harddisks'],
      ['PATCH', `/apis/crd-demo.io/v1/namespaces/${ns}/harddisks/d1`],
      ['DELETE', `/apis/crd-demo.io/v1/namespaces/${ns}/harddisks/d1`],
      ['PUT', `/apis/crd-demo.io/v1/namespaces/${ns}/harddisks/d1/status`],
      ['PUT', `/apis/crd-demo.io/v1/namespaces/${ns}/harddisks/d1/finalizers`],
      ['GET', `/api/v1/namespaces/${ns}/secrets/tls`],
      ['GET', `/api/v1/namespaces/${ns}/secrets/other`],
      ['GET', `/api/v1/namespaces/${ns}/secrets`],
      ['GET', '/api/v1/namespaces/default/secrets/tls'],
      ['PUT', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/op`],
      ['PUT', '/apis/coordination.k8s.io/v1/namespaces/default/leases/op'],
      ['GET', '/metrics'],
      ['POST', '/metrics'],
      ['GET', '/healthz'],
    ];
    const ours: boolean[] = [];
    const theirs: boolean[] = [];
    for (const [method, url] of requests) {
      const a = requestAttributes(method, url);
      ours.push(authorize(roles, a));
      const spec =
        a.path !== undefined
          ? { nonResourceAttributes: { path: a.path, verb: a.verb } }
          : { resourceAttributes: { verb: a.verb, group: a.group, resource: a.resource, ...(a.subresource ? { subresource: a.subresource } : {}), ...(a.namespace ? { namespace: a.namespace } : {}), ...(a.name ? { name: a.name } : {}) } };
      const review = await admin.create<{ apiVersion: string; kind: string; status?: { allowed?: boolean } }>({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user, ...spec } } as never);
      theirs.push(review.status?.allowed === true);
    }
    expect(ours.map((v, i) => `${requests[i]!.join(' ')} ${v}`)).toEqual(theirs.map((v, i) => `${requests[i]!.join(' ')} ${v}`));
    // Both kinds of answer were asked about.
    expect(theirs.filter(Boolean).length).toBeGreaterThan(3);
    expect(theirs.filter((v) => !v).length).toBeGreaterThan(3);
  });
});

describe('auditRequests', () => {
  it('lists the requests the roles deny and the grants no request used; discovery is not counted', () => {
    const roles = rolesFor(needs, { name: 'op' });
    const { denied, unused } = auditRequests(roles, [
      { method: 'GET', url: '/apis' },
      { method: 'GET', url: '/api/v1/configmaps?watch=true' },
      { method: 'GET', url: '/api/v1/configmaps' },
      { method: 'GET', url: '/api/v1/namespaces/a/configmaps/x' },
      { method: 'POST', url: '/api/v1/namespaces/a/configmaps' },
      { method: 'PATCH', url: '/apis/crd-demo.io/v1/namespaces/a/harddisks/d/status' },
      { method: 'PUT', url: '/apis/coordination.k8s.io/v1/namespaces/ops/leases/l' },
      { method: 'PUT', url: '/apis/coordination.k8s.io/v1/namespaces/a/leases/l' },
    ]);
    expect(denied.map((d) => `${d.method} ${d.url}`)).toEqual(['POST /api/v1/namespaces/a/configmaps', 'PUT /apis/coordination.k8s.io/v1/namespaces/a/leases/l']);
    const grant = (u: { resource: string; verb: string; namespace?: string }): string => `${u.namespace ?? '*'} ${u.resource} ${u.verb}`;
    const unusedKeys = unused.map(grant);
    expect(unusedKeys).toContain('* crd-demo.io/harddisks get');
    expect(unusedKeys).toContain('* crd-demo.io/harddisks/status update');
    expect(unusedKeys).toContain('ops coordination.k8s.io/leases get');
    expect(unusedKeys).toContain('* /metrics get');
    expect(unusedKeys).not.toContain('* /configmaps watch');
    expect(unusedKeys).not.toContain('* /configmaps get');
    expect(unusedKeys).not.toContain('* crd-demo.io/harddisks/status patch');
    expect(unusedKeys).not.toContain('ops coordination.k8s.io/leases update');
  });
});
