/**
 * The example's admission webhooks, end to end: envtest installs
 * webhook/manifests.yaml pointing at the operator process (dist/main.js with
 * --webhook-cert-dir), and kubectl, as a user would, sees an invalid
 * `spec.size` or storage class refused at `kubectl apply` with the field
 * path, and a missing storage class defaulted before the disk is stored and
 * reconciled. The configurations are scoped to this test's namespace, so
 * other tests' invalid disks (the reconciler's phase Invalid) are untouched.
 * kubectl names the resource fully (`harddisks.v1.crd-demo.io`): other tests
 * install HardDisk kinds in groups of their own on the shared control plane,
 * and v2 (kubectl's default) needs the conversion webhook, which
 * conversion.test.ts runs on a control plane of its own.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAllYaml } from '@kubernetes/client-node';
import { createClient, isInvalid } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, installWebhooks } from '@kubeloop/envtest';
import type { Environment, InstalledWebhooks, WebhookConfigurationLike } from '@kubeloop/envtest';
import { builtinScheme } from '@kubeloop/scheme';
import { HardDisk } from '../src/index.js';
import type { HardDisk as HardDiskObject } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { kubectl as runKubectl } from '../../../test/support/kubectl.js';
import { freePort, httpsGet } from '../../../test/support/net.js';
import type { KubectlResult } from '../../../test/support/kubectl.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scheme = builtinScheme.extend(HardDisk);

let env: Environment;
let client: Client;
let hooks: InstalledWebhooks;
let operator: ChildProcess;
let metricsPort: number;
const ns = uniqueName('hooks');



/** webhook/manifests.yaml, each webhook limited to this test's namespace. */
function configurations(): WebhookConfigurationLike[] {
  const docs = loadAllYaml(readFileSync(join(root, 'webhook', 'manifests.yaml'), 'utf8')) as WebhookConfigurationLike[];
  return docs.map((c) => ({
    ...c,
    metadata: { ...c.metadata, name: `${c.metadata.name}-${ns}` },
    webhooks: (c.webhooks ?? []).map((w) => ({ ...w, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } })),
  }));
}

/** kubectl against the shared control plane, `stdin` piped in. */
function kubectl(args: string[], stdin?: string): Promise<KubectlResult> {
  return runKubectl(args, stdin === undefined ? {} : { stdin });
}

function diskYaml(name: string, spec: Record<string, string>): string {
  return JSON.stringify({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name, namespace: ns }, spec });
}

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await read();
    if (ok(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  await env.installCRDs([join(root, 'crd')]);
  client = createClient({ kubeConfig: env.kubeConfig, scheme, fieldOwner: 'e2e-webhooks' });
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  hooks = await installWebhooks(env.kubeConfig, { configurations: configurations() });
  metricsPort = await freePort();
  operator = spawn(
    process.execPath,
    [
      join(root, 'dist', 'main.js'),
      '--kubeconfig', testKubeconfigPath(),
      '--no-sample',
      // Secure metrics with the webhook's certificate (issued for 127.0.0.1).
      '--metrics-bind-address', `127.0.0.1:${metricsPort}`,
      '--metrics-cert-dir', hooks.certDir,
      '--health-probe-bind-address', '0',
      '--webhook-cert-dir', hooks.certDir,
      '--webhook-host', hooks.host,
      '--webhook-port', String(hooks.port),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, KUBELOOP_LOG_LEVEL: 'warn' } },
  );
  // The operator is up and the API server has loaded the configurations once a bad disk is refused.
  await eventually(
    () => client.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'probe', namespace: ns }, spec: { size: 'x' } }, { dryRun: true }).then(() => undefined, (e: unknown) => e),
    (err) => isInvalid(err),
    'the validating webhook to answer',
    // the operator's start (node, its caches, the webhook server): seconds alone, over 30 s with files side by side on 2 cores
    120_000,
  );
  // The mutating configuration is loaded by its own informer in the API server: wait for it too.
  await eventually(
    () => client.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'probe', namespace: ns }, spec: { size: '1Gi' } }, { dryRun: true }),
    (disk) => (disk.spec as HardDiskObject['spec'])?.storageClass === 'standard',
    'the mutating webhook to answer',
  );
});

