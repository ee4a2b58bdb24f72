import { X509Certificate, createPublicKey, createSign, createVerify, generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:https';
import { connect } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  createCertificateAuthority,
  createSigningKeyPair,
  isPkiError,
  loadCertificateAuthority,
  parseCertificates,
  parsePrivateKey,
} from '../src/index.js';
import type { PkiErrorReason } from '../src/index.js';

function reasonOf(fn: () => unknown): PkiErrorReason | undefined {
  try {
    fn();
  } catch (err) {
    if (isPkiError(err)) return err.reason;
    throw err;
  }
  return undefined;
}

describe('certificate generation', () => {
  const ca = createCertificateAuthority({ commonName: 'test-ca' });

  it('makes a self-signed CA that verifies itself', () => {
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe('CN=test-ca');
    expect(cert.issuer).toBe('CN=test-ca');
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.checkPrivateKey(parsePrivateKey(ca.keyPem))).toBe(true);
    expect(ca.certificate.fingerprint256).toBe(cert.fingerprint256);
  });

  it('issues a serving certificate with IP and DNS names, signed by the CA', () => {
    const leaf = ca.issue({ commonName: 'kube-apiserver', usage: 'server', hosts: ['127.0.0.1', 'localhost', '::1', '*.svc.example'] });
    const cert = new X509Certificate(leaf.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBe('::1');
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.subjectAltName).toBe('IP Address:127.0.0.1, DNS:localhost, IP Address:0:0:0:0:0:0:0:1, DNS:*.svc.example');
    expect(cert.checkHost('example.com')).toBeUndefined();
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(cert.checkPrivateKey(parsePrivateKey(leaf.keyPem))).toBe(true);
  });

  it('issues a client certificate with organizations (the system:masters admin)', () => {
    const leaf = ca.issue({ commonName: 'admin', organizations: ['system:masters'], usage: 'client' });
    const cert = new X509Certificate(leaf.certPem);
    expect(cert.subject.split('\n').sort()).toEqual(['CN=admin', 'O=system:masters']);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(new Date(cert.validTo).getTime()).toBeGreaterThan(Date.now() + 300 * 86400e3);
    expect(new Date(cert.validFrom).getTime()).toBeLessThan(Date.now());
  });

  it('honours fractional validity and never outlives the CA', () => {
    const shortCa = createCertificateAuthority({ commonName: 'short', validDays: 1 });
    const hour = shortCa.issue({ commonName: 'h', validDays: 1 / 24 });
    const hourEnd = Date.parse(new X509Certificate(hour.certPem).validTo);
    expect(hourEnd).toBeGreaterThan(Date.now() + 50 * 60e3);
    expect(hourEnd).toBeLessThan(Date.now() + 70 * 60e3);
    const capped = shortCa.issue({ commonName: 'c', validDays: 365 });
    expect(Date.parse(new X509Certificate(capped.certPem).validTo)).toBeLessThanOrEqual(Date.parse(shortCa.certificate.validTo));
  });

  it('gives every certificate a distinct serial', () => {
    const a = new X509Certificate(ca.issue({ commonName: 'a' }).certPem);
    const b = new X509Certificate(ca.issue({ commonName: 'b' }).certPem);
    expect(a.serialNumber).not.toBe(b.serialNumber);
  });

  it('rejects bad requests with a typed error', () => {
    expect(reasonOf(() => ca.issue({ commonName: 'x', isCA: true } as never))).toBe('InvalidRequest');
    expect(reasonOf(() => ca.issue({ commonName: '' }))).toBe('InvalidRequest');
    expect(reasonOf(() => ca.issue({ commonName: 'x', validDays: 0 }))).toBe('InvalidRequest');
    expect(reasonOf(() => ca.issue({ commonName: 'x', hosts: ['not a host'] }))).toBe('InvalidRequest');
    expect(reasonOf(() => createCertificateAuthority({ commonName: 'x', validDays: Number.NaN }))).toBe('InvalidRequest');
  });

  it('makes a service-account key pair whose halves match', () => {
    const pair = createSigningKeyPair();
    const signature = createSign('sha256').update('token').sign(pair.privateKeyPem);
    expect(createVerify('sha256').update('token').verify(createPublicKey(pair.publicKeyPem), signature)).toBe(true);
    expect(pair.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(pair.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  });
});

describe('loading a CA', () => {
  const original = createCertificateAuthority({ commonName: 'stored-ca', organizations: ['kubeloop'] });

  it('issues certificates that chain to the stored CA, with its subject and key identifier', () => {
    const loaded = loadCertificateAuthority({ certPem: original.certPem, keyPem: original.keyPem });
    const leaf = new X509Certificate(loaded.issue({ commonName: 'renewed', usage: 'server', hosts: ['127.0.0.1'] }).certPem);
    expect(leaf.checkIssued(original.certificate)).toBe(true);
    expect(leaf.verify(original.certificate.publicKey)).toBe(true);
    expect(leaf.issuer.split('\n').sort()).toEqual(['CN=stored-ca', 'O=kubeloop']);
  });

  it('serves TLS that a client trusting only the stored CA accepts', async () => {
    const loaded = loadCertificateAuthority(original);
    const serving = loaded.issue({ commonName: 'server', usage: 'server', hosts: ['127.0.0.1'] });
    const server = createServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const authorized = await new Promise<boolean>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, ca: original.certPem }, () => {
          resolve(socket.authorized);
          socket.end();
        });
        socket.on('error', reject);
      });
      expect(authorized).toBe(true);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('refuses what it cannot use', () => {
    const other = createCertificateAuthority({ commonName: 'other' });
    const leaf = original.issue({ commonName: 'leaf' });
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(reasonOf(() => loadCertificateAuthority({ certPem: 'garbage', keyPem: original.keyPem }))).toBe('InvalidCertificate');
    expect(reasonOf(() => loadCertificateAuthority({ certPem: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----', keyPem: original.keyPem }))).toBe('InvalidCertificate');
    expect(reasonOf(() => loadCertificateAuthority({ certPem: leaf.certPem, keyPem: leaf.keyPem }))).toBe('InvalidCertificate');
    expect(reasonOf(() => loadCertificateAuthority({ certPem: original.certPem, keyPem: other.keyPem }))).toBe('InvalidKey');
    expect(reasonOf(() => loadCertificateAuthority({ certPem: original.certPem, keyPem: 'not a key' }))).toBe('InvalidKey');
    expect(reasonOf(() => loadCertificateAuthority({ certPem: original.certPem, keyPem: rsa }))).toBe('UnsupportedKey');
  });
});

describe('parseCertificates', () => {
  it('reads every certificate of a bundle in order', () => {
    const a = createCertificateAuthority({ commonName: 'a' });
    const b = createCertificateAuthority({ commonName: 'b' });
    expect(parseCertificates(a.certPem + b.certPem).map((c) => c.subject)).toEqual(['CN=a', 'CN=b']);
    expect(parseCertificates('no pem here')).toEqual([]);
  });
});
