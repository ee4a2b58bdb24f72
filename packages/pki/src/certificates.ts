/**
 * Certificate authorities and the certificates they issue: ECDSA P-256 keys
 * from node:crypto, X.509 v3 certificates written by our own DER writer
 * (`internal/der.ts`) and signed with node:crypto. Enough for a local control
 * plane (serving and client certificates) and for webhook serving
 * certificates; not a general-purpose PKI.
 */
import type { KeyObject } from 'node:crypto';
import { PkiError } from './errors.js';
import * as der from './internal/der.js';
import { children, content, encoding, readElement } from './internal/der-reader.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate } = process.getBuiltinModule('node:crypto');
const { isIP } = process.getBuiltinModule('node:net');
type X509Certificate = InstanceType<typeof X509Certificate>;

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

const DAY_MS = 24 * 60 * 60 * 1000;
/** Certificates start an hour in the past, so a peer whose clock is a little behind accepts them. */
const BACKDATE_MS = 60 * 60 * 1000;

/** A certificate and its private key, both PEM (the key as PKCS#8). */
export interface KeyPairPem {
  readonly certPem: string;
  readonly keyPem: string;
}

/** What an issued (leaf) certificate is for. */
export interface CertificateRequest {
  /** The subject's common name. Required, non-empty. */
  readonly commonName: string;
  /** Organizations in the subject (Kubernetes reads them as groups of a client certificate). Default: none. */
  readonly organizations?: readonly string[];
  /** Extended key usage: TLS server, TLS client, or both. Default: `'both'`. */
  readonly usage?: 'server' | 'client' | 'both';
  /** DNS names (wildcards allowed) and IP addresses for the subjectAltName extension. Default: none. */
  readonly hosts?: readonly string[];
  /** Validity in days from now (fractions allowed); the certificate also starts an hour in the past. Default: 365. */
  readonly validDays?: number;
}

/** Options for {@link createCertificateAuthority}. */
export interface CertificateAuthorityOptions {
  /** The CA's common name. Required, non-empty. */
  readonly commonName: string;
  /** Organizations in the CA's subject. Default: none. */
  readonly organizations?: readonly string[];
  /** Validity in days from now (fractions allowed). Default: 365. */
  readonly validDays?: number;
}

/** A certificate authority that can issue leaf certificates. */
export interface CertificateAuthority extends KeyPairPem {
  /** The CA certificate, parsed (validity, serial, fingerprint). */
  readonly certificate: X509Certificate;
  /**
   * Issue a leaf certificate signed by this CA, with a fresh key pair.
   * Its validity never ends after the CA's own.
   */
  issue(request: CertificateRequest): KeyPairPem;
}

