/**
 * The README's main job, as built by tsc (decorators with emitted metadata:
 * the StorageClassCatalog dependency is resolved by its type): it installs
 * the CRD on the configured cluster, runs the operator, applies the sample,
 * logs the status turning Bound, and stops cleanly on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testKubeconfigPath } from '../../../test/support/env.js';

const main = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'main.js');

describe('harddisk-operator main', () => {
  it('reconciles the sample to Bound and exits 0 on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [main, '--kubeconfig', testKubeconfigPath(), '--replicas', '2', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBELOOP_LOG_LEVEL: 'info' } },
    );
    const lines: Record<string, unknown>[] = [];
    let buffer = '';
    const bound = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        buffer += d.toString();
        const parts = buffer.split('\n');
        buffer = parts.pop() ?? '';
        for (const p of parts) {
          try {
            const line = JSON.parse(p) as Record<string, unknown>;
            lines.push(line);
            if (line['msg'] === 'sample-disk status' && line['phase'] === 'Bound') resolve();
          } catch {
            /* not JSON */
          }
        }
      });
      child.once('exit', (code) => reject(new Error(`exited ${code} early:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`)));
    });
    await bound;
    // Two replicas, one leader: exactly one of them reconciled.
    const reconcilers = new Set(lines.filter((l) => l['controller'] === 'harddisk' && l['reconcileID']).map((l) => l['replica']));
    expect(reconcilers.size).toBe(1);
    expect(lines.some((l) => l['msg'] === 'became leader; starting leader-only runnables')).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(lines.at(-1)?.['msg']).toBe('operator stopped');
  });
});
