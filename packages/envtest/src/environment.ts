/**
 * A real etcd + kube-apiserver on loopback: the control plane every kubeloop
 * framework test talks to, or an existing cluster from KUBECONFIG instead.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { createCertificateAuthority, createSigningKeyPair } from '@kubeloop/pki';
import { defaultCacheDir, resolveBinaries } from './binaries.js';
import type { BinaryOptions, BinaryPaths } from './binaries.js';
import { installCRDs } from './crds.js';
import type { CRDSource, InstallCRDsOptions } from './crds.js';
import { EnvtestError } from './errors.js';
import { mergeFeatureGates, renderFeatureGates } from './feature-gates.js';
import type { FeatureGates } from './feature-gates.js';
import { kubeRequest, rawRequest } from './internal/http.js';
import { renderKubeconfig } from './internal/kubeconfig.js';
import { freePorts, isAddressInUse } from './internal/ports.js';
import { ComponentProcess } from './internal/process.js';
import { removeRecord, startWatchdog, stopWatchdog, sweepStale, writeRecord } from './internal/reaper.js';
import { installWebhooks } from './webhooks.js';
import type { InstalledWebhooks, WebhookInstallOptions } from './webhooks.js';

/** Extra command-line flags: `name → value`; an array repeats the flag; `null` removes a default. */
export type ComponentFlags = Readonly<Record<string, string | readonly string[] | null>>;

/** Options for {@link createEnvironment}. Every field is optional. */
export interface EnvironmentOptions {
  /**
   * Use the cluster from KUBECONFIG (or `kubeconfigPath`) instead of starting
   * one. Default: true when `KUBELOOP_USE_EXISTING_CLUSTER` (or
   * controller-runtime's `USE_EXISTING_CLUSTER`) is `true`.
   */
  readonly useExistingCluster?: boolean;
  /** For an existing cluster: the kubeconfig file. Default: KUBECONFIG, then ~/.kube/config. */
  readonly kubeconfigPath?: string;
  /** How to find or build binaries (versions, KUBEBUILDER_ASSETS, cache). */
  readonly binaries?: BinaryOptions;
  /**
   * How long to wait for etcd and then kube-apiserver to become ready, each.
   * Default: `KUBELOOP_ENVTEST_START_TIMEOUT` (ms), else 60 000 ms.
   */
  readonly startTimeoutMs?: number;
  /** How long SIGTERM may take before SIGKILL. Default: 10 000 ms. */
  readonly stopTimeoutMs?: number;
  /** Flags added to (or, with `null`, removed from) kube-apiserver's defaults. */
  readonly apiServerFlags?: ComponentFlags;
  /**
   * kube-apiserver feature gates, e.g. `{ ShardedListAndWatch: true }` for
   * sharded list and watch (alpha in 1.36+). Merged over
   * `KUBELOOP_ENVTEST_FEATURE_GATES` (`A=true,B=false`); a `feature-gates`
   * entry in `apiServerFlags` wins gate by gate. Ignored for an existing
   * cluster. Default: none.
   */
  readonly featureGates?: FeatureGates;
  /** Flags added to (or removed from) etcd's defaults. */
  readonly etcdFlags?: ComponentFlags;
  /** CRDs installed once the control plane is ready (objects, or YAML/JSON files or directories). */
  readonly crds?: readonly CRDSource[];
  /**
   * Webhook configurations (and CRD webhook conversion) installed after the
   * CRDs, pointing at a local webhook server; see `installWebhooks`. Where
   * to serve and with which certificate is then in `webhooks`. Default: none.
   */
  readonly webhooks?: WebhookInstallOptions;
  /** Parent of the temp directory. Default: the OS temp dir. */
  readonly tmpDir?: string;
  /** Attempts when a picked port is taken before the component binds it. Default: 3. */
  readonly portAttempts?: number;
  /** Progress and state lines. Default: none. */
  readonly log?: (line: string) => void;
}

