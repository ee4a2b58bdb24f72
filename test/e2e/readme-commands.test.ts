/**
 * The README's quick start as a user runs it, from this checkout: `bash
 * scripts/dev.sh` with no cluster configured (it starts a local control
 * plane, installs the CRD, runs the example operator and applies the
 * sample), then, from "another shell", the README's next block exactly as
 * written, with the kubeconfig path the main job logged in place of the
 * README's `XXXX`. Slow-ish (a control plane of its own), so it runs with
 * the registry e2e (KUBELOOP_E2E_REGISTRY=1, which scripts/test.sh sets).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandsOf } from '../support/doc-commands.js';

const root = join(import.meta.dirname, '..', '..');
const enabled = process.env['KUBELOOP_E2E_REGISTRY'] === '1';
const MINUTE = 60_000;

/** A user's shell: none of this run's own variables, and no cluster configured. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|VITEST|TEST$|NODE_ENV$|NODE_OPTIONS$|KUBECONFIG$)/i.test(key)) continue;
    env[key] = value;
  }
  return env;
}

describe.skipIf(!enabled)('the README quick start (KUBELOOP_E2E_REGISTRY=1)', () => {
  const readme = commandsOf('README.md', readFileSync(join(root, 'README.md'), 'utf8'));
  let devSh: ReturnType<typeof spawn> | undefined;

  afterAll(async () => {
    if (!devSh || devSh.exitCode !== null) return;
    const closed = new Promise((r) => devSh!.once('close', r));
    process.kill(-devSh.pid!, 'SIGTERM');
    await closed;
  });

  it('bash scripts/dev.sh runs the example on a local control plane; the next block, from another shell, sees it', async () => {
    const start = readme.find((c) => c.text === 'bash scripts/dev.sh');
    expect(start, 'the README runs bash scripts/dev.sh').toBeDefined();
    devSh = spawn('bash', ['-c', start!.text], { cwd: root, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    devSh.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    devSh.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 5 * MINUTE;
    let kubeconfig: string | undefined;
    const bound = (): boolean => output.split('\n').some((l) => l.includes('"msg":"sample-disk status"') && l.includes('"phase":"Bound"'));
    while (!kubeconfig || !bound()) {
      kubeconfig ??= /"kubeconfig":"([^"]+)"/.exec(output)?.[1];
      if (devSh.exitCode !== null) throw new Error(`bash scripts/dev.sh exited ${devSh.exitCode}:\n${output.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`bash scripts/dev.sh did not reconcile the sample within 5 minutes:\n${output.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    // The block that starts with the export, as one shell session (the export holds for what follows).
    const exportLine = readme.find((c) => c.text.startsWith('export KUBECONFIG='));
    expect(exportLine, 'the README exports the logged kubeconfig').toBeDefined();
    const block = readme.filter((c) => c.block === exportLine!.block);
    const script = ['set -e', ...block.map((c) => c.text.replace('/tmp/kubeloop-envtest-XXXX/kubeconfig', kubeconfig))].join('\n');
    const shell = spawn('bash', ['-c', script], { cwd: root, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    shell.stdout.on('data', (d: Buffer) => (out += d.toString()));
    shell.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise((r) => shell.once('close', r));
    expect(code, `${script}\n---\n${out}`).toBe(0);
    expect(out).toMatch(/^default\s+Active/m); // kubectl get namespaces
    expect(out).toMatch(/sample-disk/); // kubectl get harddisks,configmaps
    expect(out).toMatch(/controller_runtime_reconcile_total\{controller="harddisk"/); // curl | grep
    expect(out).toContain('readyz check passed'); // curl readyz?verbose
  }, 8 * MINUTE);
});
