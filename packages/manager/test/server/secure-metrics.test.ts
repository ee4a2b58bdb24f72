/**
 * The secure metrics endpoint (ManagerOptions.secureMetrics) against the real
 * API server: HTTPS with a certificate the caller verifies against its CA,
 * 401 without a valid bearer token, 403 for a ServiceAccount without the
 * permission, 200 for one bound to a ClusterRole allowing `get` on
 * `/metrics`; a rotated certificate is served to new connections without a
 * restart; plain HTTP is refused at the handshake; TLS alone when
 * authorization is off.
 */
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { connect } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@kubeloop/client';
import { createCertificateAuthority } from '@kubeloop/pki';
import type { CertificateAuthority } from '@kubeloop/pki';
import type { CertificateSource, ServingCertificate } from '@kubeloop/webhook';
import { staticCertificate } from '@kubeloop/webhook';
import { isManagerError } from '../../src/index.js';
import { eventually, newNamespace, run, testClient, testManager } from '../support.js';
import { uniqueName } from '../../../../test/support/env.js';

let admin: Client;
let ns: string;
let ca: CertificateAuthority;
let allowedToken: string;
let deniedToken: string;
const role = uniqueName('metrics-reader');

async function tokenFor(name: string): Promise<string> {
  const sa = await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });
  const answer = await admin.subResource('token').create<{ status: { token: string } }>({ ...sa, apiVersion: 'v1', kind: 'ServiceAccount' }, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  return answer.status.token;
}

const serving = (): ServingCertificate => ca.issue({ commonName: 'metrics', usage: 'server', hosts: ['127.0.0.1'] });

/** GET over HTTPS, trusting only the test CA; resolves with the status, body and the serial of the certificate served. */
function get(url: string, token?: string): Promise<{ status: number; body: string; serial: string; authenticate: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: ca.certPem, agent: false, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      const serial = (res.socket as TLSSocket).getPeerX509Certificate()?.serialNumber ?? '';
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, serial, authenticate: res.headers['www-authenticate'] }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  admin = testClient('secure-metrics-test');
  ns = await newNamespace(admin, 'secmet');
  ca = createCertificateAuthority({ commonName: 'metrics-test-ca' });
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
});

afterAll(async () => {
  await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: role } }).catch(() => undefined);
  await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role } }).catch(() => undefined);
});

describe('secure metrics', () => {
  it('serves HTTPS: 401 without a token, 403 without the permission, 200 with it', async () => {
    const manager = testManager(ns, { metricsBindAddress: '127.0.0.1:0', secureMetrics: { certificates: staticCertificate(serving()) } });
    const running = run(manager);
    try {
      await eventually(() => manager.metricsUrl, (u) => u !== undefined, 'the metrics server to listen');
      const url = `${manager.metricsUrl}/metrics`;
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const anonymous = await get(url);
      expect(anonymous.status).toBe(401);
      expect(anonymous.authenticate).toBe('Bearer');
      expect(anonymous.body).toContain('Unauthorized: no bearer token');
      expect((await get(url, 'not-a-token')).status).toBe(401);
      const denied = await get(url, deniedToken);
      expect(denied.status).toBe(403);
      expect(denied.body).toContain(`user "system:serviceaccount:${ns}:nobody" cannot get path "/metrics"`);
      const allowed = await get(url, allowedToken);
      expect(allowed.status).toBe(200);
      expect(allowed.body).toContain('# TYPE controller_runtime_reconcile_total counter');
      // Paths are authorized as they are asked for: the permission is for /metrics only.
      expect((await get(`${manager.metricsUrl}/debug`, allowedToken)).status).toBe(403);
    } finally {
      await running.stop();
    }
  });

  it('refuses plain HTTP at the handshake, and serves a rotated certificate to new connections', async () => {
    let push: ((c: ServingCertificate) => void) | undefined;
    const rotating: CertificateSource = {
      start: (_signal, update) => {
        push = update;
        return Promise.resolve(serving());
      },
    };
    const manager = testManager(ns, { metricsBindAddress: '127.0.0.1:0', secureMetrics: { certificates: rotating, authorization: false } });
    const running = run(manager);
    try {
      await eventually(() => manager.metricsUrl, (u) => u !== undefined, 'the metrics server to listen');
      const url = `${manager.metricsUrl}/metrics`;
      const first = await get(url);
      expect(first.status).toBe(200);
      const next = serving();
      push?.(next);
      const second = await get(url);
      expect(second.status).toBe(200);
      expect(second.serial).toBe(new X509Certificate(next.certPem).serialNumber);
      expect(second.serial).not.toBe(first.serial);
      // A pair that cannot serve is refused and the current certificate kept.
      push?.({ certPem: next.certPem, keyPem: serving().keyPem });
      expect((await get(url)).serial).toBe(second.serial);
      // Plain HTTP gets no metrics: the TLS server closes the socket on a request that is not a handshake.
      const { port } = new URL(url);
      const plain = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'));
        let got = '';
        socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
        socket.on('close', () => resolve(got));
        socket.on('error', reject);
      });
      expect(plain).not.toContain('controller_runtime');
    } finally {
      await running.stop();
    }
  });

  it('without certificates it serves a self-signed one made at start (the client must skip verification)', async () => {
    const manager = testManager(ns, { metricsBindAddress: '127.0.0.1:0', secureMetrics: {} });
    const running = run(manager);
    try {
      await eventually(() => manager.metricsUrl, (u) => u !== undefined, 'the metrics server to listen');
      const answer = await new Promise<{ status: number; issuer: string }>((resolve, reject) => {
        const req = request(`${manager.metricsUrl}/metrics`, { rejectUnauthorized: false, agent: false, headers: { authorization: `Bearer ${allowedToken}` } }, (res) => {
          const issuer = (res.socket as TLSSocket).getPeerX509Certificate()?.issuer ?? '';
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, issuer }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(answer).toEqual({ status: 200, issuer: 'CN=kubeloop-self-signed-ca' });
      // a client that verifies refuses it
      await expect(get(`${manager.metricsUrl}/metrics`, allowedToken)).rejects.toThrow();
    } finally {
      await running.stop();
    }
  });

  it('a certificate source that cannot give a first certificate fails start with a typed error; a bad source is refused at createManager', async () => {
    const manager = testManager(ns, { metricsBindAddress: '127.0.0.1:0', secureMetrics: { certificates: { start: () => Promise.reject(new Error('no such file /certs/tls.crt')) } } });
    const err = await manager.start(AbortSignal.timeout(30_000)).then(() => undefined, (e: unknown) => e);
    expect(isManagerError(err) && err.reason).toBe('InvalidOptions');
    expect(String((err as Error).message)).toContain('no serving certificate for the metrics server: no such file /certs/tls.crt');
    expect(() => testManager(ns, { secureMetrics: { certificates: {} as CertificateSource } })).toThrow(/secureMetrics.certificates must be a certificate source/);
  });
});
