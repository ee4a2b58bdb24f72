/**
 * `kubeloop dev`: the inner loop of an operator project, as kubebuilder's
 * `make install run` plus a watcher. It finds a cluster (the kubeconfig's,
 * or a local control plane from @kubeloop/envtest when none is configured),
 * installs the project's CRDs, runs `tsc --watch`, and after every
 * compilation without errors restarts the operator (`node dist/main.js`), so
 * a saved file is running a few seconds later. It also watches what
 * `pnpm generate` writes (config/crd, config/webhook/manifests.yaml): a new
 * or changed CRD is installed and the operator restarted, so a kind added by
 * `kubeloop create api` mid-session needs no hand step.
 *
 * A CRD being deleted (held by objects whose finalizers nobody removes) is
 * reported once with what holds it and tried again every few seconds.
 *
 * A project with webhooks (`kubeloop create webhook`) has them served from
 * this machine when the API server can call it, as the example's dev script
 * does: a CA and a serving certificate made for the session in a temp
 * directory of its own, the webhook configurations of
 * config/webhook/manifests.yaml and the conversion of the CRDs that convert
 * through a webhook pointed at `https://127.0.0.1:<port>`, and the operator
 * given `--webhook-cert-dir` and `--webhook-port`. All of it is removed
 * when the loop stops. An API server elsewhere cannot call back into this
 * machine: the operator then runs with `--no-webhooks`, and the loop says so.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { basename, extname, join, relative, resolve } from 'node:path';
import { connect } from 'node:tls';
import { createCertificateAuthority } from '@kubeloop/pki';
import type * as Envtest from '@kubeloop/envtest';
import { parseAllDocuments } from 'yaml';
import { readConfig } from './config.js';
import { CliError } from './errors.js';

type EnvtestModule = typeof Envtest;

/** Options for {@link dev}. */
export interface DevOptions {
  /** The project directory. */
  readonly cwd: string;
  /** Start a local control plane even when a cluster is configured. Default: only when none is (no KUBECONFIG, no ~/.kube/config, not in a pod). */
  readonly envtest?: boolean;
  /** The cluster's kubeconfig. Default: KUBECONFIG, else ~/.kube/config. */
  readonly kubeconfig?: string;
  /** The CRD directory installed before each start and watched for what `pnpm generate` writes. Default: `config/crd`; none when it does not exist. */
  readonly crdDir?: string;
  /** The built entry point. Default: `dist/main.js`. */
  readonly main?: string;
  /**
   * Flags for the operator, after `--kubeconfig` (and, with webhooks served
   * here, `--webhook-cert-dir` and `--webhook-port`). `--no-webhooks` or a
   * `--webhook-cert-dir` of your own here means the loop serves no webhooks.
   * Default: none.
   */
  readonly args?: readonly string[];
  /**
   * Serve the project's webhooks from this machine (a project has them once
   * `kubeloop create webhook` has run: package.json `"kubeloop".webhooks`).
   * `false`: the operator runs with `--no-webhooks`. Default: when the API
   * server can call this machine: a local control plane this loop started,
   * or a kubeconfig whose server is on loopback (a control plane on this
   * machine). A cluster in a container (kind, minikube's docker driver) has
   * a loopback address too but cannot call back: pass `false` there.
   */
  readonly webhooks?: boolean;
  /** The TypeScript compiler. Default: the project's `node_modules/.bin/tsc`, else `tsc` on PATH. */
  readonly tsc?: string;
  /** Stops the loop: the operator and the compiler are stopped, the webhooks removed, a local control plane stopped too. Default: SIGINT or SIGTERM. */
  readonly signal?: AbortSignal;
  /** Lines about what the loop does (not the operator's own output, which goes to this process's stdout and stderr). Default: stderr, prefixed `kubeloop dev: `. */
  readonly log?: (line: string) => void;
  /** Where the operator's output goes. Default: this process's stdout and stderr. */
  readonly operatorOutput?: (text: string) => void;
  /** How often the CRD directory and the webhook manifests are checked for changes, in milliseconds. Default: 1000. */
  readonly watchIntervalMs?: number;
}

/** How often the loop tries again to install CRDs that a CRD being deleted held back. */
const RETRY_TERMINATING_MS = 5_000;

/** How long a stopping operator gets before SIGKILL: its graceful bound (30 s) and a margin. */
const STOP_GRACE_MS = 35_000;

