/**
 * The process, not only `start()`, ends within the graceful bound after
 * SIGTERM: the README's main loop (`await manager.start(signalHandler())`,
 * no `process.exit`) in a process of its own, whose reconcile returns when
 * its signal aborts but leaves a one-minute timer behind (start() then
 * resolves at once, and before, the process lived another minute); a second
 * signal ends it at once.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testKubeconfigPath } from '../../../test/support/env.js';
import { newNamespace, testClient } from './support.js';

const GRACEFUL_MS = 2000;

/** The README's main, with a reconcile whose timer outlives it; prints `reconciling` once it holds the process. */
function startOperator(ns: string): { exited: Promise<{ code: number | null; at: number }>; reconciling: Promise<void>; kill: (signal: NodeJS.Signals) => void } {
  const manager = fileURLToPath(new URL('../dist/index.js', import.meta.url));
  const script = `
    const { createLogger, createManager, Result, signalHandler } = await import(${JSON.stringify(manager)});
    const { loadKubeConfig } = await import('@kubeloop/client');
    const [kubeconfig, ns, graceful] = process.argv.slice(1);
    const manager = createManager({ kubeConfig: loadKubeConfig({ path: kubeconfig }), namespaces: [ns], logger: createLogger({ level: 'silent' }), gracefulShutdownTimeoutMs: Number(graceful) });
    manager.controller().for({ apiVersion: 'v1', kind: 'ConfigMap' }).complete(async (req, ctx) => {
      console.log('reconciling');
      // Returns when its signal aborts, but the one-minute timer stays behind.
      await new Promise((resolve) => { setTimeout(resolve, 60_000); ctx.signal.addEventListener('abort', resolve, { once: true }); });
      return Result.done();
    });
    await manager.start(signalHandler());
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, testKubeconfigPath(), ns, String(GRACEFUL_MS)], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: Date.now() })));
  const reconciling = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'reconciling') resolve();
    });
    void exited.then(({ code }) => reject(new Error(`the operator exited (${String(code)}) before reconciling`)));
  });
  return { exited, reconciling, kill: (signal) => child.kill(signal) };
}

describe('signalHandler()', () => {
  it('one SIGTERM: the process ends within gracefulShutdownTimeoutMs even though a timer a reconcile left holds it; a second ends it at once', async () => {
    const client = testClient();
    const ns = await newNamespace(client, 'sigterm');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'held', namespace: ns } });
    try {
      const once = startOperator(ns);
      await once.reconciling;
      const termAt = Date.now();
      once.kill('SIGTERM');
      const first = await once.exited;
      const afterOne = first.at - termAt;

      const twice = startOperator(ns);
      await twice.reconciling;
      const secondAt = Date.now();
      twice.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 200));
      const secondTermAt = Date.now();
      twice.kill('SIGTERM');
      const second = await twice.exited;
      process.stderr.write(
        `[signals] exit ${afterOne} ms after SIGTERM (gracefulShutdownTimeoutMs ${GRACEFUL_MS}, a 60 s timer left behind, status ${String(first.code)}); second SIGTERM: exit ${second.at - secondTermAt} ms after it (${second.at - secondAt} ms after the first), status ${String(second.code)}\n`,
      );
      // Bounded by the graceful timeout (plus the time to start a process's exit), not by the 60 s sleep.
      expect(afterOne).toBeLessThan(GRACEFUL_MS + 3_000);
      expect(first.code).not.toBe(0);
      expect(second.at - secondTermAt).toBeLessThan(GRACEFUL_MS);
      expect(second.code).toBe(1);
    } finally {
      client.transport.close();
    }
  });
});
