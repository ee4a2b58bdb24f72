/**
 * `kubeloop inspect` against a manager running on the real API server, its
 * metrics server secured (HTTPS, TokenReview + SubjectAccessReview): a key
 * whose reconcile keeps failing shows its last error (redacted as logs
 * are: the bearer token in the message is cut) and its triggers (the
 * ConfigMap's add, then the error backoff); the controller view lists it
 * in backoff; the manager view counts it. A caller without a token gets
 * 401; one allowed only `get` cannot pause (403); one allowed `post`
 * pauses and resumes the controller. A controller whose CRD is not
 * installed is shown (on a plain metrics server) as `waiting for CRD`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, loadKubeConfig } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createLogger, createManager } from '@kubeloop/manager';
import type { Manager } from '@kubeloop/manager';
import { createCertificateAuthority } from '@kubeloop/pki';
import { ConfigMap } from '@kubeloop/scheme';
import { staticCertificate } from '@kubeloop/webhook';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { runCli } from '../src/index.js';
import { io } from './support.js';

async function eventually<T, S extends T>(read: () => T | Promise<T>, ok: (v: T) => v is S, what: string, timeoutMs?: number): Promise<S>;
async function eventually<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs?: number): Promise<T>;
async function eventually<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)?.slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('kubeloop inspect', () => {
  const namespace = uniqueName('inspect');
  const reader = uniqueName('inspect-reader');
  const operator = uniqueName('inspect-operator');
  let admin: Client;
  let manager: Manager;
  let stop: AbortController;
  let done: Promise<void>;
  let url: string;
  let caFile: string;
  const tokens: Record<string, string> = {};

  async function accountWith(name: string, verbs: string[]): Promise<string> {
    const sa = await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
    await admin.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules: [{ nonResourceURLs: ['/inspect', '/inspect/*'], verbs }] });
    await admin.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    });
    const answer = await admin.subResource('token').create<{ status: { token: string } }>({ ...sa, apiVersion: 'v1', kind: 'ServiceAccount' }, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } });
    return answer.status.token;
  }

  /** `kubeloop inspect ...` as a user types it; its exit code and output. */
  async function inspect(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    const cli = io();
    const code = await runCli(['inspect', ...args], cli.io);
    return { code, out: cli.out.join(''), err: cli.err.join('') };
  }

  beforeAll(async () => {
    admin = createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()), fieldOwner: 'inspect-test' });
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    tokens['reader'] = await accountWith(reader, ['get']);
    tokens['operator'] = await accountWith(operator, ['get', 'post']);
    const ca = createCertificateAuthority({ commonName: 'inspect-test-ca' });
    caFile = join(mkdtempSync(join(tmpdir(), 'kubeloop-inspect-')), 'ca.crt');
    writeFileSync(caFile, ca.certPem);
    manager = createManager({
      kubeConfig: loadKubeConfig(testKubeconfigPath()),
      namespaces: [namespace],
      logger: createLogger({ level: 'silent' }),
      metricsBindAddress: '127.0.0.1:0',
      secureMetrics: { certificates: staticCertificate(ca.issue({ commonName: 'metrics', usage: 'server', hosts: ['127.0.0.1'] })) },
    });
    manager
      .controller()
      .named('disks')
      .for(ConfigMap)
      .complete((req) => {
        if (req.name === 'broken') throw new Error('the storage backend refused us (sent Authorization: Bearer sekret-token-123)');
      });
    stop = new AbortController();
    done = manager.start(stop.signal);
    done.catch(() => undefined);
    const metricsUrl = await eventually(() => manager.metricsUrl, (u) => u !== undefined, 'the metrics server');
    if (metricsUrl === undefined) throw new Error('the metrics server has no URL');
    url = metricsUrl;
    // Synced before the ConfigMaps exist: their reconciles are triggered by their adds, not by the initial list.
    await eventually(() => manager.controllers(), (cs) => cs.every((c) => c.synced), 'the controller to sync');
    await admin.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fine', namespace } });
    await admin.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'broken', namespace } });
    // The broken key has failed twice: one reconcile for its add, one or more for its backoff.
    await eventually(async () => (await manager.registry.getSingleMetric('controller_runtime_reconcile_errors_total')?.get())?.values.find((v) => v.labels['controller'] === 'disks')?.value ?? 0, (n) => n >= 2, 'two failed reconciles');
  }, 120_000);

  afterAll(async () => {
    stop?.abort();
    await done?.catch(() => undefined);
    for (const name of [reader, operator]) {
      await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name } }).catch(() => undefined);
      await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name } }).catch(() => undefined);
    }
    await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: namespace }).catch(() => undefined);
    admin.transport.close();
  });

  it("shows a failing key's last error, redacted, and its triggers", async () => {
    const { code, out } = await inspect(url, 'disks', `${namespace}/broken`, '--token', tokens['reader']!, '--certificate-authority', caFile);
    expect(code).toBe(0);
    expect(out).toContain(`key ${namespace}/broken of controller disks:`);
    expect(out).toMatch(/backoff: \d+ failure\(s\), next retry \d{4}-/);
    expect(out).toContain('last error: the storage backend refused us (sent Authorization: Bearer');
    expect(out).not.toContain('sekret-token-123');
    // Its first reconcile was triggered by the ConfigMap's add, the next by the error backoff; both failed.
    const reconciles = out.slice(out.indexOf('last reconciles'));
    expect(reconciles).toMatch(new RegExp(`error\\s+the storage backend refused us.*\\s+for add ConfigMap ${namespace}/broken rv=\\d+`));
    expect(reconciles).toMatch(/error\s+the storage backend refused us.*\s+controller error-backoff/);
    expect(reconciles).not.toContain('success');
  });

  it('lists the key in backoff in the controller view, and counts it in the manager view', async () => {
    const controller = await inspect(url, 'disks', '--token', tokens['reader']!, '--certificate-authority', caFile);
    expect(controller.code).toBe(0);
    const backoff = controller.out.slice(controller.out.indexOf('in backoff:'), controller.out.indexOf('suspected self-triggering'));
    expect(backoff).toMatch(new RegExp(`${namespace}/broken\\s+\\d+\\s+\\d{4}-\\S+\\s+the storage backend refused us`));
    expect(backoff).not.toContain(`${namespace}/fine`);
    expect(controller.out).toMatch(new RegExp(`${namespace}/fine\\s+\\S+\\s+\\S+\\s+success\\s+-\\s+for add ConfigMap ${namespace}/fine`));
    const all = await inspect(url, '--token', tokens['reader']!, '--certificate-authority', caFile);
    expect(all.out).toMatch(/CONTROLLER\s+STATE\s+DEPTH/);
    expect(all.out).toMatch(/disks\s+running\s+\d+\s+\S+\s+\S+\s+\d+\s+1\s+0/);
    const json = await inspect(url, 'disks', '--token', tokens['reader']!, '--certificate-authority', caFile, '--json');
    expect(JSON.parse(json.out)).toMatchObject({ name: 'disks', backoff: [{ key: `${namespace}/broken` }] });
  });

  it('refuses a caller without a token (401) and a pause by one allowed only get (403); one allowed post pauses and resumes', async () => {
    const anonymous = await inspect(url, '--certificate-authority', caFile);
    expect(anonymous.code).toBe(1);
    expect(anonymous.err).toMatch(/answered 401: Unauthorized/);
    const readerPause = await inspect(url, 'disks', '--pause', '--token', tokens['reader']!, '--certificate-authority', caFile);
    expect(readerPause.code).toBe(1);
    expect(readerPause.err).toMatch(/answered 403: .*cannot post path "\/inspect\/disks\/pause"/);
    expect(manager.controllers().find((c) => c.name === 'disks')?.paused).toBe(false);
    const paused = await inspect(url, 'disks', '--pause', '--token', tokens['operator']!, '--certificate-authority', caFile);
    expect(paused.code).toBe(0);
    expect(paused.out).toMatch(/disks\s+paused/);
    expect(manager.controllers().find((c) => c.name === 'disks')?.paused).toBe(true);
    const resumed = await inspect(url, 'disks', '--resume', '--token', tokens['operator']!, '--certificate-authority', caFile);
    expect(resumed.out).toMatch(/disks\s+running/);
    expect(manager.controllers().find((c) => c.name === 'disks')?.paused).toBe(false);
  });
});