function clusterConfigured(kubeconfig: string | undefined): boolean {
  if (kubeconfig) return true;
  const env = process.env['KUBECONFIG'];
  if (env) return env.split(':').some((p) => p !== '' && existsSync(p));
  return existsSync(join(homedir(), '.kube', 'config')) || Boolean(process.env['KUBERNETES_SERVICE_HOST']);
}

/** Whether an API server URL is on this machine's loopback interface. */
function onLoopback(server: string): boolean {
  let host: string;
  try {
    host = new URL(server).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return false;
  }
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** A TCP port free on every interface (the operator's webhook server listens on all of them). */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port > 0 ? resolvePort(port) : reject(new Error('no port assigned'))));
    });
  });
}

/** The names `config/crd/kustomization.yaml` lists that are not written yet (`kubeloop create api` lists the CRD `pnpm generate` will write). */
async function missingCrdFiles(crdDir: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(join(crdDir, 'kustomization.yaml'), 'utf8');
  } catch {
    return [];
  }
  let resources: unknown;
  try {
    resources = (parseAllDocuments(text)[0]?.toJSON() as { resources?: unknown } | null)?.resources;
  } catch {
    return [];
  }
  if (!Array.isArray(resources)) return [];
  return resources.filter((r): r is string => typeof r === 'string' && /\.ya?ml$/.test(r) && !r.includes('..') && !existsSync(join(crdDir, r)));
}

/** The CRDs in `crdDir` that convert through a webhook Service: their conversion is pointed at the local server. */
async function webhookConversionCrds(crdDir: string): Promise<string[]> {
  const names: string[] = [];
  let files: string[];
  try {
    files = (await readdir(crdDir)).filter((f) => ['.yaml', '.yml', '.json'].includes(extname(f)) && !f.startsWith('kustomization.')).sort();
  } catch {
    return [];
  }
  for (const file of files) {
    let docs: unknown[];
    try {
      const text = await readFile(join(crdDir, file), 'utf8');
      docs = extname(file) === '.json' ? [JSON.parse(text) as unknown] : parseAllDocuments(text).map((d) => d.toJSON() as unknown);
    } catch {
      continue; // installing the CRDs reports an unreadable file
    }
    for (const doc of docs) {
      const crd = doc as { kind?: unknown; metadata?: { name?: unknown }; spec?: { conversion?: { strategy?: unknown; webhook?: { clientConfig?: { service?: unknown } } } } } | null;
      if (crd?.kind === 'CustomResourceDefinition' && typeof crd.metadata?.name === 'string' && crd.spec?.conversion?.strategy === 'Webhook' && crd.spec.conversion.webhook?.clientConfig?.service) {
        names.push(crd.metadata.name);
      }
    }
  }
  return names;
}

/**
 * What the files `pnpm generate` writes hold now: the CRD files' contents and the webhook
 * configurations of the manifests (not the certificate roles beside them, which the loop does not
 * install). A change of it means CRDs or webhooks to install again; a file rewritten unchanged is none.
 */
async function signatureOf(crdDir: string, manifests: string): Promise<string> {
  const hash = createHash('sha256');
  const names = await readdir(crdDir).catch(() => [] as string[]);
  for (const name of names.sort()) {
    const text = await readFile(join(crdDir, name), 'utf8').catch(() => '-');
    hash.update(`${name}\0${text}\0`);
  }
  const text = await readFile(manifests, 'utf8').catch(() => undefined);
  if (text !== undefined) {
    let configurations: unknown;
    try {
      configurations = parseAllDocuments(text).map((d) => d.toJSON() as { kind?: unknown } | null).filter((d) => d?.kind === 'ValidatingWebhookConfiguration' || d?.kind === 'MutatingWebhookConfiguration');
    } catch {
      configurations = text;
    }
    hash.update(`manifests\0${JSON.stringify(configurations)}`);
  }
  return hash.digest('hex');
}

/** The loop's webhook serving: one CA, port and certificate directory for the whole session. */
interface LocalServing {
  readonly port: number;
  readonly certDir: string;
  readonly ca: { readonly certPem: string; readonly keyPem: string };
  installed?: Envtest.InstalledWebhooks;
  conversionCrds: readonly string[];
}

