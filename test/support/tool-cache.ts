/**
 * Go tools the tests build from the Go module proxy (helm, Jaeger), cached by
 * version under ~/.cache/kubeloop/<tool>/<version>/<tool>, built at most once
 * at a time on a machine: scripts/test.sh starts the builds in the background
 * before the checks (scripts/prebuild-test-tools.ts), and a test file that
 * needs a tool still being built waits for that build instead of starting a
 * second one (machine-lock.ts: a lock directory beside the cache holds the
 * builder's pid; a lock whose process is gone is taken over).
 */
import { spawn } from 'node:child_process';
import { access, constants, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { machineLock } from './machine-lock.ts';

/** Where `tool` at `version` is cached. */
export function toolCacheDir(tool: string, version: string): string {
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg && xdg.length > 0 ? xdg : join(homedir(), '.cache'), 'kubeloop', tool, version);
}

/** Run a command, collecting its output. */
export function runTool(cmd: string, args: readonly string[], options: { cwd?: string; env: NodeJS.ProcessEnv }): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...(options.cwd ? { cwd: options.cwd } : {}), env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

const usable = (p: string): Promise<boolean> => access(p, constants.X_OK).then(() => true, () => false);

/**
 * The cached binary `name` of `tool` at `version`, built by `build(workDir)`
 * (which leaves `workDir/name`) when absent. One build at a time per tool and
 * version on the machine: a caller that finds another process building waits
 * for it (polling every 2 s) and takes over if that process dies.
 */
export async function cachedTool(tool: string, version: string, name: string, build: (workDir: string) => Promise<void>): Promise<string> {
  const dir = toolCacheDir(tool, version);
  const binary = join(dir, name);
  if (await usable(binary)) return binary;
  const release = await machineLock(`${dir}.lock`, { pollMs: 2_000 });
  try {
    // Built by the holder this call waited for.
    if (await usable(binary)) return binary;
    const work = await mkdtemp(join(dir, '..', `.build-${version}-`));
    try {
      await build(work);
      await mkdir(dir, { recursive: true });
      await rename(join(work, name), binary);
      return binary;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  } finally {
    await release();
  }
}
