/**
 * Where the server's TLS certificate comes from. A source yields a first
 * certificate and then every replacement; the server swaps its secure
 * context for new connections while connections already open (and
 * handshakes already under way) keep the context they started with.
 */
import { createSecureContext } from 'node:tls';
import { parseCertificates } from '@kubeloop/pki';
import { describeError, WebhookError } from './errors.js';

/** A serving certificate (with any intermediates after it) and its private key, PEM. */
export interface ServingCertificate {
  readonly certPem: string;
  readonly keyPem: string;
}

/**
 * A source of serving certificates.
 *
 * @example
 * ```ts
 * const fixed: CertificateSource = {
 *   start: async () => ({ certPem, keyPem }), // never changes
 * };
 * ```
 */
export interface CertificateSource {
  /**
   * Resolve with the first certificate, then call `update` with each
   * replacement until `signal` aborts. Rejects when no first certificate can
   * be had (or `signal` aborts first).
   */
  start(signal: AbortSignal, update: (certificate: ServingCertificate) => void): Promise<ServingCertificate>;
}

/**
 * A certificate that never changes.
 *
 * @example
 * ```ts
 * const server = createWebhookServer({ certificates: staticCertificate({ certPem, keyPem }) });
 * ```
 */
export function staticCertificate(certificate: ServingCertificate): CertificateSource {
  checkServingCertificate(certificate);
  return { start: () => Promise.resolve(certificate) };
}

/**
 * Throws {@link WebhookError} `CertificateUnavailable` unless the pair can
 * serve TLS: a parseable certificate, a parseable key, and the two match.
 *
 * @example
 * ```ts
 * checkServingCertificate({ certPem, keyPem }); // throws "...: the key cannot serve the certificate (...)" for a mismatched pair
 * ```
 */
export function checkServingCertificate(certificate: ServingCertificate, where = 'the serving certificate'): void {
  if (typeof certificate?.certPem !== 'string' || typeof certificate.keyPem !== 'string') {
    throw new WebhookError('CertificateUnavailable', `${where}: certPem and keyPem must be PEM strings`);
  }
  let count: number;
  try {
    count = parseCertificates(certificate.certPem).length;
  } catch (cause) {
    throw new WebhookError('CertificateUnavailable', `${where}: ${describeError(cause)}`, { cause });
  }
  if (count === 0) throw new WebhookError('CertificateUnavailable', `${where}: no CERTIFICATE block in the certificate PEM`);
  try {
    createSecureContext({ cert: certificate.certPem, key: certificate.keyPem });
  } catch (cause) {
    throw new WebhookError('CertificateUnavailable', `${where}: the key cannot serve the certificate (${describeError(cause)})`, { cause });
  }
}
