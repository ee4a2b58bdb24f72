/**
 * The foreground command: it prints a kubeconfig that kubectl can use, and
 * Ctrl-C (SIGINT) stops the control plane cleanly.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const cli = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

describe('kubeloop-envtest start', () => {
  it('runs a control plane that kubectl can reach, until SIGINT', async () => {
    const child = spawn(process.execPath, [cli, 'start'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Press Ctrl-C')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const kubeconfig = /^kubeconfig: (.+)$/m.exec(out)?.[1] ?? '';
    expect(out).toMatch(/export KUBECONFIG=/);
    expect(existsSync(kubeconfig)).toBe(true);

    const { stdout } = await promisify(execFile)('kubectl', ['--kubeconfig', kubeconfig, 'get', 'namespaces', '-o', 'name']);
    expect(stdout.split('\n')).toContain('namespace/default');

    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(existsSync(kubeconfig)).toBe(false);
  });

  it('rejects an unknown command', async () => {
    const result = await promisify(execFile)(process.execPath, [cli, 'frobnicate']).catch((e: { code: number; stderr: string }) => e);
    expect(result).toMatchObject({ code: 2 });
    expect((result as { stderr: string }).stderr).toContain('unknown command frobnicate');
  });
});