afterAll(async () => {
  if (operator && operator.exitCode === null) {
    const closed = new Promise((r) => operator.once('close', r));
    operator.kill('SIGTERM');
    await closed;
  }
  await hooks?.uninstall();
  await env?.stop();
});

describe('the HardDisk admission webhooks, through kubectl', () => {
  it('kubectl apply of a disk whose size is not a quantity is refused, naming the field; nothing is stored', async () => {
    const r = await kubectl(['apply', '-f', '-'], diskYaml('bad-size', { size: 'ten gigs' }));
    expect(r.code).not.toBe(0);
    // kubectl writes an Invalid status from its field causes, as for the API server's own validation:
    // the whole of what it prints is the refusal docs/webhooks.md shows.
    const documented = /\n\s*```\n\s*(The HardDisk "[^"]+" is invalid: [^\n]*)\n\s*```/.exec(readFileSync(join(root, '..', '..', 'docs', 'webhooks.md'), 'utf8'));
    expect(documented, 'docs/webhooks.md shows the refusal').not.toBeNull();
    expect(r.stderr.trim()).toBe(documented![1]);
    expect(r.stderr.trim()).toBe('The HardDisk "bad-size" is invalid: spec.size: Invalid value: "ten gigs": must be a quantity such as 10Gi');
    // The Status message, which a client of the API gets, names the webhook (kubectl leaves it out for Invalid, as the docs say).
    await expect(client.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'bad-size', namespace: ns }, spec: { size: 'ten gigs' } })).rejects.toThrow(
      /admission webhook "vharddisk\.crd-demo\.io" denied the request: HardDisk\.crd-demo\.io "bad-size" is invalid: spec\.size: Invalid value: "ten gigs"/,
    );
    expect((await kubectl(['get', 'harddisks.v1.crd-demo.io', 'bad-size', '-n', ns])).stderr).toContain('NotFound');
  });

  it('an unknown storage class is refused with the supported values', async () => {
    const r = await kubectl(['apply', '-f', '-'], diskYaml('bad-class', { size: '10Gi', storageClass: 'tape' }));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.storageClass: Unsupported value: "tape": supported values: "standard", "fast"');
  });

  it('a disk without a storage class is stored with the default, and the operator binds it', async () => {
    const r = await kubectl(['apply', '-f', '-'], diskYaml('defaulted', { size: '20Gi' }));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const got = await kubectl(['get', 'harddisks.v1.crd-demo.io', 'defaulted', '-n', ns, '-o', 'jsonpath={.spec.storageClass}']);
    expect(got.stdout).toBe('standard');
    await eventually(
      async () => (await kubectl(['get', 'harddisks.v1.crd-demo.io', 'defaulted', '-n', ns, '-o', 'jsonpath={.status.phase}'])).stdout,
      (phase) => phase === 'Bound',
      'the defaulted disk to be Bound',
    );
  });

  it('an update that breaks the size is refused as well', async () => {
    const created = await kubectl(['apply', '-f', '-'], diskYaml('updated', { size: '1Gi' }));
    expect(created.stderr).toBe('');
    const r = await kubectl(['patch', 'harddisks.v1.crd-demo.io', 'updated', '-n', ns, '--type', 'merge', '-p', '{"spec":{"size":"-1"}}']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.size: Invalid value: "-1": must be a quantity such as 10Gi');
  });

  it('--metrics-cert-dir serves /metrics over HTTPS, to no one without a bearer token', async () => {
    const anonymous = await httpsGet(`https://127.0.0.1:${metricsPort}/metrics`, { ca: hooks.caPem });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toContain('Unauthorized: no bearer token');
  });
});
