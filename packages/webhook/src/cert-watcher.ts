/**
 * Provided certificates: a certificate and key file (a mounted Secret,
 * cert-manager's output) watched and reloaded without a restart, as
 * controller-runtime's certwatcher does. File-system events (on the files'
 * directories, so the atomic `..data` symlink swap of a Secret volume is
 * seen) trigger a reload, and a poll catches what events miss. A pair read
 * half-written (the new certificate with the old key) is not used: the
 * current one stays until both files agree.
 */
import type { FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import { checkServingCertificate } from './certificates.js';
import type { CertificateSource, ServingCertificate } from './certificates.js';
import { describeError, WebhookError } from './errors.js';
import { silentLogger } from './logger.js';
import type { WebhookLogger } from './logger.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { readFile, watch } = process.getBuiltinModule('node:fs');
const readText = (file: string): Promise<string> => new Promise((resolve, reject) => readFile(file, 'utf8', (err, text) => (err ? reject(err) : resolve(text))));

/** Options for {@link watchCertificateFiles}. */
export interface CertificateFilesOptions {
  /** The certificate file (PEM; intermediates may follow the leaf), e.g. `/tmp/k8s-webhook-server/serving-certs/tls.crt`. */
  readonly certFile: string;
  /** The private key file (PEM). */
  readonly keyFile: string;
  /** How often the files are read even without a file-system event, in ms. Default: 10 000 (certwatcher's). */
  readonly pollIntervalMs?: number;
  /** Wait after a file-system event before reading, so a writer can finish both files, in ms. Default: 100. */
  readonly debounceMs?: number;
  /** Where reloads and failures are logged. Default: silent. */
  readonly log?: WebhookLogger;
}

/** A watched certificate pair: a certificate source with an explicit reload. */
export interface CertificateFiles extends CertificateSource {
  /**
   * Read both files now; when they form a new usable pair, hand it to the
   * server. Resolves true when the certificate changed. Never rejects: a
   * failed read keeps the current certificate and is logged.
   */
  reload(): Promise<boolean>;
}

/**
 * Watch a certificate and key file and reload them on change.
 *
 * @example
 * ```ts
 * const certificates = watchCertificateFiles({ certFile: '/certs/tls.crt', keyFile: '/certs/tls.key' });
 * const server = createWebhookServer({ certificates });
 * ```
 */
export function watchCertificateFiles(options: CertificateFilesOptions): CertificateFiles {
  if (typeof options?.certFile !== 'string' || typeof options.keyFile !== 'string' || !options.certFile || !options.keyFile) {
    throw new WebhookError('InvalidOptions', 'watchCertificateFiles needs certFile and keyFile paths');
  }
  const pollIntervalMs = options.pollIntervalMs ?? 10_000;
  const debounceMs = options.debounceMs ?? 100;
  if (!(pollIntervalMs > 0) || !(debounceMs >= 0)) throw new WebhookError('InvalidOptions', 'pollIntervalMs must be > 0 and debounceMs >= 0');
  const log = options.log ?? silentLogger;
  const where = `${options.certFile} + ${options.keyFile}`;

  let current: ServingCertificate | undefined;
  let publish: ((certificate: ServingCertificate) => void) | undefined;
  let reading: Promise<boolean> | undefined;
  let again = false;

  async function read(): Promise<ServingCertificate> {
    let certPem: string;
    let keyPem: string;
    try {
      [certPem, keyPem] = await Promise.all([readText(options.certFile), readText(options.keyFile)]);
    } catch (cause) {
      throw new WebhookError('CertificateUnavailable', `cannot read ${where}: ${describeError(cause)}`, { cause });
    }
    const pair = { certPem, keyPem };
    checkServingCertificate(pair, where);
    return pair;
  }

  async function readOnce(): Promise<boolean> {
    try {
      const next = await read();
      if (current && next.certPem === current.certPem && next.keyPem === current.keyPem) return false;
      current = next;
      publish?.(next);
      log.info({ certFile: options.certFile }, 'certificate files reloaded');
      return true;
    } catch (err) {
      log.warn({ err: describeError(err) }, 'certificate files not reloaded; keeping the current certificate');
      return false;
    }
  }

  /** Single-flight: a reload asked for while one runs runs once more after it. */
  function reload(): Promise<boolean> {
    if (reading) {
      again = true;
      return reading;
    }
    reading = (async () => {
      let changed = false;
      do {
        again = false;
        changed = (await readOnce()) || changed;
      } while (again);
      return changed;
    })().finally(() => {
      reading = undefined;
    });
    return reading;
  }

  return {
    reload,
    async start(signal: AbortSignal, update: (certificate: ServingCertificate) => void): Promise<ServingCertificate> {
      signal.throwIfAborted();
      const first = await read();
      current = first;
      publish = (c) => {
        if (!signal.aborted) update(c);
      };

      const watchers = new Map<string, FSWatcher>();
      let debounce: NodeJS.Timeout | undefined;
      const onEvent = (): void => {
        clearTimeout(debounce);
        debounce = setTimeout(() => void reload(), debounceMs);
      };
      const watchDirectories = (): void => {
        for (const dir of new Set([dirname(options.certFile), dirname(options.keyFile)])) {
          if (watchers.has(dir)) continue;
          try {
            const watcher = watch(dir, { persistent: false }, onEvent);
            watcher.on('error', () => {
              // The directory went away (or the platform cannot watch it): the poll carries on and re-watches.
              watcher.close();
              watchers.delete(dir);
            });
            watchers.set(dir, watcher);
          } catch (err) {
            log.debug({ dir, err: describeError(err) }, 'cannot watch the certificate directory; relying on the poll');
          }
        }
      };
      watchDirectories();
      const poll = setInterval(() => {
        watchDirectories();
        void reload();
      }, pollIntervalMs);
      poll.unref();
      signal.addEventListener(
        'abort',
        () => {
          clearInterval(poll);
          clearTimeout(debounce);
          for (const w of watchers.values()) w.close();
          watchers.clear();
          publish = undefined;
        },
        { once: true },
      );
      return first;
    },
  };
}
