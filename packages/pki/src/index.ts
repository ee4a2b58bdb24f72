/**
 * `@kubeloop/pki` makes the certificates kubeloop needs: a local control
 * plane's CAs, serving and client certificates (`@kubeloop/envtest`) and
 * webhook serving certificates (`@kubeloop/webhook`). ECDSA P-256 keys come
 * from node:crypto; X.509 v3 certificates are written by a small built-in DER
 * writer, because the JavaScript certificate libraries either load a global
 * `reflect-metadata` polyfill or are unmaintained. It has no dependencies and
 * imports no Kubernetes code.
 *
 * @example
 * ```ts
 * import { createCertificateAuthority, parseCertificates } from '@kubeloop/pki';
 *
 * const ca = createCertificateAuthority({ commonName: 'webhook-ca', validDays: 3650 });
 * const serving = ca.issue({ commonName: 'webhook', usage: 'server', hosts: ['127.0.0.1', 'webhook.system.svc'] });
 * const [cert] = parseCertificates(serving.certPem);
 * cert!.checkIssued(ca.certificate); // true
 * ```
 *
 * @packageDocumentation
 */
export { createCertificateAuthority, createSigningKeyPair, loadCertificateAuthority, parseCertificates, parsePrivateKey } from './certificates.js';
export type { CertificateAuthority, CertificateAuthorityOptions, CertificateRequest, KeyPairPem } from './certificates.js';
export { PkiError, isPkiError } from './errors.js';
export type { PkiErrorReason } from './errors.js';