describe('kubeloop inspect of a controller waiting for its CRD', () => {
  it('shows the controller as waiting for CRD and names the kind', async () => {
    const group = `${uniqueName('absent')}.kubeloop.test`;
    const manager = createManager({
      kubeConfig: loadKubeConfig(testKubeconfigPath()),
      namespaces: [uniqueName('inspect-crd')],
      logger: createLogger({ level: 'silent' }),
      metricsBindAddress: '127.0.0.1:0',
      // A plain metrics server serves /inspect only when asked to.
      inspect: true,
    });
    manager.controller().named('absent').for({ apiVersion: `${group}/v1`, kind: 'Absent' }).complete(() => undefined);
    const stop = new AbortController();
    const done = manager.start(stop.signal);
    done.catch(() => undefined);
    try {
      // The CRD is never installed: the controller waits for it.
      await eventually(() => manager.controllers()[0], (c) => c?.forKindMissing === true, 'the controller to wait for its CRD');
      const cli = io();
      const code = await runCli(['inspect', manager.metricsUrl!, 'absent'], cli.io);
      const out = cli.out.join('');
      expect(code).toBe(0);
      expect(out).toMatch(/absent\s+waiting for CRD\s+0/);
      expect(out).toContain(`waiting for the CRD of Absent.${group}/v1 (not served by the API server): its workers take no keys until it is installed`);
    } finally {
      stop.abort();
      await done.catch(() => undefined);
    }
  });
});
