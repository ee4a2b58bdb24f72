/**
 * Webhooks for tests, as controller-runtime's WebhookInstallOptions: the
 * webhook configurations are installed pointing at a server in the test
 * process (`https://127.0.0.1:<port>`), with a CA bundle whose serving
 * certificate is written to a directory for that server, and CRDs are
 * switched to webhook conversion at its `/convert`. The API server then
 * calls back into the test process.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { createCertificateAuthority, isPkiError, loadCertificateAuthority } from '@kubeloop/pki';
import type { CertificateAuthority } from '@kubeloop/pki';
import { EnvtestError } from './errors.js';
import { kubeRequest } from './internal/http.js';
import { freePort } from './internal/ports.js';
import { removeRecord, startWatchdog, stopWatchdog, writeRecord } from './internal/reaper.js';
import { defaultCacheDir } from './binaries.js';

/** A webhook configuration: a ValidatingWebhookConfiguration or MutatingWebhookConfiguration (admissionregistration.k8s.io/v1). */
export interface WebhookConfigurationLike {
  readonly apiVersion?: string;
  readonly kind: 'ValidatingWebhookConfiguration' | 'MutatingWebhookConfiguration';
  readonly metadata: { readonly name: string; readonly [key: string]: unknown };
  readonly webhooks?: readonly {
    readonly name: string;
    readonly clientConfig: {
      readonly url?: string;
      readonly service?: { readonly name: string; readonly namespace: string; readonly path?: string; readonly port?: number };
      readonly caBundle?: string;
    };
    readonly [key: string]: unknown;
  }[];
}

/** A configuration object, or a YAML/JSON file or directory of them (other kinds in the files are skipped, so kustomize output works). */
export type WebhookConfigurationSource = string | WebhookConfigurationLike;

/** Options for {@link installWebhooks}. Every field is optional. */
export interface WebhookInstallOptions {
  /** The configurations to install. Each webhook with a `service` client config is pointed at the local server, keeping the service's path. Default: none. */
  readonly configurations?: readonly WebhookConfigurationSource[];
  /** CRDs (by name, `harddisks.crd-demo.io`) to switch to webhook conversion at the local server. Default: none. */
  readonly conversionCRDs?: readonly string[];
  /** The path of the local conversion webhook. Default: `/convert`. */
  readonly conversionPath?: string;
  /** Where the local webhook server will listen. Default: `127.0.0.1`. */
  readonly localServingHost?: string;
  /** Its port. Default: a free port picked now. */
  readonly localServingPort?: number;
  /** Where `tls.crt`, `tls.key` and `ca.crt` are written. Default: a new temp directory, removed by `uninstall`. */
  readonly localServingCertDir?: string;
  /**
   * The CA that signs the serving certificate and goes into the caBundle.
   * Give one to issue more certificates from it in the test (a rotation, say).
   * Default: a new CA.
   */
  readonly localServingCA?: { readonly certPem: string; readonly keyPem: string };
  /** How long to wait for the configurations and CRDs to be in place. Default: 30 000 ms. */
  readonly timeoutMs?: number;
}

/** What {@link installWebhooks} set up: where to serve, with which certificate, and how to undo it. */
export interface InstalledWebhooks {
  /** Listen here: host and port the configurations point at. */
  readonly host: string;
  readonly port: number;
  /** `https://<host>:<port>`. */
  readonly url: string;
  /** The directory holding `tls.crt`, `tls.key` and `ca.crt`. */
  readonly certDir: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** The serving certificate and key (also in the files) and the CA the API server trusts for them. */
  readonly certPem: string;
  readonly keyPem: string;
  readonly caPem: string;
  /** The configurations installed, by kind and name. */
  readonly configurations: readonly { readonly kind: WebhookConfigurationLike['kind']; readonly name: string }[];
  /** Delete the configurations, switch the CRDs back to no conversion, and remove a temp cert directory. */
  uninstall(): Promise<void>;
}

const PATHS: Readonly<Record<WebhookConfigurationLike['kind'], string>> = {
  ValidatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  MutatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
};
const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

function isConfiguration(doc: unknown): doc is WebhookConfigurationLike {
  const d = doc as Partial<WebhookConfigurationLike> | null;
  return !!d && (d.kind === 'ValidatingWebhookConfiguration' || d.kind === 'MutatingWebhookConfiguration');
}

