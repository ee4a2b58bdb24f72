/**
 * The kubeconfig-Secret provider on real control planes: each Secret's
 * events on a chain of their own (a member whose leave waits for a
 * reconcile stuck in a black hole does not hold up another's join), its
 * policy (a refused kubeconfig is one log line naming the Secret, key and
 * field; a policy that allows an exec plugin engages with it), and member
 * readiness that names a failure's class, never the body a member's server
 * answered.
 */
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeConfigFromText, mergePatch } from '@kubeloop/client';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { ConfigMap, Secret } from '@kubeloop/scheme';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createFleet, KUBECONFIG_SECRET_LABEL, kubeconfigSecretProvider } from '../../src/fleet/index.js';
import { isManagerError } from '../../src/index.js';
import { eventually, LogCapture, metric, newNamespace, readyz, run, testClient, testManager } from '../support.js';
import { copyIn, COPY_LABEL, memberClient, registerCopyController } from './support.js';

const planes = inject('existingCluster') ? undefined : { m1: createEnvironment(), m2: createEnvironment() };

beforeAll(async () => {
  await Promise.all(Object.values(planes ?? {}).map((env) => env.start()));
}, 240_000);
afterAll(async () => {
  await Promise.all(Object.values(planes ?? {}).map((env) => env.stop()));
});

const kubeconfigSecret = (ns: string, name: string, text: string) => ({
  apiVersion: 'v1' as const,
  kind: 'Secret' as const,
  metadata: { namespace: ns, name, labels: { [KUBECONFIG_SECRET_LABEL]: 'true' } },
  data: { kubeconfig: Buffer.from(text).toString('base64') },
});

