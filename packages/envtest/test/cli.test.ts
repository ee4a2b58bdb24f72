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
  it('runs a control plane with the feature gates asked for, that kubectl can reach, until SIGINT', async () => {
    // As docs tell users: kubeloop-envtest start --feature-gates ShardedListAndWatch=true
    const child = spawn(process.execPath, [cli, 'start', '--feature-gates', 'ShardedListAndWatch=true'], { stdio: ['ignore', 'pipe', 'pipe'] });
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
    expect(out).toContain('(feature gates ShardedListAndWatch=true)');
    const metrics = await promisify(execFile)('kubectl', ['--kubeconfig', kubeconfig, 'get', '--raw', '/metrics'], { maxBuffer: 64 << 20 });
    expect(metrics.stdout).toMatch(/^kubernetes_feature_enabled\{name="ShardedListAndWatch",stage="[A-Z]+"\} 1$/m);

    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(existsSync(kubeconfig)).toBe(false);
  });

  it('refuses a malformed feature gate, saying what it expects', async () => {
    const result = await promisify(execFile)(process.execPath, [cli, 'start', '--feature-gates', 'ShardedListAndWatch=yes']).catch((e: { code: number; stderr: string }) => e);
    expect(result).toMatchObject({ code: 1 });
    expect((result as { stderr: string }).stderr).toContain('envtest: InvalidOptions: feature gate "ShardedListAndWatch=yes" is not Name=true or Name=false');
  });

  it('rejects an unknown command', async () => {
    const result = await promisify(execFile)(process.execPath, [cli, 'frobnicate']).catch((e: { code: number; stderr: string }) => e);
    expect(result).toMatchObject({ code: 2 });
    expect((result as { stderr: string }).stderr).toContain('unknown command frobnicate');
  });
});