interface Issuer {
  readonly name: Buffer;
  readonly key: KeyObject;
  readonly keyId: Buffer;
  readonly notAfter: number;
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

const DNS_NAME = /^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

function checkRequest(what: string, commonName: unknown, validDays: unknown, hosts: readonly unknown[] = []): void {
  if (typeof commonName !== 'string' || commonName === '') throw new PkiError('InvalidRequest', `${what}: commonName must be a non-empty string`);
  if (validDays !== undefined && (typeof validDays !== 'number' || !Number.isFinite(validDays) || validDays <= 0)) {
    throw new PkiError('InvalidRequest', `${what}: validDays must be a positive number of days, got ${JSON.stringify(validDays) ?? typeof validDays}`);
  }
  for (const host of hosts) {
    if (typeof host !== 'string' || (isIP(host) === 0 && !DNS_NAME.test(host))) {
      throw new PkiError('InvalidRequest', `${what}: host ${JSON.stringify(host)} is neither an IP address nor a DNS name`);
    }
  }
}

function publicKeyId(spki: Buffer): Buffer {
  return createHash('sha1').update(spki).digest();
}

function buildCertificate(
  subject: { commonName: string; organizations?: readonly string[] | undefined; hosts?: readonly string[] | undefined; usage?: CertificateRequest['usage'] },
  isCA: boolean,
  notAfter: number,
  subjectKey: KeyObject,
  issuer: Issuer | undefined,
  signingKey: KeyObject,
): { der: Buffer; keyId: Buffer; name: Buffer } {
  const spki = subjectKey.export({ type: 'spki', format: 'der' });
  const keyId = publicKeyId(spki);
  const name = encodeName(subject.commonName, subject.organizations);
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f; // positive

  const extensions: Buffer[] = [];
  if (isCA) {
    extensions.push(extension(OID.basicConstraints, true, der.sequence(der.boolean(true))));
    // digitalSignature(0), keyCertSign(5), cRLSign(6)
    extensions.push(extension(OID.keyUsage, true, der.namedBits([0, 5, 6])));
  } else {
    extensions.push(extension(OID.basicConstraints, true, der.sequence()));
    // digitalSignature(0), keyEncipherment(2)
    extensions.push(extension(OID.keyUsage, true, der.namedBits([0, 2])));
    const usage = subject.usage ?? 'both';
    const ekus: string[] = [];
    if (usage === 'server' || usage === 'both') ekus.push(OID.serverAuth);
    if (usage === 'client' || usage === 'both') ekus.push(OID.clientAuth);
    extensions.push(extension(OID.extKeyUsage, false, der.sequence(...ekus.map((o) => der.objectIdentifier(o)))));
  }
  const hosts = subject.hosts ?? [];
  if (hosts.length > 0) {
    const names = hosts.map((h) => (isIP(h) ? der.implicitPrimitive(7, ipBytes(h)) : der.implicitPrimitive(2, Buffer.from(h, 'ascii'))));
    extensions.push(extension(OID.subjectAltName, false, der.sequence(...names)));
  }
  extensions.push(extension(OID.subjectKeyIdentifier, false, der.octetString(keyId)));
  if (issuer) extensions.push(extension(OID.authorityKeyIdentifier, false, der.sequence(der.implicitPrimitive(0, issuer.keyId))));

  const algorithm = der.sequence(der.objectIdentifier(OID.ecdsaWithSHA256));
  const tbs = der.sequence(
    der.explicit(0, der.smallInteger(2)),
    der.unsignedInteger(serial),
    algorithm,
    issuer ? issuer.name : name,
    der.sequence(der.time(new Date(Date.now() - BACKDATE_MS)), der.time(new Date(notAfter))),
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

function authority(certPem: string, keyPem: string, certificate: X509Certificate, issuer: Issuer): CertificateAuthority {
  return Object.freeze({
    certPem,
    keyPem,
    certificate,
    issue(request: CertificateRequest): KeyPairPem {
      checkRequest('issue', request?.commonName, request?.validDays, request?.hosts);
      if ((request as { isCA?: unknown }).isCA) throw new PkiError('InvalidRequest', 'issue: intermediate CAs are not supported');
      const leafKeys = newKeyPair();
      const notAfter = Math.min(Date.now() + (request.validDays ?? 365) * DAY_MS, issuer.notAfter);
      const leaf = buildCertificate(request, false, notAfter, leafKeys.publicKey, issuer, issuer.key);
      return { certPem: toPem('CERTIFICATE', leaf.der), keyPem: keyToPem(leafKeys.privateKey) };
    },
  });
}

/**
 * Create a self-signed certificate authority with a fresh ECDSA P-256 key.
 *
 * @throws {@link PkiError} `InvalidRequest` for an empty common name or a non-positive validity.
 *
 * @example
 * ```ts
 * import { createCertificateAuthority } from '@kubeloop/pki';
 *
 * const ca = createCertificateAuthority({ commonName: 'my-webhook-ca', validDays: 3650 });
 * const serving = ca.issue({ commonName: 'my-webhook', usage: 'server', hosts: ['my-webhook.system.svc', '127.0.0.1'] });
 * // ca.certPem is the caBundle; serving.certPem / serving.keyPem go to the TLS server
 * ```
 */
export function createCertificateAuthority(options: CertificateAuthorityOptions): CertificateAuthority {
  checkRequest('createCertificateAuthority', options?.commonName, options?.validDays);
  const keys = newKeyPair();
  const notAfter = Date.now() + (options.validDays ?? 365) * DAY_MS;
  const built = buildCertificate(options, true, notAfter, keys.publicKey, undefined, keys.privateKey);
  const certPem = toPem('CERTIFICATE', built.der);
  const certificate = new X509Certificate(certPem);
  return authority(certPem, keyToPem(keys.privateKey), certificate, {
    name: built.name,
    key: keys.privateKey,
    keyId: built.keyId,
    notAfter: Date.parse(certificate.validTo),
  });
}

/** The subject name (DER) and subject key identifier of a certificate, read from its encoding. */
function subjectOf(certificate: X509Certificate): { name: Buffer; keyId: Buffer | undefined } {
  const raw = certificate.raw;
  const tbs = children(raw, readElement(raw, 0))[0];
  if (!tbs) throw new RangeError('no tbsCertificate');
  const fields = children(raw, tbs);
  // [0] version is optional; then serial, signature, issuer, validity, subject, spki, ...
  const base = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subject = fields[base + 4];
  if (!subject) throw new RangeError('no subject');
  const ski = der.objectIdentifier(OID.subjectKeyIdentifier);
  let keyId: Buffer | undefined;
  const extensions = fields.find((f) => f.tag === 0xa3);
  if (extensions) {
    const list = children(raw, extensions)[0];
    for (const ext of list ? children(raw, list) : []) {
      const parts = children(raw, ext);
      if (parts[0] && encoding(raw, parts[0]).equals(ski)) {
        const value = parts[parts.length - 1]!;
        const inner = content(raw, value);
        keyId = content(inner, readElement(inner, 0));
      }
    }
  }
  return { name: encoding(raw, subject), keyId };
}

/**
 * Load an existing certificate authority (for example one kept in a Secret)
 * so it can issue more certificates. The key must be ECDSA P-256 and match
 * the certificate, and the certificate must be a CA.
 *
 * @throws {@link PkiError} `InvalidCertificate`, `InvalidKey` or `UnsupportedKey`.
 *
 * @example
 * ```ts
 * import { loadCertificateAuthority } from '@kubeloop/pki';
 *
 * const ca = loadCertificateAuthority({ certPem: secret.data['ca.crt']!, keyPem: secret.data['ca.key']! });
 * const renewed = ca.issue({ commonName: 'my-webhook', usage: 'server', hosts: ['my-webhook.system.svc'] });
 * ```
 */
export function loadCertificateAuthority(pair: KeyPairPem): CertificateAuthority {
  const [certificate] = parseCertificates(pair?.certPem);
  if (!certificate) throw new PkiError('InvalidCertificate', 'loadCertificateAuthority: no certificate in certPem');
  if (!certificate.ca) throw new PkiError('InvalidCertificate', `loadCertificateAuthority: ${certificate.subject} is not a CA certificate`);
  const key = parsePrivateKey(pair.keyPem);
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType !== 'ec' || details?.namedCurve !== 'prime256v1') {
    throw new PkiError('UnsupportedKey', `loadCertificateAuthority: only ECDSA P-256 CA keys are supported, got ${key.asymmetricKeyType ?? 'unknown'}${details?.namedCurve ? ` (${details.namedCurve})` : ''}`);
  }
  if (!certificate.checkPrivateKey(key)) throw new PkiError('InvalidKey', 'loadCertificateAuthority: the key does not match the certificate');
  let subject;
  try {
    subject = subjectOf(certificate);
  } catch (cause) {
    throw new PkiError('InvalidCertificate', `loadCertificateAuthority: cannot read the certificate's subject: ${String(cause)}`, { cause });
  }
  const certPem = certificate.toString();
  const keyId = subject.keyId ?? publicKeyId(certificate.publicKey.export({ type: 'spki', format: 'der' }));
  return authority(certPem, keyToPem(key), certificate, { name: subject.name, key, keyId, notAfter: Date.parse(certificate.validTo) });
}

/**
 * An ECDSA P-256 key pair for signing tokens (a service-account issuer):
 * PKCS#8 private key, SPKI public key, both PEM.
 *
 * @example
 * ```ts
 * const { privateKeyPem, publicKeyPem } = createSigningKeyPair();
 * // kube-apiserver --service-account-signing-key-file=<private> --service-account-key-file=<public>
 * ```
 */
export function createSigningKeyPair(): { privateKeyPem: string; publicKeyPem: string } {
  const keys = newKeyPair();
  return {
    privateKeyPem: keyToPem(keys.privateKey),
    publicKeyPem: keys.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * Every certificate in a PEM text (a bundle holds several), in order.
 *
 * @throws {@link PkiError} `InvalidCertificate` when a CERTIFICATE block cannot be parsed.
 *
 * @example
 * ```ts
 * const [leaf] = parseCertificates(certPem);
 * const expiresAt = Date.parse(leaf!.validTo);
 * ```
 */
export function parseCertificates(pem: string): X509Certificate[] {
  if (typeof pem !== 'string') throw new PkiError('InvalidCertificate', 'expected PEM text');
  return [...pem.matchAll(PEM_CERTIFICATE)].map((m, i) => {
    try {
      return new X509Certificate(m[0]);
    } catch (cause) {
      throw new PkiError('InvalidCertificate', `certificate ${i + 1} of the PEM text cannot be parsed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
  });
}

/**
 * Parse a PEM private key.
 *
 * @throws {@link PkiError} `InvalidKey` when the text is not a private key.
 *
 * @example
 * ```ts
 * const key = parsePrivateKey(serving.keyPem);
 * new X509Certificate(serving.certPem).checkPrivateKey(key); // true
 * ```
 */
export function parsePrivateKey(pem: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (cause) {
    throw new PkiError('InvalidKey', `not a PEM private key: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