/** A kubeconfig with one cluster and one user. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'x', clusters: [{ name: 'c', cluster }], users: [{ name: 'u', user }], contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }] });
}

describe.skipIf(planes === undefined)('the kubeconfig-Secret provider', () => {
  const env = (name: 'm1' | 'm2'): Environment => planes![name];

  it("handles each Secret on its own chain: while a black-holed member's leave waits for its stuck reconcile, another member joins and converges", async () => {
    const host = testClient('fleet-test');
    const ns = await newNamespace(host, 'fleet-chain');
    const proxy = await startApiProxy(env('m1').kubeConfig);
    const registry = new Registry();
    const logs = new LogCapture();
    const manager = testManager(ns, { registry, logger: pino({ level: 'info' }, logs) });
    const fleet = createFleet(manager, {
      provider: kubeconfigSecretProvider({ namespace: ns }),
      // A request into the black hole stays in flight for a minute: slow's disengage waits that long for its reconcile.
      clusters: { fieldOwner: 'fleet-test', transportOptions: { timeoutMs: 60_000 } },
    });
    registerCopyController(fleet, ns);
    const m1 = memberClient(env('m1').kubeConfig);
    const m2 = memberClient(env('m2').kubeConfig);
    // slow is m1 through the proxy (plain http on loopback; the proxy adds the credentials).
    const proxyUrl = (proxy.kubeConfig.getCurrentCluster()!).server;
    await host.create(kubeconfigSecret(ns, 'slow', kubeconfig({ server: proxyUrl })));
    const running = run(manager);
    try {
      await host.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'policy', labels: { [COPY_LABEL]: 'true' } }, data: { level: '1' } });
      await eventually(() => copyIn(m1, ns, 'policy'), (d) => d?.['level'] === '1', 'the copy in slow');

      proxy.blackhole(true);
      await host.patch(ConfigMap, { namespace: ns, name: 'policy' }, mergePatch({ data: { level: '2' } }));
      await eventually(() => metric(registry, 'controller_runtime_active_workers', { controller: 'copy', cluster: 'slow' }), (n) => n === 1, "slow's reconcile stuck in the black hole");

      // slow's Secret goes (its disengage now waits for that reconcile), then fast's comes.
      await host.delete(Secret, { namespace: ns, name: 'slow' });
      await host.create(kubeconfigSecret(ns, 'fast', await readFile(env('m2').kubeconfigPath, 'utf8')));
      await eventually(() => copyIn(m2, ns, 'policy'), (d) => d?.['level'] === '2', 'the copy in fast', 30_000);
      // fast joined and converged while slow was still leaving (its reconcile still on its worker, its disengage not done): one Secret's events never waited for another's.
      expect(fleet.clusters()).toEqual(['fast']);
      expect(await metric(registry, 'controller_runtime_active_workers', { controller: 'copy', cluster: 'slow' })).toBe(1);
      expect(logs.lines().some((l) => l['cluster'] === 'slow' && l['msg'] === 'cluster disengaged')).toBe(false);

      proxy.blackhole(false);
      // slow's disengage ends once its reconcile gives up at the request deadline.
      await eventually(() => logs.lines().some((l) => l['cluster'] === 'slow' && l['msg'] === 'cluster disengaged'), (done) => done, 'slow disengaged', 90_000);
    } finally {
      proxy.blackhole(false);
      await running.stop();
      await proxy.close();
      host.transport.close();
      m1.transport.close();
      m2.transport.close();
    }
  }, 180_000);

  it('refuses a kubeconfig its policy does not allow (one log line naming Secret, key and field), engages one it allows, and a member answering with a body shows only its failure class in /readyz', async () => {
    const host = testClient('fleet-test');
    const ns = await newNamespace(host, 'fleet-policy');
    const dir = await mkdtemp(join(tmpdir(), 'kubeloop-fleet-policy-'));
    // An exec plugin that hands out m2's admin client certificate.
    const m2Config = kubeConfigFromText(await readFile(env('m2').kubeconfigPath, 'utf8'));
    const b64 = (s: string): string => Buffer.from(s).toString('base64');
    const plugin = join(dir, 'plugin.mjs');
    await writeFile(plugin, `#!${process.execPath}\nconst info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);\nprocess.stdout.write(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { clientCertificateData: Buffer.from(process.env.CERT, 'base64').toString(), clientKeyData: Buffer.from(process.env.KEY, 'base64').toString() } }));\n`);
    await chmod(plugin, 0o755);
    const viaPlugin = kubeconfig({ server: m2Config.server, 'certificate-authority-data': b64(m2Config.tls!.caData!) }, {
      exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, env: [{ name: 'CERT', value: b64(m2Config.tls!.certData!) }, { name: 'KEY', value: b64(m2Config.tls!.keyData!) }] },
    });
    // A loopback server standing for an internal service a Secret's author wants to read through the operator.
    const seen: string[] = [];
    const internal = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 403, reason: 'Forbidden', message: 'INTERNAL-SECRET-BODY' }));
    });
    await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r));
    await host.create(kubeconfigSecret(ns, 'plugin', viaPlugin));
    await host.create(kubeconfigSecret(ns, 'internal', kubeconfig({ server: `http://127.0.0.1:${(internal.address() as AddressInfo).port}` }, { token: 'attacker-own-token' })));
    const logs = new LogCapture();
    const manager = testManager(ns, { logger: pino({ level: 'info' }, logs), healthProbeBindAddress: '127.0.0.1:0' });
    const fleet = createFleet(manager, { provider: kubeconfigSecretProvider({ namespace: ns }), clusters: { fieldOwner: 'fleet-test' }, informerStaleAfterMs: 1_000 });
    registerCopyController(fleet, ns);
    let running = run(manager);
    try {
      const refusal = await eventually(() => logs.lines().filter((l) => l['secret'] === `${ns}/plugin`), (ls) => ls.length > 0, 'the refusal of plugin');
      expect(refusal).toHaveLength(1);
      expect(refusal[0]).toMatchObject({ key: 'kubeconfig', field: 'users["u"].exec.command', cluster: 'plugin' });
      expect(String(refusal[0]!['msg'])).toContain(`kubeconfig refused: Secret ${ns}/plugin key kubeconfig: users["u"].exec.command: running the exec credential plugin "${plugin}"`);
      expect(fleet.clusters()).not.toContain('plugin');

      // The internal server's body never reaches /readyz?verbose: the class of the failure does.
      const ready = await eventually(() => readyz(manager), (r) => /\[\+\]cluster-internal ok: not ready: .*ClientError Forbidden \(HTTP 403\)/.test(r.body), 'the class of internal\'s failure', 30_000);
      expect(seen.length).toBeGreaterThan(0);
      expect(ready.body).not.toContain('INTERNAL-SECRET-BODY');
      await running.stop();

      // The same Secret, under a policy that allows the plugin: engaged, and it reconciles there.
      const manager2 = testManager(ns, { logger: pino({ level: 'info' }, logs) });
      const fleet2 = createFleet(manager2, { provider: kubeconfigSecretProvider({ namespace: ns, policy: { allowExec: { commands: [plugin] } } }), clusters: { fieldOwner: 'fleet-test' } });
      registerCopyController(fleet2, ns);
      running = run(manager2);
      await host.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'policy', labels: { [COPY_LABEL]: 'true' } }, data: { level: '1' } });
      const m2 = memberClient(env('m2').kubeConfig);
      try {
        await eventually(() => copyIn(m2, ns, 'policy'), (d) => d?.['level'] === '1', 'the copy in plugin (m2, through the exec plugin)');
      } finally {
        m2.transport.close();
      }
    } finally {
      await running.stop();
      internal.closeAllConnections();
      await new Promise((r) => internal.close(r));
      host.transport.close();
    }
  }, 120_000);
});

describe('kubeconfigSecretProvider options', () => {
  it('refuses a policy of the wrong shape, naming the field', () => {
    let err: unknown;
    try {
      kubeconfigSecretProvider({ namespace: 'fleet-system', policy: { allowExec: { commands: ['aws', ''] } } });
    } catch (e) {
      err = e;
    }
    expect(isManagerError(err) && err.reason === 'InvalidOptions').toBe(true);
    expect((err as Error).message).toContain('kubeconfigSecretProvider: policy.allowExec.commands must be a list of non-empty strings');
  });
});
