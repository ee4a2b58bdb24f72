/**
 * docs/troubleshooting.md, run exactly as written: every command of it, in
 * order (sh -c, `kubeloop` on PATH the built bin, `kubectl` the real one,
 * KUBECONFIG a control plane of this test's own), against a manager serving
 * what a deployed operator serves (secure metrics with its self-signed
 * certificate on 127.0.0.1:8443, where the doc's port-forward would put
 * it). The manager's `harddisk` controller has the doc's three objects: one
 * whose reconcile fails, one paused by its annotation, one that writes a
 * fresh `lastTransitionTime` every time (and so re-triggers itself); the
 * controller itself is paused. Each command's output must show what the
 * doc says it shows.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, loadKubeConfig, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, installCRDs } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { createLogger, createManager, Result } from '@kubeloop/manager';
import type { Manager } from '@kubeloop/manager';
import { documentedCommands, NOT_IN_WALKTHROUGH } from '../../../test/support/doc-commands.js';
import { testCRD } from '../../../test/support/crds.js';
import { holdDocumentedPorts } from '../../../test/support/fixed-ports.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const HardDisk = { apiVersion: 'example.com/v1', kind: 'HardDisk' };
const STAMPS = 12;

async function eventually<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 60_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)?.slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function metric(manager: Manager, name: string, labels: Record<string, string>): Promise<number> {
  const values = (await manager.registry.getSingleMetric(name)?.get())?.values ?? [];
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

describe('docs/troubleshooting.md', () => {
  let env: Environment;
  let admin: Client;
  let manager: Manager;
  let stop: AbortController;
  let done: Promise<void>;
  let bin: string;
  let releasePorts: (() => Promise<void>) | undefined;
  const reconciled: string[] = [];
  let stamps = 0;

  beforeAll(async () => {
    const built = join(root, 'packages', 'cli', 'dist', 'bin.js');
    expect(existsSync(built), 'build first (pnpm build)').toBe(true);
    bin = mkdtempSync(join(tmpdir(), 'kubeloop-bin-'));
    writeFileSync(join(bin, 'kubeloop'), `#!/bin/sh\nexec "${process.execPath}" "${built}" "$@"\n`);
    chmodSync(join(bin, 'kubeloop'), 0o755);

    env = createEnvironment();
    await env.start();
    // The manager serves on 127.0.0.1:8443, where the doc's port-forward puts it: other files binding a documented
    // port take turns with this one (test/support/fixed-ports.ts).
    releasePorts = await holdDocumentedPorts('packages/cli/test/troubleshooting.test.ts');
    await installCRDs(env.kubeConfig, [testCRD('example.com', 'HardDisk', { status: true })]);
    admin = createClient({ kubeConfig: loadKubeConfig(env.kubeconfigPath), fieldOwner: 'troubleshooting-test' });
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'harddisk-system' } });

    manager = createManager({
      kubeConfig: loadKubeConfig(env.kubeconfigPath),
      logger: createLogger({ level: 'silent' }),
      fieldOwner: 'harddisk-operator',
      metricsBindAddress: '127.0.0.1:8443',
      secureMetrics: {},
    });
    manager
      .controller()
      .named('harddisk')
      .for(HardDisk)
      .complete(async (req) => {
        reconciled.push(req.name);
        if (req.name === 'disk-1') throw new Error('storage backend unavailable: dial tcp 10.0.0.7:443: connect: connection refused');
        if (req.name === 'disk-3' && stamps < STAMPS) {
          stamps++;
          // The classic loop: a Ready condition whose lastTransitionTime is set anew on every reconcile.
          const now = new Date(Date.now() + stamps * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
          await manager.client.status().patch({ ...HardDisk, metadata: { namespace: req.namespace!, name: req.name } }, mergePatch({ status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Provisioned', message: 'ready', lastTransitionTime: now }] } }));
        }
        return Result.done();
      });
    stop = new AbortController();
    done = manager.start(stop.signal);
    done.catch(() => undefined);
    await eventually(() => manager.controllers(), (cs) => cs.length === 1 && cs.every((c) => c.synced), 'the controller to sync');
    for (const name of ['disk-1', 'disk-2', 'disk-3']) {
      await admin.create({ ...HardDisk, metadata: { name, namespace: 'default', ...(name === 'disk-2' ? { annotations: { 'kubeloop.dev/paused': 'true' } } : {}) }, spec: {} });
    }
    await eventually(() => metric(manager, 'controller_runtime_reconcile_errors_total', { controller: 'harddisk' }), (n) => n >= 2, 'disk-1 failing twice');
    await eventually(() => metric(manager, 'kubeloop_reconcile_paused_total', { controller: 'harddisk' }), (n) => n >= 1, 'disk-2 skipped');
    await eventually(() => metric(manager, 'kubeloop_reconcile_self_triggered_total', { controller: 'harddisk' }), (n) => n === 1, 'disk-3 reported');
    await eventually(() => stamps, (n) => n === STAMPS, 'disk-3 done stamping');
    // Paused as a whole, as the doc's first table shows.
    await manager.pauseController('harddisk');
  }, 15 * 60_000); // with the wait for the documented ports

  afterAll(async () => {
    stop?.abort();
    await done?.catch(() => undefined);
    admin?.transport.close();
    await releasePorts?.();
    await env?.stop();
  });

  it('every command does what the doc says', async () => {
    const commands = documentedCommands(root).filter((c) => c.file === 'docs/troubleshooting.md');
    const texts = commands.map((c) => c.text);
    expect(texts.length).toBe(16);
    const sh = async (script: string): Promise<string> => {
      const { stdout } = await promisify(execFile)('sh', ['-c', script], { env: { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? ''}`, KUBECONFIG: env.kubeconfigPath }, maxBuffer: 16 * 1024 * 1024 });
      return stdout;
    };
    // The port-forward cannot run here (no pods); the manager listens where it would forward to.
    const forward = texts.find((t) => t.includes('port-forward'))!;
    expect(NOT_IN_WALKTHROUGH[forward]).toBeDefined();
    const setup = texts.filter((t) => t.startsWith('export '));
    expect(setup).toEqual(['export METRICS=https://127.0.0.1:8443', 'export TOKEN=$(kubectl -n harddisk-system create token inspector)']);
    // The commands that follow the exports run after them in one shell, as a person's terminal would.
    const run = (text: string): Promise<string> => (texts.indexOf(text) > texts.indexOf(setup[1]!) ? sh(`${setup.join('\n')}\n${text}`) : sh(text));
    const outputs = new Map<string, string>();
    for (const text of texts) {
      if (text === forward || setup.includes(text)) continue;
      outputs.set(text, await run(text));
      if (text.includes('--resume')) await eventually(() => reconciled, (r) => r.includes('disk-2'), 'disk-2 reconciled once its annotation is gone and the controller resumed');
    }
    const out = (start: string, contains?: string): string => {
      const key = [...outputs.keys()].find((t) => t.startsWith(start) && (contains === undefined || t.includes(contains)));
      expect(key, start).toBeDefined();
      return outputs.get(key!)!;
    };
    expect(out('kubeloop inspect "$METRICS" --token')).toMatch(/harddisk\s+paused\s+\d+\s+\S+\s+\S+\s+0\s+1\s+1/);
    const disk1 = out('kubeloop inspect "$METRICS" harddisk default/disk-1');
    expect(disk1).toContain('last error: storage backend unavailable: dial tcp 10.0.0.7:443: connect: connection refused');
    expect(disk1).toMatch(/error\s+storage backend unavailable.*for add HardDisk default\/disk-1 rv=\d+/);
    expect(disk1).toContain('controller error-backoff');
    expect(out('kubectl get harddisk disk-2')).toBe('{"kubeloop.dev/paused":"true"}');
    expect(out('kubectl annotate harddisk disk-2')).toContain('harddisk.example.com/disk-2 annotated');
    expect(out('kubeloop inspect "$METRICS" harddisk --resume')).toMatch(/harddisk\s+running/);
    const paused = out('curl', 'kubeloop_controller_paused');
    expect(paused).toContain('kubeloop_controller_paused{controller="harddisk"} 0');
    expect(paused).toMatch(/kubeloop_reconcile_paused_total\{controller="harddisk"\} [1-9]/);
    expect(paused).toMatch(/controller_runtime_reconcile_errors_total\{controller="harddisk"\} [1-9]/);
    expect(out('curl', 'kubeloop_reconcile_triggers_total')).toMatch(/kubeloop_reconcile_triggers_total\{controller="harddisk",source="for",event="update"\} \d+/);
    expect(out('kubectl get events')).toMatch(/Warning\s+SelfTriggering\s+harddisk\/disk-3\s+reconciled 3 times in a row by nothing but the controller's own writes/);
    const view = out('kubeloop inspect "$METRICS" harddisk --token');
    expect(view.slice(view.indexOf('suspected self-triggering'))).toMatch(/default\/disk-3\s+\d+/);
    expect(out('kubeloop inspect "$METRICS" harddisk default/disk-3')).toMatch(/for update HardDisk default\/disk-3 rv=\d+ own-write/);
  }, 15 * 60_000); // each command starts node; on a machine at load ~25 they took over five minutes together
});
