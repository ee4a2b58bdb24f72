/**
 * Prebuilt control-plane binaries, as controller-runtime's setup-envtest
 * gets them: an index (YAML) lists, per Kubernetes release, archives named
 * `envtest-<version>-<os>-<arch>.tar.gz` with their SHA-512 (hex) and where
 * to download them; an archive holds `controller-tools/envtest/` with
 * `kube-apiserver`, `etcd` and `kubectl`. The archive is hashed as it
 * streams to disk, refused on a mismatch, checked to hold nothing but
 * regular files under that folder, and only then unpacked into the cache.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { pipeline } from 'node:stream/promises';
import { parse } from 'yaml';
import { EnvtestError } from './errors.js';
import { run, tail } from './internal/exec.js';

/** Where controller-runtime's setup-envtest reads its index (controller-tools' releases). */
export const DEFAULT_ENVTEST_INDEX_URL = 'https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml';

/** One archive of the index. */
export interface EnvtestArchive {
  /** `envtest-v1.37.2-linux-amd64.tar.gz`. */
  readonly name: string;
  /** Hex digest: SHA-512 (128 hex digits, as the index has them) or SHA-256 (64). */
  readonly hash: string;
  /** Where to download it. */
  readonly url: string;
}

/** Options for {@link downloadEnvtest}. */
export interface DownloadOptions {
  /** The Kubernetes release, `v1.37.2`. */
  readonly kubernetesVersion: string;
  /** The index URL. Default: `KUBELOOP_ENVTEST_INDEX_URL`, else {@link DEFAULT_ENVTEST_INDEX_URL}. */
  readonly indexUrl?: string;
  /** The directory the binaries go in (created; replaced whole only once everything checked out). */
  readonly targetDir: string;
  /** Cancels the download. */
  readonly signal?: AbortSignal;
  /** Progress lines. */
  readonly progress: (line: string) => void;
}

/** This machine's platform as the archives name it (`linux-amd64`); undefined where no archive is built. */
export function envtestPlatform(platform: string = process.platform, arch: string = process.arch): string | undefined {
  const os = platform === 'linux' || platform === 'darwin' ? platform : undefined;
  const cpu = arch === 'x64' ? 'amd64' : arch === 'arm64' || arch === 'ppc64' || arch === 's390x' ? arch : undefined;
  return os && cpu ? `${os}-${cpu}` : undefined;
}

/** The archive of `version` for `platform` in an index document; undefined when it lists none. */
export function findArchive(index: unknown, version: string, platform: string): EnvtestArchive | undefined {
  const releases = (index as { releases?: Record<string, Record<string, { hash?: unknown; selfLink?: unknown }> | undefined> } | null)?.releases;
  const name = `envtest-${version}-${platform}.tar.gz`;
  const entry = releases?.[version]?.[name];
  if (!entry || typeof entry.hash !== 'string' || typeof entry.selfLink !== 'string') return undefined;
  return { name, hash: entry.hash.toLowerCase(), url: entry.selfLink };
}

const INDEX_TIMEOUT_MS = 30_000;
const ARCHIVE_TIMEOUT_MS = 10 * 60_000;

/**
 * Downloads and verifies the archive of `kubernetesVersion` for this
 * platform and unpacks `kube-apiserver`, `etcd` (and `kubectl`) into
 * `targetDir`.
 *
 * @throws {@link EnvtestError} `DownloadFailed` when the index or archive
 *   cannot be had, lists no archive for this release and platform, or the
 *   archive's digest or contents are not what they should be (nothing is
 *   left in `targetDir` then).
 * @example
 * ```ts
 * await downloadEnvtest({ kubernetesVersion: 'v1.37.2', targetDir: '/tmp/envtest', progress: console.log });
 * ```
 */
