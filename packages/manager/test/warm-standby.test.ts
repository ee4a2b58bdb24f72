/**
 * A warm standby takes over from a killed leader: the leader is another
 * process (the built package), killed with SIGKILL, so its Lease is neither
 * renewed nor released; the standby, whose every request goes through
 * envtest's recording proxy, takes the Lease when it expires and reconciles
 * the change it saw while standing by first, without a single LIST or new
 * watch of the kind.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';
import { createLogger, createManager, Result } from '../src/index.js';
import { testKubeConfig, testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { eventually, newNamespace, readyz, testClient } from './support.js';

const TIMINGS = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 };

/** The leader: the built manager in a process of its own, printing `leading` once it leads. */
function startLeader(ns: string, lease: string): { child: ChildProcess; leading: Promise<void> } {
  const manager = fileURLToPath(new URL('../dist/index.js', import.meta.url));
  const script = `
    const { createLogger, createManager, Result } = await import(${JSON.stringify(manager)});
    const [kubeconfig, ns, lease, timings] = process.argv.slice(1);
    const { loadKubeConfig } = await import('@kubeloop/client');
    const m = createManager({ kubeConfig: loadKubeConfig({ path: kubeconfig }), namespaces: [ns], logger: createLogger({ level: 'silent' }),
      leaderElection: { name: lease, namespace: ns, identity: 'killed-leader', ...JSON.parse(timings) } });
    m.controller().for({ apiVersion: 'v1', kind: 'ConfigMap' }).complete(() => Result.done());
    const timer = setInterval(() => { if (m.isLeader()) { console.log('leading'); clearInterval(timer); } }, 20);
    await m.start();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, testKubeconfigPath(), ns, lease, JSON.stringify(TIMINGS)], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const leading = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'leading') resolve();
    });
    child.once('exit', (code) => reject(new Error(`the leader exited (${String(code)}) before leading`)));
  });
  return { child, leading };
}

let client: Client;
let ns: string;
let proxy: ApiProxy;

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'warm');
  proxy = await startApiProxy(testKubeConfig());
});
afterAll(async () => {
  await proxy.close();
  client.transport.close();
});

describe('a warm standby', () => {
  it('takes over from a killed leader and reconciles the change it saw while standing by first, without a LIST', async () => {
    const lease = uniqueName('lease');
    const leader = startLeader(ns, lease);
    try {
      await leader.leading;
      for (let i = 0; i < 20; i++) await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns }, data: { n: String(i) } });

      const standby = createManager({
        kubeConfig: proxy.kubeConfig,
        namespaces: [ns],
        logger: createLogger({ level: 'silent' }),
        healthProbeBindAddress: '127.0.0.1:0',
        leaderElection: { name: lease, namespace: ns, identity: 'standby', ...TIMINGS },
      });
      const reconciled: string[] = [];
      standby
        .controller()
        .for(ConfigMap)
        .complete((req) => {
          reconciled.push(req.name);
          return Result.done();
        });
      const stop = new AbortController();
      const running = standby.start(stop.signal);
      running.catch(() => undefined);
      await eventually(() => standby.controllers()[0], (c) => c?.warm === true && c.synced, 'the standby warm and synced');
      // The holder is named once the standby's elector has read the Lease: its first try can come after the caches sync.
      await eventually(async () => (await readyz(standby)).body, (body) => body.includes('[+]leader-election ok: warm standby (leader: killed-leader)'), 'readyz to name the leader');
      expect(reconciled).toEqual([]);

      // A change the standby sees while it stands by (its cache has it: no request), then the leader is killed.
      proxy.clearRequests();
      await client.patch(ConfigMap, { namespace: ns, name: 'cm-7' }, mergePatch({ data: { n: 'changed' } }));
      await eventually(async () => (await standby.client.get(ConfigMap, { namespace: ns, name: 'cm-7' })).data?.['n'], (n) => n === 'changed', 'the standby to see the change');
      const exited = new Promise((resolve) => leader.child.once('exit', resolve));
      leader.child.kill('SIGKILL');
      await exited;

      await eventually(() => reconciled, (r) => r.length > 0, 'the standby to take over and reconcile', 15_000);
      expect(standby.leadershipState()).toBe('leading');
      expect((await readyz(standby)).body).toContain('[+]leader-election ok: leading');
      // The change first (its key moved up in the queue), then the rest of what the standby holds.
      expect(reconciled[0]).toBe('cm-7');
      await eventually(() => new Set(reconciled).size, (n) => n >= 20, 'every ConfigMap reconciled');
      // No LIST, and no new watch either (a streamed initial list would be one): the watch opened while standing by serves on.
      expect(proxy.count((r) => r.path === `/api/v1/namespaces/${ns}/configmaps`)).toBe(0);
      // The proxy saw the takeover itself (the Lease), so it was recording.
      expect(proxy.count((r) => r.path.includes('/leases/'))).toBeGreaterThan(0);
      stop.abort();
      await running;
    } finally {
      leader.child.kill('SIGKILL');
    }
  });
});
