/**
 * Where the server's TLS certificate comes from. A source yields a first
 * certificate and then every replacement; the server swaps its secure
 * context for new connections while connections already open (and
 * handshakes already under way) keep the context they started with.
 */
import { createSecureContext } from 'node:tls';
import { hostname } from 'node:os';
import { createCertificateAuthority, parseCertificates } from '@kubeloop/pki';
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

/** Options for {@link selfSignedCertificate}. */
export interface SelfSignedCertificateOptions {
  /** DNS names and IP addresses the certificate is for. Default: `localhost`, `127.0.0.1`, `::1` and the host name. */
  readonly hosts?: readonly string[];
  /** Validity in days. Default: 365. */
  readonly validDays?: number;
}

/**
 * A certificate made at start, signed by a throwaway CA of its own, as
 * controller-runtime's secure metrics server makes one when it is given no
 * certificate directory: the traffic is encrypted, but a client can only
 * check it by skipping verification (Prometheus's `insecure_skip_verify`),
 * so prefer a real certificate (`watchCertificateFiles` with cert-manager's
 * Secret) in production.
 *
 * @example
 * ```ts
 * createManager({ metricsBindAddress: ':8443', secureMetrics: { certificates: selfSignedCertificate() } });
 * ```
 */
export function selfSignedCertificate(options: SelfSignedCertificateOptions = {}): CertificateSource {
  const hosts = options.hosts ?? ['localhost', '127.0.0.1', '::1', hostname()];
  if (hosts.length === 0) throw new WebhookError('InvalidOptions', 'selfSignedCertificate: hosts must name at least one DNS name or IP address');
  return {
    start: () => {
      try {
        const ca = createCertificateAuthority({ commonName: 'kubeloop-self-signed-ca', ...(options.validDays ? { validDays: options.validDays } : {}) });
        const serving = ca.issue({ commonName: hosts[0]!, usage: 'server', hosts, ...(options.validDays ? { validDays: options.validDays } : {}) });
        return Promise.resolve({ certPem: serving.certPem, keyPem: serving.keyPem });
      } catch (cause) {
        return Promise.reject(new WebhookError('CertificateUnavailable', `cannot make a self-signed certificate: ${describeError(cause)}`, { cause }));
      }
    },
  };
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