/** What a started environment offers. */
export interface Environment extends AsyncDisposable {
  /** Start the control plane (or connect to the existing cluster). Idempotent while running. */
  start(): Promise<void>;
  /** Stop both components, then remove the temp dir. Safe to call twice. */
  stop(): Promise<void>;
  /** True when running against an existing cluster. */
  readonly existingCluster: boolean;
  /** The admin kubeconfig file (for kubectl and for `KubeConfig.loadFromFile`). */
  readonly kubeconfigPath: string;
  /** A `@kubernetes/client-node` KubeConfig loaded from {@link kubeconfigPath}. */
  readonly kubeConfig: KubeConfig;
  /** The API server URL, e.g. `https://127.0.0.1:40123`. */
  readonly server: string;
  /** etcd's client URL (undefined for an existing cluster). */
  readonly etcdUrl: string | undefined;
  /** The binaries in use (undefined for an existing cluster). */
  readonly binaries: BinaryPaths | undefined;
  /** The feature gates kube-apiserver was started with (empty for an existing cluster: unknown). */
  readonly featureGates: FeatureGates;
  /** The temp directory holding data, certificates, logs and the kubeconfig. */
  readonly dir: string | undefined;
  /** Install or update CRDs and wait until each is established and served. */
  installCRDs(crds: readonly CRDSource[], options?: InstallCRDsOptions): Promise<void>;
  /** With the `webhooks` option: where the local webhook server must listen and its certificate files. */
  readonly webhooks: InstalledWebhooks | undefined;
  /** Stop kube-apiserver and start it again on the same port and etcd (fault tests). */
  restartApiServer(options?: { downMs?: number }): Promise<void>;
}

function envFlag(name: string): boolean {
  const v = process.env[name];
  return v !== undefined && /^(1|true|yes)$/i.test(v);
}

function renderFlags(defaults: Record<string, string | readonly string[]>, extra: ComponentFlags | undefined): string[] {
  const merged: Record<string, string | readonly string[] | null> = { ...defaults, ...extra };
  const args: string[] = [];
  for (const [name, value] of Object.entries(merged)) {
    if (value === null) continue;
    for (const v of typeof value === 'string' ? [value] : value) args.push(`--${name}=${v}`);
  }
  return args;
}

/**
 * Create an environment; nothing runs until `start()`.
 *
 * @example
 * ```ts
 * import { CoreV1Api } from '@kubernetes/client-node';
 * import { createEnvironment } from '@kubeloop/envtest';
 *
 * await using env = createEnvironment();
 * await env.start();
 * const core = env.kubeConfig.makeApiClient(CoreV1Api);
 * await core.listNamespace();
 * ```
 */
export function createEnvironment(options: EnvironmentOptions = {}): Environment {
  const useExisting =
    options.useExistingCluster ?? (envFlag('KUBELOOP_USE_EXISTING_CLUSTER') || envFlag('USE_EXISTING_CLUSTER'));
  return useExisting ? new ExistingCluster(options) : new LocalControlPlane(options);
}

class ExistingCluster implements Environment {
  readonly existingCluster = true;
  readonly etcdUrl = undefined;
  readonly binaries = undefined;
  readonly dir = undefined;
  readonly featureGates: FeatureGates = {};
  private kc: KubeConfig | undefined;
  private path = '';
  private installed: InstalledWebhooks | undefined;

  constructor(private readonly options: EnvironmentOptions) {}

  get webhooks(): InstalledWebhooks | undefined {
    return this.installed;
  }

  async start(): Promise<void> {
    if (this.kc) return;
    const kc = new KubeConfig();
    const path =
      this.options.kubeconfigPath ??
      process.env['KUBECONFIG']?.split(':')[0] ??
      join(process.env['HOME'] ?? '', '.kube', 'config');
    try {
      if (this.options.kubeconfigPath) kc.loadFromFile(path);
      else kc.loadFromDefault();
    } catch (cause) {
      throw new EnvtestError('InvalidOptions', `cannot load the existing cluster's kubeconfig (${path}): ${String(cause)}`, { cause });
    }
    if (!kc.getCurrentCluster()) {
      throw new EnvtestError('InvalidOptions', `the kubeconfig ${path} has no current cluster`);
    }
    const res = await kubeRequest(kc, 'GET', '/readyz').catch((cause: unknown) => {
      throw new EnvtestError('StartFailed', `the existing cluster at ${kc.getCurrentCluster()?.server} is unreachable: ${String(cause)}`, { cause });
    });
    if (res.status !== 200) {
      throw new EnvtestError('StartFailed', `the existing cluster answered /readyz with ${res.status}: ${res.body.slice(0, 500)}`);
    }
    this.kc = kc;
    this.path = path;
    if (this.options.crds?.length) await installCRDs(kc, this.options.crds);
    if (this.options.webhooks) this.installed = await installWebhooks(kc, this.options.webhooks);
  }