async function load(source: WebhookConfigurationSource): Promise<WebhookConfigurationLike[]> {
  if (typeof source !== 'string') {
    if (!isConfiguration(source) || !source.metadata?.name) {
      throw new EnvtestError('InvalidOptions', 'a webhook configuration must be a ValidatingWebhookConfiguration or MutatingWebhookConfiguration with metadata.name');
    }
    return [source];
  }
  let info;
  try {
    info = await stat(source);
  } catch (cause) {
    throw new EnvtestError('InvalidOptions', `webhook configuration path ${source} cannot be read`, { cause });
  }
  if (info.isDirectory()) {
    const names = (await readdir(source)).filter((n) => ['.yaml', '.yml', '.json'].includes(extname(n))).sort();
    return (await Promise.all(names.map((n) => load(join(source, n))))).flat();
  }
  const text = await readFile(source, 'utf8');
  let docs: unknown[];
  try {
    docs = extname(source) === '.json' ? [JSON.parse(text) as unknown] : loadAllYaml(text);
  } catch (cause) {
    throw new EnvtestError('InvalidOptions', `${source} is not valid ${extname(source) === '.json' ? 'JSON' : 'YAML'}`, { cause });
  }
  return docs.filter(isConfiguration).filter((d) => !!d.metadata?.name);
}

/** The configuration with every service-backed webhook pointed at `url`, and every webhook trusting `caBundle`. */
function pointAtLocal(config: WebhookConfigurationLike, url: string, caBundle: string): WebhookConfigurationLike {
  return {
    ...config,
    apiVersion: 'admissionregistration.k8s.io/v1',
    webhooks: (config.webhooks ?? []).map((w) => {
      const { service, ...clientConfig } = w.clientConfig;
      return {
        ...w,
        clientConfig: service ? { ...clientConfig, url: `${url}${service.path ?? ''}`, caBundle } : { ...clientConfig, caBundle },
      };
    }),
  };
}

function check(what: string, res: { status: number; body: string }, ok: readonly number[]): void {
  if (!ok.includes(res.status)) throw new EnvtestError('InvalidOptions', `${what} failed: ${res.status} ${res.body.slice(0, 500)}`);
}

async function createOrReplace(kc: KubeConfig, config: WebhookConfigurationLike): Promise<void> {
  const base = PATHS[config.kind];
  const name = config.metadata.name;
  for (let attempt = 0; attempt < 5; attempt++) {
    const existing = await kubeRequest(kc, 'GET', `${base}/${name}`);
    let res;
    if (existing.status === 404) {
      res = await kubeRequest(kc, 'POST', base, config);
    } else {
      check(`reading ${config.kind} ${name}`, existing, [200]);
      const rv = (JSON.parse(existing.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
      res = await kubeRequest(kc, 'PUT', `${base}/${name}`, { ...config, metadata: { ...config.metadata, resourceVersion: rv } });
    }
    if (res.status === 409) continue;
    return check(`writing ${config.kind} ${name}`, res, [200, 201]);
  }
  throw new EnvtestError('InvalidOptions', `writing ${config.kind} ${name} kept conflicting`);
}

interface CRDObject {
  metadata: { name: string; resourceVersion: string };
  spec: { conversion?: unknown; [key: string]: unknown };
  status?: { conditions?: { type: string; status: string }[] };
}

async function setConversion(kc: KubeConfig, name: string, conversion: object): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const res = await kubeRequest(kc, 'GET', `${CRD_PATH}/${name}`);
    check(`reading CRD ${name}`, res, [200]);
    const crd = JSON.parse(res.body) as CRDObject;
    const put = await kubeRequest(kc, 'PUT', `${CRD_PATH}/${name}`, { ...crd, spec: { ...crd.spec, conversion } });
    if (put.status === 409) continue;
    return check(`setting the conversion of CRD ${name}`, put, [200]);
  }
  throw new EnvtestError('InvalidOptions', `updating CRD ${name} kept conflicting`);
}

