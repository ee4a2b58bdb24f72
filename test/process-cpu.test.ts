/**
 * scripts/process-cpu.mjs, which scripts/test.sh runs beside the suite to say
 * where a run's CPU went: a process it sees is counted under its kind, by its
 * command line and working directory, and stopping the sampler keeps what it saw.
 */
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const script = join(import.meta.dirname, '..', 'scripts', 'process-cpu.mjs');
const dir = mkdtempSync(join(tmpdir(), 'process-cpu-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const exited = (child: ReturnType<typeof spawn>): Promise<number | null> => new Promise((resolve) => child.once('exit', (code) => resolve(code)));

describe.skipIf(process.platform !== 'linux')('process-cpu (scripts/test.sh\'s CPU by kind of process)', () => {
  it('counts a process that lives through a sample under its kind (what it execs into), with the CPU it used, and saves on SIGTERM', async () => {
    const out = join(dir, 'samples.json');
    const sampler = spawn(process.execPath, [script, 'sample', out], { stdio: 'ignore' });
    // A shell that, after a sample has seen it, execs (same pid) into a process named like an API server (its first
    // argument is a path ending in /kube-apiserver), as a node_modules/.bin shim does: busy until it has used 1 CPU-s
    // (however long a loaded machine takes to give it that), then alive for 3 s more, so a sample taken every 2 s sees
    // it after its busy part.
    const busyLoop = 'const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; }; while (cpu() < 1); setTimeout(() => {}, 3000);';
    // (the name comes from the environment, so the shell's own command line does not carry it)
    const busy = spawn('/bin/sh', ['-c', 'sleep 2.5; exec "$0" -e "$1" "$NAME" --etcd-servers=x', process.execPath, busyLoop], { cwd: dir, stdio: 'ignore', env: { ...process.env, NAME: '/opt/fake/kube-apiserver' } });
    expect(await exited(busy)).toBe(0);
    sampler.kill('SIGTERM');
    expect(await exited(sampler)).toBe(0);

    const rows = JSON.parse(readFileSync(out, 'utf8')) as { args: string; cwd: string; cpuSeconds: number }[];
    const seen = rows.find((r) => r.args.includes('/opt/fake/kube-apiserver'));
    expect(seen, JSON.stringify(rows.slice(0, 5))).toBeDefined();
    expect(seen!.cwd).toBe(dir);
    // the 1 CPU-s of its busy loop (and its start), never more than the time it lived
    expect(seen!.cpuSeconds).toBeGreaterThanOrEqual(0.7);
    expect(seen!.cpuSeconds).toBeLessThan(6);

    // the summary of that process alone (others of its kind run beside this test)
    const only = join(dir, 'only.json');
    writeFileSync(only, JSON.stringify([seen]));
    const { stdout } = await run(process.execPath, [script, 'summary', only]);
    expect(stdout).toMatch(/^process-cpu: the run's CPU by kind of process \(\d+ CPU-s seen; processes living 2 s or more\):/);
    expect(stdout).toMatch(/\n\s+\d+ CPU-s\s+1 processes \(the costliest \d+\.\d\)\s+kube-apiserver\n$/);
  });

  it('says so when it saw nothing, and an unknown command is a usage error', async () => {
    const missing = await run(process.execPath, [script, 'summary', join(dir, 'missing.json')]);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain(`process-cpu: no samples in ${join(dir, 'missing.json')}`);
    const usage = await run(process.execPath, [script, 'frobnicate']).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(usage?.code).toBe(2);
    expect(usage?.stderr).toContain('usage: node scripts/process-cpu.mjs sample|summary <file.json>');
  });
});