/**
 * Runs the loop until `signal` aborts (default: SIGINT or SIGTERM), then
 * stops everything it started and removes the webhook configurations it
 * installed.
 *
 * @throws {@link CliError} `CommandFailed` when the compiler cannot be
 *   started; `InvalidInput` when a local control plane is needed and
 *   @kubeloop/envtest is not installed.
 * @example
 * ```ts
 * await dev({ cwd: '.', args: ['--metrics-bind-address', '127.0.0.1:0'] });
 * ```
 */
export async function dev(options: DevOptions): Promise<void> {
  const cwd = resolve(options.cwd);
  const log = options.log ?? ((line: string) => process.stderr.write(`kubeloop dev: ${line}\n`));
  const signal = options.signal ?? signalOnce();
  const crdDir = resolve(cwd, options.crdDir ?? 'config/crd');
  const userArgs = options.args ?? [];
  const userServesWebhooks = userArgs.some((a) => a === '--no-webhooks' || a === '--webhook-cert-dir' || a.startsWith('--webhook-cert-dir='));

  let envtest: EnvtestModule;
  try {
    envtest = await import('@kubeloop/envtest');
  } catch (cause) {
    throw new CliError('InvalidInput', 'kubeloop dev needs @kubeloop/envtest (a devDependency of a new project): pnpm add -D @kubeloop/envtest', { cause });
  }
  const local = options.envtest === true || !clusterConfigured(options.kubeconfig);
  const env = local
    ? envtest.createEnvironment({ log: (line) => log(line) })
    : envtest.createEnvironment({ useExistingCluster: true, ...(options.kubeconfig ? { kubeconfigPath: options.kubeconfig } : {}) });
  if (local) log('no cluster configured: starting a local control plane (etcd + kube-apiserver)');
  await env.start();
  const kubeconfig = env.kubeconfigPath;
  log(local ? `control plane ready; in another shell: export KUBECONFIG=${kubeconfig}` : `using the cluster of ${kubeconfig}`);
  const server = env.kubeConfig.getCurrentCluster()?.server ?? '';
  const canServeWebhooks = options.webhooks ?? (local || onLoopback(server));

  let operator: ChildProcess | undefined;
  let compiler: ChildProcess | undefined;
  let serving: LocalServing | undefined;
  let restarts = Promise.resolve();
  let watched = '';
  let toldNoWebhooks = false;
  /** The last CRDTerminating message, while a CRD being deleted keeps the loop from installing it. */
  let heldCrd: string | undefined;
  /** When to try installing the CRDs again (a CRD being deleted held them back). */
  let retryAt: number | undefined;
  const manifestsFile = async (): Promise<string> => resolve(cwd, (await readConfig(cwd).catch(() => ({ webhooks: undefined }))).webhooks?.outFile ?? 'config/webhook/manifests.yaml');
  const signature = async (): Promise<string> => signatureOf(crdDir, await manifestsFile());

  const stopOperator = async (): Promise<void> => {
    const child = operator;
    operator = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const closed = new Promise<void>((r) => child.once('close', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await closed;
    clearTimeout(timer);
  };

  /** The project's webhooks pointed at this machine; the operator's flags for them. */
  const serveWebhooks = async (): Promise<string[] | undefined> => {
    if (!serving) {
      const certDir = await mkdtemp(join(tmpdir(), `kubeloop-dev-${basename(cwd).replace(/[^A-Za-z0-9._-]/g, '_')}-`));
      const ca = createCertificateAuthority({ commonName: `kubeloop dev ${basename(cwd)}` });
      serving = { port: await freePort(), certDir, ca: { certPem: ca.certPem, keyPem: ca.keyPem }, conversionCrds: [] };
    }
    const manifests = await manifestsFile();
    const configurations = existsSync(manifests) ? [manifests] : [];
    const conversionCrds = await webhookConversionCrds(crdDir);
    const before = serving.installed;
    // A configuration or conversion no longer wanted goes first (rare: a webhook taken out); the others are replaced in place.
    const next = new Set((configurations.length > 0 ? await configurationNames(manifests) : []).map((c) => `${c.kind}/${c.name}`));
    if (before && (before.configurations.some((c) => !next.has(`${c.kind}/${c.name}`)) || serving.conversionCrds.some((n) => !conversionCrds.includes(n)))) {
      await before.uninstall();
    }
    serving.installed = await envtest.installWebhooks(env.kubeConfig, {
      configurations,
      conversionCRDs: conversionCrds,
      localServingPort: serving.port,
      localServingCertDir: serving.certDir,
      localServingCA: serving.ca,
    });
    serving.conversionCrds = conversionCrds;
    const what = [...serving.installed.configurations.map((c) => c.name), ...conversionCrds.map((n) => `the conversion of ${n}`)];
    if (configurations.length === 0) log(`${relative(cwd, manifests)} is not written yet: run \`pnpm generate\`; until then the API server calls no admission webhook`);
    log(`webhooks: ${what.length > 0 ? what.join(', ') : 'nothing yet'} pointed at https://127.0.0.1:${serving.port} (certificate in ${serving.certDir})`);
    return ['--webhook-cert-dir', serving.certDir, '--webhook-port', String(serving.port)];
  };

  /** Logs once the operator's webhook server answers TLS with the session's certificate. */
  const announceWhenServing = (child: ChildProcess, local: LocalServing): void => {
    const deadline = Date.now() + 120_000;
    const attempt = (): void => {
      if (operator !== child || signal.aborted || Date.now() > deadline) return;
      const socket = connect({ host: '127.0.0.1', port: local.port, ca: local.ca.certPem, timeout: 2000 });
      const retry = (): void => {
        socket.destroy();
        setTimeout(attempt, 250).unref();
      };
      socket.once('secureConnect', () => {
        socket.destroy();
        if (operator === child) log(`webhooks answer at https://127.0.0.1:${local.port}`);
      });
      socket.once('error', retry);
      socket.once('timeout', retry);
    };
    attempt();
  };

  const startOperator = async (): Promise<void> => {
    await stopOperator();
    if (signal.aborted) return;
    watched = await signature();
    if (existsSync(crdDir)) {
      const missing = await missingCrdFiles(crdDir);
      if (missing.length > 0) {
        log(`${relative(cwd, join(crdDir, 'kustomization.yaml'))} lists ${missing.join(', ')}, not written yet: run \`pnpm generate\`; the CRDs are installed and the operator started once it is`);
        return;
      }
      try {
        await env.installCRDs([crdDir]);
        heldCrd = undefined;
      } catch (err) {
        const text = err instanceof Error ? err.message : String(err);
        if (envtest.isEnvtestError(err) && err.reason === 'CRDTerminating') {
          // Held by objects whose finalizers nobody removes yet: said once (again when it changes), tried again until it is gone.
          if (text !== heldCrd) log(`CRDs in ${relative(cwd, crdDir) || crdDir} not installed: ${text}. The loop tries again every ${RETRY_TERMINATING_MS / 1000} s and starts the operator once it is installed`);
          heldCrd = text;
          retryAt = Date.now() + RETRY_TERMINATING_MS;
          return;
        }
        log(`CRDs in ${crdDir} not installed: ${text}`);
        return;
      }
    }
    const config = await readConfig(cwd).catch(() => undefined);
    const hasWebhooks = config?.webhooks !== undefined || existsSync(join(cwd, 'config', 'webhook'));
    let webhookArgs: string[] = [];
    if (hasWebhooks && !userServesWebhooks) {
      if (canServeWebhooks) {
        try {
          webhookArgs = (await serveWebhooks()) ?? [];
        } catch (err) {
          log(`webhooks not installed: ${err instanceof Error ? err.message : String(err)}`);
          return;
        }
      } else {
        webhookArgs = ['--no-webhooks'];
        if (!toldNoWebhooks) {
          toldNoWebhooks = true;
          log(
            options.webhooks === false
              ? 'webhooks not served (webhooks: false): the operator runs with --no-webhooks'
              : `the API server at ${server} is not on this machine and cannot call webhooks served here: the operator runs with --no-webhooks (nothing is admitted or converted by them). ` +
                  'To run them: kubeloop dev --envtest (a local control plane), or deploy the operator to the cluster (pnpm run deploy)',
          );
        }
      }
    }
    const main = options.main ?? 'dist/main.js';
    const args = [main, '--kubeconfig', kubeconfig, ...webhookArgs, ...userArgs];
    log(`starting node ${args.join(' ')}`);
    const output = options.operatorOutput;
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', output ? 'pipe' : 'inherit', output ? 'pipe' : 'inherit'] });
    child.stdout?.on('data', (d: Buffer) => output?.(d.toString()));
    child.stderr?.on('data', (d: Buffer) => output?.(d.toString()));
    child.once('exit', (code, sig) => {
      if (operator === child) log(`the operator exited (${sig ?? `code ${code}`}); fix and save to start it again`);
    });
    operator = child;
    if (webhookArgs[0] === '--webhook-cert-dir' && serving) announceWhenServing(child, serving);
  };

  // What `pnpm generate` writes while the loop runs: once it has changed and then held still for a
  // check (a generate writes several files), the CRDs and webhooks are installed again and the
  // operator restarted. A failed build is not restarted from here: tsc's next clean build is.
  let lastBuildClean = false;
  let pending: string | undefined;
  const watcher = setInterval(() => {
    void (async () => {
      if (retryAt !== undefined && Date.now() >= retryAt && lastBuildClean) {
        retryAt = undefined;
        restarts = restarts.then(startOperator);
      }
      const now = await signature();
      if (now === watched) {
        pending = undefined;
        return;
      }
      if (pending !== now) {
        pending = now;
        return;
      }
      pending = undefined;
      watched = now;
      if (!lastBuildClean) return;
      log('config/crd or the webhook manifests changed: installing them and restarting the operator');
      restarts = restarts.then(startOperator);
    })().catch((err: unknown) => log(`watching ${crdDir}: ${err instanceof Error ? err.message : String(err)}`));
  }, options.watchIntervalMs ?? 1000);
  watcher.unref();

  try {
    const tsc = options.tsc ?? (existsSync(join(cwd, 'node_modules', '.bin', 'tsc')) ? join(cwd, 'node_modules', '.bin', 'tsc') : 'tsc');
    compiler = spawn(tsc, ['-p', 'tsconfig.json', '--watch', '--preserveWatchOutput'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const started = new Promise<void>((resolveStart, reject) => {
      compiler!.once('spawn', () => resolveStart());
      compiler!.once('error', (cause) => reject(new CliError('CommandFailed', `cannot run ${tsc}: ${cause.message}`, { cause })));
    });
    await started;
    let partial = '';
    const onOutput = (d: Buffer): void => {
      partial += d.toString();
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        log(`tsc: ${line}`);
        // "10:00:00 AM - Found 0 errors. Watching for file changes."
        const done = /Found (\d+) errors?\. Watching for file changes/.exec(line);
        if (done) {
          lastBuildClean = done[1] === '0';
          restarts = restarts.then(lastBuildClean ? startOperator : () => log('not restarting: the build has errors'));
        }
      }
    };
    compiler.stdout?.on('data', onOutput);
    compiler.stderr?.on('data', onOutput);
    const compilerExited = new Promise<void>((r) => compiler!.once('close', () => r()));
    const aborted = new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r(), { once: true })));
    await Promise.race([aborted, compilerExited]);
    if (!signal.aborted) log('tsc --watch exited; stopping');
  } finally {
    clearInterval(watcher);
    compiler?.kill('SIGTERM');
    await restarts.catch(() => undefined);
    await stopOperator();
    if (serving) {
      try {
        await serving.installed?.uninstall();
        // uninstall() leaves the CRDs with no conversion: on a cluster that outlives the loop, put them back as their files say.
        if (!local && serving.installed && serving.conversionCrds.length > 0) await env.installCRDs([crdDir]);
        if (serving.installed) log(`webhooks removed: ${[...serving.installed.configurations.map((c) => c.name), ...serving.conversionCrds.map((n) => `the conversion of ${n}`)].join(', ') || 'nothing was installed'}`);
      } catch (err) {
        log(`removing the webhooks failed: ${err instanceof Error ? err.message : String(err)}; delete them with kubectl delete -f config/webhook/manifests.yaml`);
      }
      await rm(serving.certDir, { recursive: true, force: true });
    }
    await env.stop();
    log('stopped');
  }
}

/** The configurations a manifests file holds, by kind and name. */
async function configurationNames(file: string): Promise<{ kind: string; name: string }[]> {
  const text = await readFile(file, 'utf8');
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as { kind?: unknown; metadata?: { name?: unknown } } | null)
    .filter((d) => (d?.kind === 'ValidatingWebhookConfiguration' || d?.kind === 'MutatingWebhookConfiguration') && typeof d.metadata?.name === 'string')
    .map((d) => ({ kind: d!.kind as string, name: d!.metadata!.name as string }));
}

function signalOnce(): AbortSignal {
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller.signal;
}