  async stop(): Promise<void> {
    // A shared cluster outlives the test: take the webhook configurations out again.
    await this.installed?.uninstall();
    this.installed = undefined;
    this.kc = undefined;
  }

  get kubeConfig(): KubeConfig {
    if (!this.kc) throw new EnvtestError('InvalidState', 'the environment is not started');
    return this.kc;
  }

  get kubeconfigPath(): string {
    return this.path;
  }

  get server(): string {
    return this.kubeConfig.getCurrentCluster()?.server ?? '';
  }

  installCRDs(crds: readonly CRDSource[], options?: InstallCRDsOptions): Promise<void> {
    return installCRDs(this.kubeConfig, crds, options);
  }

  restartApiServer(): Promise<void> {
    return Promise.reject(new EnvtestError('InvalidState', 'restartApiServer needs a local control plane, not an existing cluster'));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

interface Certs {
  caPem: string;
  clientCaPem: string;
  adminCertPem: string;
  adminKeyPem: string;
}

class LocalControlPlane implements Environment {
  readonly existingCluster = false;
  private readonly startTimeoutMs: number;
  private readonly stopTimeoutMs: number;
  private readonly log: (line: string) => void;
  private readonly runDir: string;
  private bins: BinaryPaths | undefined;
  private tmp: string | undefined;
  private etcd: ComponentProcess | undefined;
  private apiserver: ComponentProcess | undefined;
  private apiserverArgs: string[] = [];
  private apiPort = 0;
  private etcdPort = 0;
  private kc: KubeConfig | undefined;
  private certs: Certs | undefined;
  private watchdogPid: number | undefined;
  private starting: Promise<void> | undefined;
  private installed: InstalledWebhooks | undefined;
  readonly featureGates: FeatureGates;

  constructor(private readonly options: EnvironmentOptions) {
    this.featureGates = mergeFeatureGates(process.env['KUBELOOP_ENVTEST_FEATURE_GATES'], options.featureGates, options.apiServerFlags?.['feature-gates']);
    const fromEnv = Number.parseInt(process.env['KUBELOOP_ENVTEST_START_TIMEOUT'] ?? '', 10);
    this.startTimeoutMs = options.startTimeoutMs ?? (Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 60_000);
    this.stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
    if (this.startTimeoutMs <= 0) throw new EnvtestError('InvalidOptions', 'startTimeoutMs must be positive');
    this.log = options.log ?? (() => undefined);
    this.runDir = join(options.binaries?.cacheDir ?? defaultCacheDir(), 'run');
  }

  get kubeConfig(): KubeConfig {
    if (!this.kc) throw new EnvtestError('InvalidState', 'the environment is not started');
    return this.kc;
  }

  get kubeconfigPath(): string {
    if (!this.tmp) throw new EnvtestError('InvalidState', 'the environment is not started');
    return join(this.tmp, 'kubeconfig');
  }

  get server(): string {
    return `https://127.0.0.1:${this.apiPort}`;
  }

  get etcdUrl(): string | undefined {
    return this.etcdPort ? `http://127.0.0.1:${this.etcdPort}` : undefined;
  }

  get binaries(): BinaryPaths | undefined {
    return this.bins;
  }

  get dir(): string | undefined {
    return this.tmp;
  }

  get webhooks(): InstalledWebhooks | undefined {
    return this.installed;
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().catch(async (err: unknown) => {
      this.starting = undefined;
      await this.stop().catch(() => undefined);
      throw err;
    });
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const swept = await sweepStale(this.runDir);
    if (swept > 0) this.log(`swept ${swept} control plane(s) left behind by dead processes`);
    this.bins = await resolveBinaries(this.options.binaries);
    this.tmp = await mkdtemp(join(this.options.tmpDir ?? tmpdir(), 'kubeloop-envtest-'));
    this.watchdogPid = startWatchdog(process.pid, this.tmp);
    await writeRecord(this.runDir, this.record());
    await mkdir(join(this.tmp, 'certs'));
    this.certs = await this.writeCertificates(join(this.tmp, 'certs'));

    const attempts = this.options.portAttempts ?? 3;
    await this.withPortRetry(attempts, () => this.startEtcd());
    await this.withPortRetry(attempts, () => this.startApiServer());

    const kubeconfig = renderKubeconfig({
      server: this.server,
      caPem: this.certs.caPem,
      clientCertPem: this.certs.adminCertPem,
      clientKeyPem: this.certs.adminKeyPem,
    });
    await writeFile(join(this.tmp, 'kubeconfig'), kubeconfig, { mode: 0o600 });
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig);
    this.kc = kc;
    await this.waitDefaultNamespace();
    if (this.options.crds?.length) await installCRDs(kc, this.options.crds);
    if (this.options.webhooks) {
      this.installed = await installWebhooks(kc, { localServingCertDir: join(this.tmp, 'webhook-certs'), ...this.options.webhooks });
    }
    this.log(`control plane ready at ${this.server} (kubeconfig ${join(this.tmp, 'kubeconfig')})`);
  }

  private record() {
    return {
      ownerPid: process.pid,
      dir: this.tmp ?? '',
      pgids: [this.etcd?.pgid, this.apiserver?.pgid].filter((p): p is number => p !== undefined),
      ...(this.watchdogPid === undefined ? {} : { watchdogPid: this.watchdogPid }),
    };
  }

  private async withPortRetry(attempts: number, fn: () => Promise<void>): Promise<void> {
    for (let i = 1; ; i++) {
      try {
        await fn();
        return;
      } catch (err) {
        const portRace = err instanceof EnvtestError && err.reason === 'StartFailed' && isAddressInUse(err.logTail ?? '');
        if (!portRace || i >= attempts) throw err;
        this.log(`port taken before bind; retrying with new ports (attempt ${i + 1}/${attempts})`);
      }
    }
  }

  private async writeCertificates(dir: string): Promise<Certs> {
    const servingCa = createCertificateAuthority({ commonName: 'kubeloop-envtest-serving-ca' });
    const serving = servingCa.issue({
      commonName: 'kube-apiserver',
      usage: 'server',
      hosts: ['127.0.0.1', 'localhost', '10.0.0.1', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
    });
    const clientCa = createCertificateAuthority({ commonName: 'kubeloop-envtest-client-ca' });
    const admin = clientCa.issue({ commonName: 'admin', organizations: ['system:masters'], usage: 'client' });
    const sa = createSigningKeyPair();
    await Promise.all([
      writeFile(join(dir, 'ca.crt'), servingCa.certPem),
      writeFile(join(dir, 'apiserver.crt'), serving.certPem),
      writeFile(join(dir, 'apiserver.key'), serving.keyPem, { mode: 0o600 }),
      writeFile(join(dir, 'client-ca.crt'), clientCa.certPem),
      writeFile(join(dir, 'admin.crt'), admin.certPem),
      writeFile(join(dir, 'admin.key'), admin.keyPem, { mode: 0o600 }),
      writeFile(join(dir, 'sa.key'), sa.privateKeyPem, { mode: 0o600 }),
      writeFile(join(dir, 'sa.pub'), sa.publicKeyPem),
    ]);
    return { caPem: servingCa.certPem, clientCaPem: clientCa.certPem, adminCertPem: admin.certPem, adminKeyPem: admin.keyPem };
  }

  private async startEtcd(): Promise<void> {
    const tmp = this.tmp!;
    const [client = 0, peer = 0] = await freePorts(2);
    this.etcdPort = client;
    const defaults = {
      name: 'envtest',
      'data-dir': join(tmp, 'etcd'),
      'listen-client-urls': `http://127.0.0.1:${client}`,
      'advertise-client-urls': `http://127.0.0.1:${client}`,
      'listen-peer-urls': `http://127.0.0.1:${peer}`,
      'initial-advertise-peer-urls': `http://127.0.0.1:${peer}`,
      'initial-cluster': `envtest=http://127.0.0.1:${peer}`,
      'unsafe-no-fsync': 'true',
      'log-level': 'warn',
    };
    const etcd = new ComponentProcess('etcd', join(tmp, 'etcd.log'));
    this.etcd = etcd;
    etcd.start(this.bins!.etcd, renderFlags(defaults, this.options.etcdFlags));
    await writeRecord(this.runDir, this.record());
    await this.waitReady(etcd, async () => {
      const res = await rawRequest(new URL(`http://127.0.0.1:${client}/health`), { method: 'GET' }, undefined, 2000);
      return res.status === 200;
    });
  }

  private async startApiServer(): Promise<void> {
    const tmp = this.tmp!;
    const certs = join(tmp, 'certs');
    const [port = 0] = await freePorts(1);
    this.apiPort = port;
    const defaults = {
      'etcd-servers': this.etcdUrl!,
      'cert-dir': certs,
      'tls-cert-file': join(certs, 'apiserver.crt'),
      'tls-private-key-file': join(certs, 'apiserver.key'),
      'client-ca-file': join(certs, 'client-ca.crt'),
      'secure-port': String(port),
      'bind-address': '127.0.0.1',
      'advertise-address': '127.0.0.1',
      'authorization-mode': 'RBAC',
      'service-cluster-ip-range': '10.0.0.0/24',
      'allow-privileged': 'true',
      'disable-admission-plugins': 'ServiceAccount',
      'service-account-issuer': `https://127.0.0.1:${port}`,
      'service-account-key-file': join(certs, 'sa.pub'),
      'service-account-signing-key-file': join(certs, 'sa.key'),
      'etcd-compaction-interval': '0',
      // 1.37 refuses a loopback advertise address in the endpoint reconciler; envtest has no endpoints to keep.
      'endpoint-reconciler-type': 'none',
    };
    const gates = renderFeatureGates(this.featureGates);
    this.apiserverArgs = renderFlags(defaults, { ...this.options.apiServerFlags, 'feature-gates': gates === '' ? null : gates });
    await this.launchApiServer();
  }

  private async launchApiServer(): Promise<void> {
    const apiserver = new ComponentProcess('kube-apiserver', join(this.tmp!, 'kube-apiserver.log'));
    this.apiserver = apiserver;
    apiserver.start(this.bins!.kubeApiserver, this.apiserverArgs);
    await writeRecord(this.runDir, this.record());
    const certs = this.certs!;
    await this.waitReady(apiserver, async () => {
      const res = await rawRequest(
        new URL(`${this.server}/readyz`),
        { method: 'GET', ca: certs.caPem, cert: certs.adminCertPem, key: certs.adminKeyPem },
        undefined,
        2000,
      );
      return res.status === 200;
    });
  }

  private async waitReady(component: ComponentProcess, probe: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + this.startTimeoutMs;
    let lastError = '';
    while (Date.now() < deadline) {
      if (component.exited) {
        const logTail = component.logTail();
        const why = component.spawnError ? `could not be run: ${component.spawnError.message}` : `exited (code ${component.exited.code}, signal ${component.exited.signal})`;
        throw new EnvtestError('StartFailed', `${component.name} ${why} before it was ready. Last lines of ${component.logPath}:\n${logTail}`, { logTail });
      }
      try {
        if (await probe()) return;
      } catch (err) {
        lastError = String(err);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const logTail = component.logTail();
    await component.stop(this.stopTimeoutMs);
    throw new EnvtestError(
      'Timeout',
      `${component.name} was not ready within ${this.startTimeoutMs} ms (last probe: ${lastError || 'not ready'}). Last lines of ${component.logPath}:\n${logTail}`,
      { logTail },
    );
  }

  private async waitDefaultNamespace(): Promise<void> {
    const deadline = Date.now() + this.startTimeoutMs;
    for (;;) {
      const res = await kubeRequest(this.kubeConfig, 'GET', '/api/v1/namespaces/default').catch(() => undefined);
      if (res?.status === 200) return;
      if (Date.now() > deadline) {
        throw new EnvtestError('Timeout', `the default namespace did not appear within ${this.startTimeoutMs} ms`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  installCRDs(crds: readonly CRDSource[], options?: InstallCRDsOptions): Promise<void> {
    return installCRDs(this.kubeConfig, crds, options);
  }

  async restartApiServer(options: { downMs?: number } = {}): Promise<void> {
    if (!this.apiserver || !this.kc) throw new EnvtestError('InvalidState', 'the environment is not started');
    await this.apiserver.stop(this.stopTimeoutMs);
    if (options.downMs) await new Promise((r) => setTimeout(r, options.downMs));
    await this.launchApiServer();
  }

  async stop(): Promise<void> {
    const pending = this.starting;
    this.starting = undefined;
    if (pending) await pending.catch(() => undefined);
    await this.apiserver?.stop(this.stopTimeoutMs);
    await this.etcd?.stop(this.stopTimeoutMs);
    this.apiserver = undefined;
    this.etcd = undefined;
    this.kc = undefined;
    this.installed = undefined;
    stopWatchdog(this.watchdogPid);
    this.watchdogPid = undefined;
    if (this.tmp) {
      await removeRecord(this.runDir, this.tmp);
      await rm(this.tmp, { recursive: true, force: true });
      this.tmp = undefined;
    }
    this.etcdPort = 0;
    this.apiPort = 0;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}
