/**
 * No orphaned control planes: a test process that dies without stopping its
 * environment must not leave etcd and kube-apiserver running.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defaultCacheDir } from '../src/binaries.js';
import { sweepStale } from '../src/internal/reaper.js';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return check();
}

interface Started {
  child: ReturnType<typeof spawn>;
  dir: string;
  pgids: number[];
  watchdog: number;
}

/** Start a control plane in a child Node process and report what it runs. */
async function startInChild(cacheDir: string): Promise<Started> {
  const script = `
    import { createEnvironment } from ${JSON.stringify(dist)};
    import { readFileSync, readdirSync } from 'node:fs';
    const env = createEnvironment({ binaries: { cacheDir: ${JSON.stringify(cacheDir)} } });
    await env.start();
    const runDir = ${JSON.stringify(join(cacheDir, 'run'))};
    const record = readdirSync(runDir).map((f) => JSON.parse(readFileSync(runDir + '/' + f, 'utf8'))).find((r) => r.dir === env.dir);
    console.log(JSON.stringify({ dir: env.dir, pgids: record.pgids, watchdog: record.watchdogPid }));
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('\n')) resolve(buf.split('\n')[0] ?? '');
    });
    child.once('exit', (code) => reject(new Error(`child exited ${code} before starting`)));
  });
  const parsed = JSON.parse(line) as { dir: string; pgids: number[]; watchdog: number };
  return { child, ...parsed };
}

/** A cache dir that shares the real binaries (through KUBEBUILDER-style assets) but has its own run records. */
async function isolatedCacheDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kubeloop-reaper-'));
  const { resolveBinaries } = await import('../src/binaries.js');
  const bins = await resolveBinaries({ cacheDir: defaultCacheDir() });
  const { symlink, mkdir } = await import('node:fs/promises');
  for (const [sub, file, target] of [
    [`kubernetes-${bins.kubernetesVersion}`, 'kube-apiserver', bins.kubeApiserver],
    [`etcd-${bins.etcdVersion}`, 'etcd', bins.etcd],
    [`etcd-${bins.etcdVersion}`, 'etcdctl', bins.etcdctl ?? bins.etcd],
  ] as const) {
    await mkdir(join(dir, sub), { recursive: true });
    await symlink(target, join(dir, sub, file));
  }
  return dir;
}

describe('orphan protection', () => {
  it('the watchdog stops the control plane soon after its owner is killed', async () => {
    const started = await startInChild(await isolatedCacheDir());
    expect(started.pgids.every(alive)).toBe(true);
    started.child.kill('SIGKILL');
    expect(await until(() => !started.pgids.some(alive), 15_000)).toBe(true);
    expect(await until(() => !existsSync(started.dir), 5_000)).toBe(true);
  });

  it('the next start sweeps what a dead owner left when the watchdog died too', async () => {
    const cacheDir = await isolatedCacheDir();
    const started = await startInChild(cacheDir);
    process.kill(started.watchdog, 'SIGKILL');
    started.child.kill('SIGKILL');
    await until(() => !alive(started.child.pid ?? 0), 5000);
    // Nothing else is watching: the processes are still up.
    expect(started.pgids.every(alive)).toBe(true);
    expect(await sweepStale(join(cacheDir, 'run'))).toBe(1);
    expect(await until(() => !started.pgids.some(alive), 5_000)).toBe(true);
    expect(existsSync(started.dir)).toBe(false);
    // A live owner's record is left alone.
    expect(await sweepStale(join(cacheDir, 'run'))).toBe(0);
  });
});
