/**
 * `kubeloop dev`: the inner loop of an operator project, as kubebuilder's
 * `make install run` plus a watcher. It finds a cluster (the kubeconfig's,
 * or a local control plane from @kubeloop/envtest when none is configured),
 * installs the project's CRDs, runs `tsc --watch`, and after every
 * compilation without errors installs the CRDs again (`pnpm generate` may
 * have changed them) and restarts the operator (`node dist/main.js`), so a
 * saved file is running a few seconds later.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type * as Envtest from '@kubeloop/envtest';
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
  /** The CRD directory installed before each start. Default: `config/crd`; none when it does not exist. */
  readonly crdDir?: string;
  /** The built entry point. Default: `dist/main.js`. */
  readonly main?: string;
  /** Flags for the operator, after `--kubeconfig`. Default: none. */
  readonly args?: readonly string[];
  /** The TypeScript compiler. Default: the project's `node_modules/.bin/tsc`, else `tsc` on PATH. */
  readonly tsc?: string;
  /** Stops the loop: the operator and the compiler are stopped, a local control plane too. Default: SIGINT or SIGTERM. */
  readonly signal?: AbortSignal;
  /** Lines about what the loop does (not the operator's own output, which goes to this process's stdout and stderr). */
  readonly log?: (line: string) => void;
  /** Where the operator's output goes. Default: this process's stdout and stderr. */
  readonly operatorOutput?: (text: string) => void;
}

/** How long a stopping operator gets before SIGKILL: its graceful bound (30 s) and a margin. */
const STOP_GRACE_MS = 35_000;

function clusterConfigured(kubeconfig: string | undefined): boolean {
  if (kubeconfig) return true;
  const env = process.env['KUBECONFIG'];
  if (env) return env.split(':').some((p) => p !== '' && existsSync(p));
  return existsSync(join(homedir(), '.kube', 'config')) || Boolean(process.env['KUBERNETES_SERVICE_HOST']);
}

/**
 * Runs the loop until `signal` aborts (default: SIGINT or SIGTERM), then
 * stops everything it started.
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
  const crds = existsSync(crdDir) ? [crdDir] : [];

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

  let operator: ChildProcess | undefined;
  let compiler: ChildProcess | undefined;
  let restarts = Promise.resolve();
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
  const startOperator = async (): Promise<void> => {
    await stopOperator();
    if (signal.aborted) return;
    if (crds.length > 0) {
      try {
        await env.installCRDs(crds);
      } catch (err) {
        log(`CRDs in ${crdDir} not installed: ${err instanceof Error ? err.message : String(err)}`);
        return;
      }
    }
    const main = options.main ?? 'dist/main.js';
    const args = [main, '--kubeconfig', kubeconfig, ...(options.args ?? [])];
    log(`starting node ${args.join(' ')}`);
    const output = options.operatorOutput;
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', output ? 'pipe' : 'inherit', output ? 'pipe' : 'inherit'] });
    child.stdout?.on('data', (d: Buffer) => output?.(d.toString()));
    child.stderr?.on('data', (d: Buffer) => output?.(d.toString()));
    child.once('exit', (code, sig) => {
      if (operator === child) log(`the operator exited (${sig ?? `code ${code}`}); fix and save to start it again`);
    });
    operator = child;
  };

  try {
    const tsc = options.tsc ?? (existsSync(join(cwd, 'node_modules', '.bin', 'tsc')) ? join(cwd, 'node_modules', '.bin', 'tsc') : 'tsc');
    compiler = spawn(tsc, ['-p', 'tsconfig.json', '--watch', '--preserveWatchOutput'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const started = new Promise<void>((resolveStart, reject) => {
      compiler!.once('spawn', () => resolveStart());
      compiler!.once('error', (cause) => reject(new CliError('CommandFailed', `cannot run ${tsc}: ${cause.message}`, { cause })));
    });
    await started;
    let pending = '';
    const onOutput = (d: Buffer): void => {
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        log(`tsc: ${line}`);
        // "10:00:00 AM - Found 0 errors. Watching for file changes."
        const done = /Found (\d+) errors?\. Watching for file changes/.exec(line);
        if (done) restarts = restarts.then(done[1] === '0' ? startOperator : () => log('not restarting: the build has errors'));
      }
    };
    compiler.stdout?.on('data', onOutput);
    compiler.stderr?.on('data', onOutput);
    const compilerExited = new Promise<void>((r) => compiler!.once('close', () => r()));
    const aborted = new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r(), { once: true })));
    await Promise.race([aborted, compilerExited]);
    if (!signal.aborted) log('tsc --watch exited; stopping');
  } finally {
    compiler?.kill('SIGTERM');
    await restarts.catch(() => undefined);
    await stopOperator();
    await env.stop();
    log('stopped');
  }
}

function signalOnce(): AbortSignal {
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller.signal;
}
