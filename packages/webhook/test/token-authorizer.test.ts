/**
 * Bearer-token authorization against the real API server: ServiceAccount
 * tokens from the TokenRequest API, a ClusterRole allowing `get` on the
 * non-resource URL /metrics, TokenReview + SubjectAccessReview. 401 without a
 * valid token, 403 without permission, 200 with it; decisions cached (the
 * reviews counted at a recording proxy) and shared between concurrent calls;
 * and a small secure metrics server built from it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry, Counter } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { createTokenAuthorizer } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const ns = uniqueName('authz');
const role = uniqueName('metrics-reader');
let admin: Client;
let proxy: ApiProxy;
let allowedToken: string;
let deniedToken: string;

async function tokenFor(name: string): Promise<string> {
  const sa = await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });
  const request = await admin.subResource('token').create<{ status: { token: string } }>({ ...sa, apiVersion: 'v1', kind: 'ServiceAccount' }, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  return request.status.token;
}

beforeAll(async () => {
  admin = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'webhook-test' });
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  allowedToken = await tokenFor('prometheus');
  deniedToken = await tokenFor('nobody');
  await admin.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] });
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: role },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: ns }],
  });
  proxy = await startApiProxy(testKubeConfig());
});

afterAll(async () => {
  await proxy?.close();
  await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: role } }).catch(() => undefined);
  await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role } }).catch(() => undefined);
});

function reviews(): { tokenReviews: number; accessReviews: number } {
  return {
    tokenReviews: proxy.count((r) => r.method === 'POST' && r.path.endsWith('/tokenreviews')),
    accessReviews: proxy.count((r) => r.method === 'POST' && r.path.endsWith('/subjectaccessreviews')),
  };
}

function authorizer(options: { cacheTtlMs?: number; maxCacheEntries?: number } = {}) {
  return createTokenAuthorizer({ client: createClient({ kubeConfig: proxy.kubeConfig, fieldOwner: 'metrics' }), ...options });
}

describe('token authorizer', () => {
  it('401 without a valid token, 403 without permission, 200 with it', async () => {
    const authz = authorizer();
    expect(await authz.authorize({})).toEqual({ status: 401, reason: 'Unauthorized: no bearer token' });
    expect((await authz.authorize({ authorization: 'Basic dXNlcjpwYXNz' })).status).toBe(401);
    const garbage = await authz.authorize({ authorization: 'Bearer not-a-token' });
    expect(garbage.status).toBe(401);
    expect(garbage.reason).toMatch(/^Unauthorized: /);
    const denied = await authz.authorize({ authorization: `Bearer ${deniedToken}` });
    expect(denied).toMatchObject({ status: 403, user: `system:serviceaccount:${ns}:nobody` });
    expect(denied.reason).toContain(`Forbidden: user "system:serviceaccount:${ns}:nobody" cannot get path "/metrics"`);
    expect(await authz.authorize({ authorization: `Bearer ${allowedToken}`, path: '/metrics', verb: 'GET' })).toEqual({
      status: 200,
      reason: `user "system:serviceaccount:${ns}:prometheus" may get path "/metrics"`,
      user: `system:serviceaccount:${ns}:prometheus`,
    });
    // The permission is for /metrics only.
    expect((await authz.authorize({ authorization: `Bearer ${allowedToken}`, path: '/debug/pprof' })).status).toBe(403);
  });

  it('caches decisions for the TTL, and shares one review between concurrent calls', async () => {
    const authz = authorizer({ cacheTtlMs: 500 });
    proxy.clearRequests();
    const decisions = await Promise.all(Array.from({ length: 20 }, () => authz.authorize({ authorization: `Bearer ${allowedToken}` })));
    expect(decisions.every((d) => d.status === 200)).toBe(true);
    expect(reviews()).toEqual({ tokenReviews: 1, accessReviews: 1 });
    await authz.authorize({ authorization: `Bearer ${allowedToken}` });
    await authz.authorize({ authorization: `Bearer ${deniedToken}` });
    await authz.authorize({ authorization: `Bearer ${deniedToken}` });
    expect(reviews()).toEqual({ tokenReviews: 2, accessReviews: 2 });
    await new Promise((r) => setTimeout(r, 600));
    await authz.authorize({ authorization: `Bearer ${allowedToken}` });
    expect(reviews()).toEqual({ tokenReviews: 3, accessReviews: 3 });
  });

  it('keeps at most maxCacheEntries decisions', async () => {
    const authz = authorizer({ maxCacheEntries: 1 });
    proxy.clearRequests();
    await authz.authorize({ authorization: `Bearer ${allowedToken}` });
    await authz.authorize({ authorization: `Bearer ${deniedToken}` }); // evicts the first
    await authz.authorize({ authorization: `Bearer ${deniedToken}` });
    await authz.authorize({ authorization: `Bearer ${allowedToken}` });
    expect(reviews().tokenReviews).toBe(3);
  });

  it('a review that fails is a 500 decision, not cached', async () => {
    const authz = authorizer();
    await proxy.refuse();
    try {
      const decision = await authz.authorize({ authorization: `Bearer ${allowedToken}` });
      expect(decision.status).toBe(500);
      expect(decision.reason).toMatch(/^the token could not be reviewed: /);
    } finally {
      await proxy.accept();
    }
    expect((await authz.authorize({ authorization: `Bearer ${allowedToken}` })).status).toBe(200);
    const cancelled = new AbortController();
    cancelled.abort();
    expect((await authz.authorize({ authorization: `Bearer ${deniedToken}` }, cancelled.signal)).status).toBe(500);
  });

  it('guards a metrics endpoint: 401, 403, 200', async () => {
    const registry = new Registry();
    new Counter({ name: 'demo_total', help: 'demo', registers: [registry] }).inc();
    const authz = authorizer();
    const server = createServer((req, res) => {
      void (async () => {
        const decision = await authz.authorize({ authorization: req.headers.authorization, path: new URL(req.url ?? '/', 'http://x').pathname, verb: req.method ?? 'GET' });
        if (decision.status !== 200) {
          res.writeHead(decision.status, { 'content-type': 'text/plain' }).end(`${decision.reason}\n`);
          return;
        }
        res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
      })();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    try {
      expect((await fetch(url)).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: `Bearer ${deniedToken}` } })).status).toBe(403);
      const ok = await fetch(url, { headers: { authorization: `Bearer ${allowedToken}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('demo_total 1');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