async function waitFor(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new EnvtestError('Timeout', `${what} was not in place within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Install webhook configurations and webhook conversion pointing at a local
 * server, with a fresh CA and serving certificate for it.
 *
 * @throws {@link EnvtestError} `InvalidOptions` for sources that cannot be read or writes the API server refuses, `Timeout` when they are not in place in time.
 *
 * @example
 * ```ts
 * import { installWebhooks } from '@kubeloop/envtest';
 * import { createWebhookServer, watchCertificateFiles } from '@kubeloop/webhook';
 *
 * const hooks = await installWebhooks(env.kubeConfig, { configurations: ['config/webhook/manifests.yaml'], conversionCRDs: ['harddisks.crd-demo.io'] });
 * const server = createWebhookServer({ host: hooks.host, port: hooks.port, certificates: watchCertificateFiles({ certFile: hooks.certFile, keyFile: hooks.keyFile }) });
 * // ... register webhooks, start the server, run the test ...
 * await hooks.uninstall();
 * ```
 */
export async function installWebhooks(kc: KubeConfig, options: WebhookInstallOptions = {}): Promise<InstalledWebhooks> {
  const host = options.localServingHost ?? '127.0.0.1';
  const port = options.localServingPort ?? (await freePort(host));
  const timeoutMs = options.timeoutMs ?? 30_000;
  const url = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const configurations = (await Promise.all((options.configurations ?? []).map(load))).flat();

  let ca: CertificateAuthority;
  try {
    ca = options.localServingCA ? loadCertificateAuthority(options.localServingCA) : createCertificateAuthority({ commonName: 'kubeloop-envtest-webhook-ca' });
  } catch (cause) {
    if (isPkiError(cause)) throw new EnvtestError('InvalidOptions', `localServingCA: ${cause.message}`, { cause });
    throw cause;
  }
  const serving = ca.issue({ commonName: 'kubeloop-envtest-webhook', usage: 'server', hosts: [host, 'localhost'] });
  const ownDir = options.localServingCertDir === undefined;
  // A directory of our own (mkdtemp: mode 0700) holds a private key: it goes however this process ends.
  // uninstall() or a failed install removes it; when the process is killed (SIGKILL too), a watchdog
  // removes it within seconds, and the next environment start sweeps it if the watchdog died as well.
  const runDir = join(defaultCacheDir(), 'run');
  const certDir = options.localServingCertDir ?? (await mkdtemp(join(tmpdir(), 'kubeloop-envtest-webhook-')));
  const watchdogPid = ownDir ? startWatchdog(process.pid, certDir) : undefined;
  const removeOwnDir = async (): Promise<void> => {
    if (!ownDir) return;
    stopWatchdog(watchdogPid);
    await removeRecord(runDir, certDir);
    await rm(certDir, { recursive: true, force: true });
  };
  try {
    return await install();
  } catch (err) {
    await removeOwnDir();
    throw err;
  }

  async function install(): Promise<InstalledWebhooks> {
    if (ownDir) await writeRecord(runDir, { ownerPid: process.pid, dir: certDir, pgids: [], ...(watchdogPid === undefined ? {} : { watchdogPid }) });
    await mkdir(certDir, { recursive: true });
    const certFile = join(certDir, 'tls.crt');
    const keyFile = join(certDir, 'tls.key');
    await Promise.all([
      writeFile(certFile, serving.certPem),
      writeFile(keyFile, serving.keyPem, { mode: 0o600 }),
      writeFile(join(certDir, 'ca.crt'), ca.certPem),
    ]);
    const caBundle = Buffer.from(ca.certPem).toString('base64');

    for (const config of configurations) await createOrReplace(kc, pointAtLocal(config, url, caBundle));
    const conversionPath = options.conversionPath ?? '/convert';
    for (const name of options.conversionCRDs ?? []) {
      await setConversion(kc, name, {
        strategy: 'Webhook',
        webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: `${url}${conversionPath}`, caBundle } },
      });
    }
    await Promise.all([
      ...configurations.map((c) =>
        waitFor(`${c.kind} ${c.metadata.name}`, timeoutMs, async () => (await kubeRequest(kc, 'GET', `${PATHS[c.kind]}/${c.metadata.name}`)).status === 200),
      ),
      ...(options.conversionCRDs ?? []).map((name) =>
        waitFor(`webhook conversion of CRD ${name}`, timeoutMs, async () => {
          const res = await kubeRequest(kc, 'GET', `${CRD_PATH}/${name}`);
          if (res.status !== 200) return false;
          const crd = JSON.parse(res.body) as CRDObject & { spec: { conversion?: { strategy?: string } } };
          return crd.spec.conversion?.strategy === 'Webhook' && (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
        }),
      ),
    ]);

    const installed = configurations.map((c) => ({ kind: c.kind, name: c.metadata.name }));
    let uninstalled = false;
    return {
      host,
      port,
      url,
      certDir,
      certFile,
      keyFile,
      certPem: serving.certPem,
      keyPem: serving.keyPem,
      caPem: ca.certPem,
      configurations: installed,
      async uninstall(): Promise<void> {
        if (uninstalled) return;
        uninstalled = true;
        for (const c of installed) {
          const res = await kubeRequest(kc, 'DELETE', `${PATHS[c.kind]}/${c.name}`);
          check(`deleting ${c.kind} ${c.name}`, res, [200, 202, 404]);
        }
        for (const name of options.conversionCRDs ?? []) {
          const res = await kubeRequest(kc, 'GET', `${CRD_PATH}/${name}`);
          if (res.status === 200) await setConversion(kc, name, { strategy: 'None' });
        }
        await removeOwnDir();
      },
    };
  }
}
