import { X509Certificate, createPublicKey, createSign, createVerify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCertificateAuthority, createSigningKeyPair, parsePrivateKey } from '../src/internal/certs.js';

describe('certificate generation', () => {
  const ca = createCertificateAuthority('test-ca');

  it('makes a self-signed CA that verifies itself', () => {
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe('CN=test-ca');
    expect(cert.issuer).toBe('CN=test-ca');
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.checkPrivateKey(parsePrivateKey(ca.keyPem))).toBe(true);
  });

  it('issues a serving certificate with IP and DNS names, signed by the CA', () => {
    const leaf = ca.issue({ commonName: 'kube-apiserver', usage: 'server', hosts: ['127.0.0.1', 'localhost', '::1'] });
    const cert = new X509Certificate(leaf.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBe('::1');
    expect(cert.checkHost('localhost')).toBe('localhost');
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

  it('gives every certificate a distinct serial', () => {
    const a = new X509Certificate(ca.issue({ commonName: 'a' }).certPem);
    const b = new X509Certificate(ca.issue({ commonName: 'b' }).certPem);
    expect(a.serialNumber).not.toBe(b.serialNumber);
  });

  it('refuses to issue an intermediate CA', () => {
    expect(() => ca.issue({ commonName: 'x', isCA: true })).toThrow(/intermediate/);
  });

  it('makes a service-account key pair whose halves match', () => {
    const pair = createSigningKeyPair();
    const signature = createSign('sha256').update('token').sign(pair.privateKeyPem);
    expect(createVerify('sha256').update('token').verify(createPublicKey(pair.publicKeyPem), signature)).toBe(true);
    expect(pair.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(pair.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  });
});