export async function downloadEnvtest(options: DownloadOptions): Promise<void> {
  const indexUrl = options.indexUrl ?? process.env['KUBELOOP_ENVTEST_INDEX_URL'] ?? DEFAULT_ENVTEST_INDEX_URL;
  const platform = envtestPlatform();
  if (!platform) throw new EnvtestError('DownloadFailed', `no prebuilt envtest binaries for ${process.platform}/${process.arch}`);
  const fail = (message: string, cause?: unknown): EnvtestError => new EnvtestError('DownloadFailed', message, cause === undefined ? {} : { cause });
  const signal = (ms: number): AbortSignal => (options.signal ? AbortSignal.any([options.signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms));

  let index: unknown;
  try {
    const res = await fetch(indexUrl, { signal: signal(INDEX_TIMEOUT_MS) });
    if (!res.ok) throw fail(`the envtest index ${indexUrl} answered ${res.status}`);
    index = parse(await res.text());
  } catch (cause) {
    throw cause instanceof EnvtestError ? cause : fail(`cannot read the envtest index ${indexUrl}: ${cause instanceof Error ? cause.message : String(cause)}`, cause);
  }
  const archive = findArchive(index, options.kubernetesVersion, platform);
  if (!archive) throw fail(`the envtest index ${indexUrl} has no archive for Kubernetes ${options.kubernetesVersion} on ${platform}`);
  const algorithm = archive.hash.length === 128 ? 'sha512' : archive.hash.length === 64 ? 'sha256' : undefined;
  if (!algorithm || !/^[0-9a-f]+$/.test(archive.hash)) throw fail(`the envtest index lists ${archive.name} with a hash that is neither SHA-512 nor SHA-256 hex: ${archive.hash}`);

  const parent = join(options.targetDir, '..');
  await mkdir(parent, { recursive: true });
  const work = await mkdtemp(join(parent, '.envtest-download-'));
  try {
    const file = join(work, archive.name);
    options.progress(`downloading ${archive.name} from ${archive.url}`);
    const started = Date.now();
    const hash = createHash(algorithm);
    let bytes = 0;
    try {
      const res = await fetch(archive.url, { signal: signal(ARCHIVE_TIMEOUT_MS) });
      if (!res.ok || !res.body) throw fail(`${archive.url} answered ${res.status}`);
      const hashing = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hash.update(chunk);
          bytes += chunk.length;
          done(null, chunk);
        },
      });
      await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), hashing, createWriteStream(file));
    } catch (cause) {
      throw cause instanceof EnvtestError ? cause : fail(`cannot download ${archive.url}: ${cause instanceof Error ? cause.message : String(cause)}`, cause);
    }
    const digest = hash.digest('hex');
    if (digest !== archive.hash) throw fail(`${archive.name}: ${algorithm} ${digest} does not match the index's ${archive.hash}; nothing was installed`);
    options.progress(`${archive.name}: ${(bytes / 1024 / 1024).toFixed(1)} MiB in ${((Date.now() - started) / 1000).toFixed(1)} s, ${algorithm} verified`);

    // Only regular files and folders under controller-tools/envtest/: no links, no paths out of it.
    const listing = await run('tar', ['-tvzf', file]);
    if (listing.code !== 0) throw fail(`${archive.name} is not a gzipped tar: ${tail(listing.stderr, 3)}`);
    const names = await run('tar', ['-tzf', file]);
    const entries = names.stdout.split('\n').filter(Boolean);
    const types = listing.stdout.split('\n').filter(Boolean).map((l) => l[0]);
    const bad = entries.filter((e, i) => !/^controller-tools(\/envtest(\/[A-Za-z0-9._-]+)?)?\/?$/.test(e) || (types[i] !== '-' && types[i] !== 'd'));
    if (bad.length > 0) throw fail(`${archive.name} holds entries outside controller-tools/envtest/ or that are not regular files: ${bad.slice(0, 5).join(', ')}`);
    for (const needed of ['kube-apiserver', 'etcd']) {
      if (!entries.includes(`controller-tools/envtest/${needed}`)) throw fail(`${archive.name} has no controller-tools/envtest/${needed}`);
    }
    const unpacked = join(work, 'unpacked');
    await mkdir(unpacked);
    const extracted = await run('tar', ['-xzf', file, '-C', unpacked, '--no-same-owner']);
    if (extracted.code !== 0) throw fail(`unpacking ${archive.name} failed: ${tail(extracted.stderr, 3)}`);
    await rm(options.targetDir, { recursive: true, force: true });
    await rename(join(unpacked, 'controller-tools', 'envtest'), options.targetDir);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
