/**
 * Finding, or building, the kube-apiserver and etcd binaries envtest runs.
 *
 * Order: `KUBEBUILDER_ASSETS` (controller-runtime's convention, so an existing
 * setup-envtest install just works), then a per-version cache under the user's
 * cache directory (built or downloaded), then the prebuilt binaries
 * setup-envtest downloads (SHA-512 verified; seconds), then a build from Go
 * modules with the machine's Go (minutes) when the download cannot be had.
 */
import { constants } from 'node:fs';
import { access, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { downloadEnvtest, envtestPlatform } from './download.js';
import { EnvtestError } from './errors.js';
import { run, tail } from './internal/exec.js';
import {
  assertNoUnresolvedStaging,
  etcdWrapperGoMod,
  kubernetesWrapperGoMod,
  toolsGo,
} from './internal/go-wrapper.js';
import { DEFAULT_ETCD_VERSION, DEFAULT_KUBERNETES_VERSION, parseVersion } from './versions.js';

/** Where the control-plane binaries are, and where they came from. */
export interface BinaryPaths {
  readonly kubeApiserver: string;
  readonly etcd: string;
  /** etcdctl, when available (fault tests use it to compact etcd). */
  readonly etcdctl: string | undefined;
  readonly source: 'KUBEBUILDER_ASSETS' | 'cache' | 'downloaded' | 'built';
  /** The Kubernetes release, when known (always for cache and built). */
  readonly kubernetesVersion: string | undefined;
  readonly etcdVersion: string | undefined;
}

/** Options for {@link resolveBinaries} and {@link buildBinaries}. */
export interface BinaryOptions {
  /** Kubernetes release to use. Default: `KUBELOOP_KUBERNETES_VERSION`, else {@link DEFAULT_KUBERNETES_VERSION}. */
  readonly kubernetesVersion?: string;
  /** etcd release to use. Default: `KUBELOOP_ETCD_VERSION`, else {@link DEFAULT_ETCD_VERSION}. */
  readonly etcdVersion?: string;
  /**
   * A directory holding `kube-apiserver` and `etcd` (and optionally `etcdctl`).
   * Default: `KUBEBUILDER_ASSETS`. When set, it must hold both binaries.
   */
  readonly assetsDir?: string | undefined;
  /** Cache directory. Default: `KUBELOOP_ENVTEST_CACHE`, else `$XDG_CACHE_HOME/kubeloop/envtest`, else `~/.cache/kubeloop/envtest`. */
  readonly cacheDir?: string;
  /**
   * Download the prebuilt binaries (setup-envtest's index and archives) when
   * nothing is found: `false` skips it. Default: `KUBELOOP_ENVTEST_DOWNLOAD`
   * (`0` turns it off), else true.
   */
  readonly download?: boolean;
  /** The download index URL. Default: `KUBELOOP_ENVTEST_INDEX_URL`, else controller-tools' `envtest-releases.yaml`. */
  readonly indexUrl?: string;
  /** Build from Go modules when nothing is found (and no download could be had). Default: true. */
  readonly build?: boolean;
  /** The Go command. Default: `KUBELOOP_GO`, else `go` on PATH. */
  readonly go?: string;
  /** Progress lines while building. Default: written to stderr. */
  readonly onProgress?: (line: string) => void;
  /** Cancels a build in progress. */
  readonly signal?: AbortSignal;
}

interface Resolved {
  kubernetesVersion: string;
  etcdVersion: string;
  cacheDir: string;
  go: string;
  progress: (line: string) => void;
}

function resolveOptions(options: BinaryOptions): Resolved {
  const kubernetesVersion =
    options.kubernetesVersion ?? process.env['KUBELOOP_KUBERNETES_VERSION'] ?? DEFAULT_KUBERNETES_VERSION;
  const etcdVersion = options.etcdVersion ?? process.env['KUBELOOP_ETCD_VERSION'] ?? DEFAULT_ETCD_VERSION;
  if (!parseVersion(kubernetesVersion)) {
    throw new EnvtestError('InvalidOptions', `kubernetesVersion must look like v1.37.2, got ${JSON.stringify(kubernetesVersion)}`);
  }
  if (!parseVersion(etcdVersion)) {
    throw new EnvtestError('InvalidOptions', `etcdVersion must look like v3.6.16, got ${JSON.stringify(etcdVersion)}`);
  }
  return {
    kubernetesVersion,
    etcdVersion,
    cacheDir: options.cacheDir ?? defaultCacheDir(),
    go: options.go ?? process.env['KUBELOOP_GO'] ?? 'go',
    progress: options.onProgress ?? ((line) => process.stderr.write(`[envtest] ${line}\n`)),
  };
}

/** `KUBELOOP_ENVTEST_CACHE`, else `$XDG_CACHE_HOME/kubeloop/envtest`, else `~/.cache/kubeloop/envtest`. */
export function defaultCacheDir(): string {
  const explicit = process.env['KUBELOOP_ENVTEST_CACHE'];
  if (explicit) return explicit;
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg && xdg.length > 0 ? xdg : join(homedir(), '.cache'), 'kubeloop', 'envtest');
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

function cachePaths(r: Resolved): { kubeApiserver: string; etcd: string; etcdctl: string } {
  return {
    kubeApiserver: join(r.cacheDir, `kubernetes-${r.kubernetesVersion}`, 'kube-apiserver'),
    etcd: join(r.cacheDir, `etcd-${r.etcdVersion}`, 'etcd'),
    etcdctl: join(r.cacheDir, `etcd-${r.etcdVersion}`, 'etcdctl'),
  };
}

/** Where downloaded binaries go: one folder per release and platform, as the archive has them. */
function downloadDir(r: Resolved): string {
  return join(r.cacheDir, `envtest-${r.kubernetesVersion}-${envtestPlatform() ?? 'unknown'}`);
}

function notFoundMessage(r: Resolved, reason: string): string {
  const paths = cachePaths(r);
  return [
    `kube-apiserver and etcd were not found (${reason}). Provide them in one of these ways:`,
    '  1. set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd (as setup-envtest installs them);',
    `  or let envtest download them (the default; KUBELOOP_ENVTEST_INDEX_URL names a mirror of setup-envtest's index);`,
    `  2. place them at ${paths.kubeApiserver} and ${paths.etcd};`,
    `  3. install Go >= 1.26 (on PATH, or name it with KUBELOOP_GO) so envtest can build Kubernetes ${r.kubernetesVersion} and etcd ${r.etcdVersion} from the Go module proxy (pnpm envtest build);`,
    '  or set KUBELOOP_USE_EXISTING_CLUSTER=true to run against the cluster your KUBECONFIG points at.',
  ].join('\n');
}

/**
 * Find the control-plane binaries, building them if needed and allowed.
 *
 * @example
 * ```ts
 * const bins = await resolveBinaries();
 * console.log(bins.kubeApiserver, bins.source); // ".../kube-apiserver", "cache"
 * ```
 */
export async function resolveBinaries(options: BinaryOptions = {}): Promise<BinaryPaths> {
  const r = resolveOptions(options);
  const assets = options.assetsDir ?? process.env['KUBEBUILDER_ASSETS'];
  if (assets) {
    const kubeApiserver = join(assets, 'kube-apiserver');
    const etcd = join(assets, 'etcd');
    const missing = [];
    if (!(await isExecutable(kubeApiserver))) missing.push(kubeApiserver);
    if (!(await isExecutable(etcd))) missing.push(etcd);
    if (missing.length > 0) {
      throw new EnvtestError(
        'BinariesNotFound',
        `KUBEBUILDER_ASSETS is set to ${assets}, but these are missing or not executable: ${missing.join(', ')}`,
      );
    }
    const etcdctl = join(assets, 'etcdctl');
    return {
      kubeApiserver,
      etcd,
      etcdctl: (await isExecutable(etcdctl)) ? etcdctl : undefined,
      source: 'KUBEBUILDER_ASSETS',
      kubernetesVersion: undefined,
      etcdVersion: undefined,
    };
  }
  const paths = cachePaths(r);
  const haveApiserver = await isExecutable(paths.kubeApiserver);
  const haveEtcd = (await isExecutable(paths.etcd)) && (await isExecutable(paths.etcdctl));
  if (haveApiserver && haveEtcd) {
    return { ...paths, source: 'cache', kubernetesVersion: r.kubernetesVersion, etcdVersion: r.etcdVersion };
  }
  const downloaded = await cachedDownload(r);
  if (downloaded) return { ...downloaded, source: 'cache' };
  let downloadFailure = '';
  if (options.download ?? process.env['KUBELOOP_ENVTEST_DOWNLOAD'] !== '0') {
    try {
      return await downloadBinaries(options);
    } catch (err) {
      downloadFailure = err instanceof Error ? err.message : String(err);
      r.progress(`no prebuilt binaries (${downloadFailure}); ${options.build === false ? 'building is turned off' : 'building them from Go modules instead'}`);
    }
  }
  if (options.build === false) throw new EnvtestError('BinariesNotFound', notFoundMessage(r, `building is turned off${downloadFailure ? `; the download failed: ${downloadFailure}` : ''}`));
  return buildBinaries(options);
}

async function cachedDownload(r: Resolved): Promise<Omit<BinaryPaths, 'source'> | undefined> {
  const dir = downloadDir(r);
  const kubeApiserver = join(dir, 'kube-apiserver');
  const etcd = join(dir, 'etcd');
  if (!(await isExecutable(kubeApiserver)) || !(await isExecutable(etcd))) return undefined;
  // The archives carry no etcdctl; one from a build of the default etcd is used when there.
  const etcdctl = cachePaths(r).etcdctl;
  return { kubeApiserver, etcd, etcdctl: (await isExecutable(etcdctl)) ? etcdctl : undefined, kubernetesVersion: r.kubernetesVersion, etcdVersion: undefined };
}

/**
 * Download the prebuilt kube-apiserver and etcd of `kubernetesVersion` (the
 * archives controller-runtime's setup-envtest uses, SHA-512 verified) into
 * the cache, unless they are there already.
 *
 * @throws {@link EnvtestError} `DownloadFailed` (the index or archive cannot
 *   be had, no archive for this release and platform, a digest mismatch).
 * @example
 * ```ts
 * const bins = await downloadBinaries({ kubernetesVersion: 'v1.37.2' });
 * bins.source; // 'downloaded'
 * ```
 */
export async function downloadBinaries(options: BinaryOptions = {}): Promise<BinaryPaths> {
  const r = resolveOptions(options);
  await mkdir(r.cacheDir, { recursive: true });
  const release = await acquireBuildLock(join(r.cacheDir, 'build.lock'), r.progress, options.signal);
  try {
    const cached = await cachedDownload(r);
    if (cached) return { ...cached, source: 'cache' };
    await downloadEnvtest({
      kubernetesVersion: r.kubernetesVersion,
      targetDir: downloadDir(r),
      progress: r.progress,
      ...(options.indexUrl ? { indexUrl: options.indexUrl } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const done = await cachedDownload(r);
    if (!done) throw new EnvtestError('DownloadFailed', `the archive unpacked, but ${downloadDir(r)} holds no executable kube-apiserver and etcd`);
    return { ...done, source: 'downloaded' };
  } finally {
    await release();
  }
}

/**
 * Build kube-apiserver, etcd and etcdctl from Go modules into the cache (what
 * is already cached is kept). Shows progress; a cold build takes minutes.
 *
 * @example
 * ```ts
 * await buildBinaries({ kubernetesVersion: 'v1.37.2', onProgress: console.log });
 * ```
 */
export async function buildBinaries(options: BinaryOptions = {}): Promise<BinaryPaths> {
  const r = resolveOptions(options);
  const paths = cachePaths(r);
  const goVersion = await run(r.go, ['env', 'GOVERSION'], {}).catch((cause: unknown) => {
    throw new EnvtestError('BinariesNotFound', notFoundMessage(r, `no Go: cannot run ${r.go}`), { cause });
  });
  if (goVersion.code !== 0) {
    throw new EnvtestError('BinariesNotFound', notFoundMessage(r, `${r.go} env failed: ${tail(goVersion.stderr, 3)}`));
  }
  await mkdir(r.cacheDir, { recursive: true });
  const release = await acquireBuildLock(join(r.cacheDir, 'build.lock'), r.progress, options.signal);
  try {
    if (!(await isExecutable(paths.kubeApiserver))) {
      await buildKubeApiserver(r, paths.kubeApiserver, options.signal);
    }
    if (!(await isExecutable(paths.etcd)) || !(await isExecutable(paths.etcdctl))) {
      await buildEtcd(r, paths.etcd, paths.etcdctl, options.signal);
    }
  } finally {
    await release();
  }
  return { ...paths, source: 'built', kubernetesVersion: r.kubernetesVersion, etcdVersion: r.etcdVersion };
}

function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, GOWORK: 'off', GOFLAGS: '-mod=mod', CGO_ENABLED: '0' };
}

async function goStep(r: Resolved, what: string, args: string[], cwd: string, signal?: AbortSignal): Promise<string> {
  const started = Date.now();
  let compiled = 0;
  let lastReport = started;
  const result = await run(r.go, args, {
    cwd,
    env: goEnv(),
    ...(signal ? { signal } : {}),
    onStderrLine: (line) => {
      if (!line.startsWith('go: ') && line.trim() !== '') compiled++;
      const now = Date.now();
      if (now - lastReport >= 15_000) {
        lastReport = now;
        r.progress(`${what}: ${compiled} packages compiled (${Math.round((now - started) / 1000)}s)`);
      }
    },
  }).catch((cause: unknown) => {
    throw new EnvtestError('BuildFailed', `${what}: could not run ${r.go} ${args.join(' ')}`, { cause });
  });
  if (result.code !== 0) {
    const log = tail(result.stderr, 30);
    throw new EnvtestError('BuildFailed', `${what} failed: ${r.go} ${args.join(' ')} exited ${result.code}\n${log}`, {
      logTail: log,
    });
  }
  return result.stdout;
}

async function buildKubeApiserver(r: Resolved, target: string, signal?: AbortSignal): Promise<void> {
  const v = r.kubernetesVersion;
  const started = Date.now();
  const work = join(r.cacheDir, 'build', `kubernetes-${v}`);
  await mkdir(work, { recursive: true });
  r.progress(`building kube-apiserver ${v} from Go modules in ${work} (a cold build takes many minutes)`);
  const info = JSON.parse(await goStep(r, 'go mod download k8s.io/kubernetes', ['mod', 'download', '-json', `k8s.io/kubernetes@${v}`], work, signal)) as {
    GoMod?: string;
    Error?: string;
  };
  if (!info.GoMod) throw new EnvtestError('BuildFailed', `go mod download k8s.io/kubernetes@${v}: ${info.Error ?? 'no go.mod'}`);
  const upstream = await readFile(info.GoMod, 'utf8');
  await writeFile(join(work, 'go.mod'), kubernetesWrapperGoMod(v, upstream));
  await writeFile(join(work, 'tools.go'), toolsGo(['k8s.io/kubernetes/cmd/kube-apiserver']));
  r.progress('resolving dependencies (go mod tidy)');
  await goStep(r, 'go mod tidy', ['mod', 'tidy'], work, signal);
  assertNoUnresolvedStaging(await readFile(join(work, 'go.mod'), 'utf8'));
  const minor = parseVersion(v)?.minor ?? 0;
  const ldflags = [
    `-X k8s.io/component-base/version.gitVersion=${v}`,
    '-X k8s.io/component-base/version.gitMajor=1',
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    '-X k8s.io/component-base/version.gitTreeState=clean',
    '-s -w',
  ].join(' ');
  await mkdir(join(target, '..'), { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  r.progress('compiling kube-apiserver (go build -v; progress every 15 s)');
  await goStep(r, 'go build kube-apiserver', ['build', '-v', '-trimpath', '-ldflags', ldflags, '-o', partial, 'k8s.io/kubernetes/cmd/kube-apiserver'], work, signal);
  await rename(partial, target);
  r.progress(`kube-apiserver ${v} built in ${Math.round((Date.now() - started) / 1000)}s: ${target}`);
}

async function buildEtcd(r: Resolved, etcdTarget: string, etcdctlTarget: string, signal?: AbortSignal): Promise<void> {
  const v = r.etcdVersion;
  const started = Date.now();
  const work = join(r.cacheDir, 'build', `etcd-${v}`);
  await mkdir(work, { recursive: true });
  r.progress(`building etcd ${v} and etcdctl from Go modules in ${work}`);
  await writeFile(join(work, 'go.mod'), etcdWrapperGoMod(v));
  await writeFile(join(work, 'tools.go'), toolsGo(['go.etcd.io/etcd/server/v3', 'go.etcd.io/etcd/etcdctl/v3']));
  await goStep(r, 'go mod tidy (etcd)', ['mod', 'tidy'], work, signal);
  await mkdir(join(etcdTarget, '..'), { recursive: true });
  for (const [pkg, target] of [
    ['go.etcd.io/etcd/server/v3', etcdTarget],
    ['go.etcd.io/etcd/etcdctl/v3', etcdctlTarget],
  ] as const) {
    const partial = `${target}.partial-${process.pid}`;
    await goStep(r, `go build ${pkg}`, ['build', '-v', '-trimpath', '-ldflags', '-s -w', '-o', partial, pkg], work, signal);
    await rename(partial, target);
  }
  r.progress(`etcd ${v} built in ${Math.round((Date.now() - started) / 1000)}s: ${etcdTarget}`);
}

/**
 * A lock directory so two processes do not build the same binaries at once.
 * A lock whose owner process is gone is taken over.
 */
async function acquireBuildLock(
  dir: string,
  progress: (line: string) => void,
  signal?: AbortSignal,
): Promise<() => Promise<void>> {
  let told = false;
  for (;;) {
    signal?.throwIfAborted();
    try {
      await mkdir(dir);
      await writeFile(join(dir, 'pid'), String(process.pid));
      return () => rm(dir, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number.parseInt(await readFile(join(dir, 'pid'), 'utf8').catch(() => ''), 10);
      if (!Number.isInteger(owner) || !processAlive(owner)) {
        await rm(dir, { recursive: true, force: true });
        continue;
      }
      if (!told) {
        progress(`waiting for process ${owner}, which is building the same binaries`);
        told = true;
      }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
}

/** Whether a process with this pid exists (signal 0 probes without sending). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
