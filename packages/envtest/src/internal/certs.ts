/**
 * Certificates for a local control plane: a serving CA and the API server's
 * serving certificate, a client CA and the admin client certificate
 * (`system:masters`), and the service-account signing key pair. ECDSA P-256,
 * written as X.509 v3 by our own DER writer, signed with node:crypto.
 */
import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';
import type { KeyObject } from 'node:crypto';
import * as der from './der.js';

const OID = {
  ecdsaWithSHA256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** A certificate and its private key, both PEM. */
export interface KeyPairPem {
  readonly certPem: string;
  readonly keyPem: string;
}

interface Issuer {
  readonly name: Buffer;
  readonly key: KeyObject;
  readonly keyId: Buffer;
}

/** What a generated certificate is for. */
export interface CertificateRequest {
  readonly commonName: string;
  readonly organizations?: readonly string[];
  readonly isCA?: boolean;
  readonly usage?: 'server' | 'client' | 'both';
  /** DNS names and IP addresses for the subjectAltName extension. */
  readonly hosts?: readonly string[];
  /** Validity in days, from an hour ago (clock skew). Default 365. */
  readonly validDays?: number;
}

export interface CertificateAuthority extends KeyPairPem {
  /** Issue a certificate signed by this CA. */
  issue(request: CertificateRequest): KeyPairPem;
}

function encodeName(commonName: string, organizations: readonly string[] = []): Buffer {
  const rdns = organizations.map((o) => der.set(der.sequence(der.objectIdentifier(OID.organization), der.utf8String(o))));
  rdns.push(der.set(der.sequence(der.objectIdentifier(OID.commonName), der.utf8String(commonName))));
  return der.sequence(...rdns);
}

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? der.sequence(der.objectIdentifier(oid), der.boolean(true), der.octetString(value))
    : der.sequence(der.objectIdentifier(oid), der.octetString(value));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map((p) => Number.parseInt(p, 10)));
  // IPv6: expand "::" then write 8 groups of 16 bits.
  const [head = '', tail = ''] = ip.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = ip.includes('::') && tail ? tail.split(':') : [];
  const zeros = ip.includes('::') ? 8 - headGroups.length - tailGroups.length : 0;
  const groups = [...headGroups, ...Array<string>(zeros).fill('0'), ...tailGroups];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(Number.parseInt(g, 16), i * 2));
  return out;
}

function publicKeyId(spki: Buffer): Buffer {
  return createHash('sha1').update(spki).digest();
}

function buildCertificate(
  request: CertificateRequest,
  subjectKey: { publicKey: KeyObject },
  issuer: Issuer | undefined,
  signingKey: KeyObject,
): { der: Buffer; keyId: Buffer; name: Buffer } {
  const spki = subjectKey.publicKey.export({ type: 'spki', format: 'der' });
  const keyId = publicKeyId(spki);
  const name = encodeName(request.commonName, request.organizations);
  const notBefore = new Date(Date.now() - 60 * 60 * 1000);
  const notAfter = new Date(Date.now() + (request.validDays ?? 365) * 24 * 60 * 60 * 1000);
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f; // positive

  const extensions: Buffer[] = [];
  if (request.isCA) {
    extensions.push(extension(OID.basicConstraints, true, der.sequence(der.boolean(true))));
    // digitalSignature(0), keyCertSign(5), cRLSign(6)
    extensions.push(extension(OID.keyUsage, true, der.namedBits([0, 5, 6])));
  } else {
    extensions.push(extension(OID.basicConstraints, true, der.sequence()));
    // digitalSignature(0), keyEncipherment(2)
    extensions.push(extension(OID.keyUsage, true, der.namedBits([0, 2])));
    const usage = request.usage ?? 'both';
    const ekus: string[] = [];
    if (usage === 'server' || usage === 'both') ekus.push(OID.serverAuth);
    if (usage === 'client' || usage === 'both') ekus.push(OID.clientAuth);
    extensions.push(extension(OID.extKeyUsage, false, der.sequence(...ekus.map((o) => der.objectIdentifier(o)))));
  }
  const hosts = request.hosts ?? [];
  if (hosts.length > 0) {
    const names = hosts.map((h) =>
      isIP(h) ? der.implicitPrimitive(7, ipBytes(h)) : der.implicitPrimitive(2, Buffer.from(h, 'ascii')),
    );
    extensions.push(extension(OID.subjectAltName, false, der.sequence(...names)));
  }
  extensions.push(extension(OID.subjectKeyIdentifier, false, der.octetString(keyId)));
  if (issuer) {
    extensions.push(
      extension(OID.authorityKeyIdentifier, false, der.sequence(der.implicitPrimitive(0, issuer.keyId))),
    );
  }

  const algorithm = der.sequence(der.objectIdentifier(OID.ecdsaWithSHA256));
  const tbs = der.sequence(
    der.explicit(0, der.smallInteger(2)),
    der.unsignedInteger(serial),
    algorithm,
    issuer ? issuer.name : name,
    der.sequence(der.time(notBefore), der.time(notAfter)),
    name,
    spki,
    der.explicit(3, der.sequence(...extensions)),
  );
  const signature = sign('sha256', tbs, signingKey);
  return { der: der.sequence(tbs, algorithm, der.bitString(signature)), keyId, name };
}

function toPem(label: string, body: Buffer): string {
  const b64 = body.toString('base64').replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`;
}

function newKeyPair(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

function keyToPem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** Create a self-signed certificate authority. */
export function createCertificateAuthority(commonName: string, validDays = 365): CertificateAuthority {
  const keys = newKeyPair();
  const built = buildCertificate({ commonName, isCA: true, validDays }, keys, undefined, keys.privateKey);
  const issuer: Issuer = { name: built.name, key: keys.privateKey, keyId: built.keyId };
  return {
    certPem: toPem('CERTIFICATE', built.der),
    keyPem: keyToPem(keys.privateKey),
    issue(request: CertificateRequest): KeyPairPem {
      if (request.isCA) throw new Error('issue: intermediate CAs are not supported');
      const leafKeys = newKeyPair();
      const leaf = buildCertificate(request, leafKeys, issuer, issuer.key);
      return { certPem: toPem('CERTIFICATE', leaf.der), keyPem: keyToPem(leafKeys.privateKey) };
    },
  };
}

/** An ECDSA key pair for signing service-account tokens: PKCS#8 private, SPKI public. */
export function createSigningKeyPair(): { privateKeyPem: string; publicKeyPem: string } {
  const keys = newKeyPair();
  return {
    privateKeyPem: keyToPem(keys.privateKey),
    publicKeyPem: keys.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** Parse a PEM private key; throws if it is not one. Used by tests and sanity checks. */
export function parsePrivateKey(pem: string): KeyObject {
  return createPrivateKey(pem);
}
