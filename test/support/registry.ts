/**
 * What the registry walk's two files share (test/e2e/registry.test.ts: a
 * project made from the published packages, built, tested, run and deployed;
 * test/e2e/registry-docs.test.ts: every command of the walkthrough docs as
 * written): the registry registry-setup.ts starts and publishes every public
 * package to once per run, a user's shell environment pointed at it, child
 * processes with their output kept, and step times.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';

export const MINUTE = 60_000;

/** The run's registry (registry-setup.ts), as test files get it. */
export interface E2eRegistry {
  /** The registry's URL, ending in `/`. */
  readonly url: string;
  /** An npmrc pointing at it with a publishing user's token. */
  readonly npmrc: string;
  /** Where each public package's tarball is, once published. */
  readonly tarballs: string;
  /** Written when every package is published (JSON: {@link Published}), or `failed` beside it with why not. */
  readonly status: string;
}

/** What registry-setup.ts leaves in the status file. */
export interface Published {
  readonly packages: readonly { readonly dir: string; readonly name: string; readonly version: string; readonly tarball: string; readonly packOutput: string }[];
  readonly steps: readonly Step[];
}

/** One step's wall time. */
export interface Step {
  readonly step: string;
  readonly ms: number;
  /** A step on the path from an empty directory to a reconciling operator with a webhook (summed at the end). */
  readonly path?: true;
}

/** A step timer: `timed(step, fn)` runs `fn` and records how long it took in `steps`. */
export function stepTimer(): { steps: Step[]; timed: <T>(step: string, fn: () => Promise<T>, path?: boolean) => Promise<T> } {
  const steps: Step[] = [];
  const timed = async <T>(step: string, fn: () => Promise<T>, path = false): Promise<T> => {
    const started = performance.now();
    try {
      return await fn();
    } finally {
      steps.push({ step, ms: Math.round(performance.now() - started), ...(path ? { path: true as const } : {}) });
    }
  };
  return { steps, timed };
}

/** Prints `steps` and writes them to `.tmp/<file>` under `root`. */
export function reportSteps(root: string, file: string, title: string, steps: readonly Step[]): void {
  const lines = steps.map((s) => `  ${s.step.padEnd(58)} ${(s.ms / 1000).toFixed(1).padStart(7)} s`);
  const total = steps.reduce((sum, s) => sum + s.ms, 0);
  // Machine time from an empty directory to an operator reconciling with its webhook: the steps marked
  // path (create, install, create api, generate types, create webhook, generate, which builds, run), not the
  // checks the tests add between them (generate:check, typecheck, lint, tests, the earlier runs).
  const path = steps.filter((s) => s.path);
  const pathMs = path.reduce((sum, s) => sum + s.ms, 0);
  process.stdout.write(
    `\n[${title}] step times:\n${lines.join('\n')}\n  ${'total'.padEnd(58)} ${(total / 1000).toFixed(1).padStart(7)} s\n` +
      (path.length > 0 ? `  ${'empty directory -> reconciling operator with a webhook'.padEnd(58)} ${(pathMs / 1000).toFixed(1).padStart(7)} s (${path.length} steps: ${path.map((s) => s.step).join('; ')})\n` : ''),
  );
  mkdirSync(join(root, '.tmp'), { recursive: true });
  writeFileSync(join(root, '.tmp', file), `${JSON.stringify({ steps, totalMs: total, ...(path.length > 0 ? { emptyDirectoryToWebhookOperatorMs: pathMs } : {}) }, null, 2)}\n`);
}

export interface RunResult {
  readonly code: number | null;
  readonly output: string;
}

/** Runs a command; resolves with its exit code and combined output (the tail of which goes into failures). */
export function run(cmd: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-200_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} timed out after ${options.timeoutMs} ms; output:\n${output.slice(-4000)}`));
    }, options.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** {@link run}, rejecting unless the command exits 0; resolves with its output. */
export async function ok(cmd: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<string> {
  const result = await run(cmd, args, options);
  if (result.code !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${options.cwd}) exited ${result.code}:\n${result.output.slice(-6000)}`);
  return result.output;
}

/** The environment of a user's shell: none of this vitest run's or pnpm's own variables. */
export function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|VITEST|TEST$|NODE_ENV$|NODE_OPTIONS$|KUBECONFIG$)/i.test(key)) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

/** The public packages of the workspace at `root`: what a registry serves. */
export function publicPackages(root: string): { dir: string; manifest: { name: string; version: string; private?: boolean } }[] {
  return readdirSync(join(root, 'packages'))
    .sort()
    .filter((d) => existsSync(join(root, 'packages', d, 'package.json')))
    .map((d) => ({ dir: join(root, 'packages', d), manifest: JSON.parse(readFileSync(join(root, 'packages', d, 'package.json'), 'utf8')) as { name: string; version: string; private?: boolean } }))
    .filter((p) => !p.manifest.private);
}

/**
 * The run's registry once every public package is published to it (waits for
 * registry-setup.ts, which packs and publishes beside the first test files);
 * rejects with the setup's error when it failed.
 */
export async function publishedRegistry(timeoutMs = 20 * MINUTE): Promise<E2eRegistry & Published> {
  const registry = inject('e2eRegistry');
  if (registry === null) throw new Error('no registry in this run: KUBELOOP_E2E_REGISTRY=1 starts one (test/support/registry-setup.ts)');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (existsSync(registry.status)) return { ...registry, ...(JSON.parse(readFileSync(registry.status, 'utf8')) as Published) };
    if (existsSync(`${registry.status}.failed`)) throw new Error(`publishing to the run's registry failed (test/support/registry-setup.ts):\n${readFileSync(`${registry.status}.failed`, 'utf8')}`);
    if (Date.now() > deadline) throw new Error(`the run's registry had not published every package after ${timeoutMs / MINUTE} minutes`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
