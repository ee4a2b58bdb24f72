/**
 * installWebhooks against the shared control plane: the API server calls a
 * plain HTTPS server in this process for admission and conversion, trusting
 * the generated CA; uninstall takes it all out again.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment, installCRDs, installWebhooks, isEnvtestError } from '../src/index.js';
import type { InstalledWebhooks } from '../src/index.js';
import { kubeRequest } from '../src/internal/http.js';
import { testCRD } from '../../../test/support/crds.js';
import { testKubeConfig, testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

const group = `${uniqueName('hooks')}.envtest.kubeloop.dev`;
const plural = 'gadgets';
const kc = testKubeConfig();
let dir: string;
let hooks: InstalledWebhooks;
let server: Server;
const seen: string[] = [];

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

beforeAll(async () => {
  await installCRDs(kc, [testCRD(group, 'Gadget', { versions: [{ name: 'v1' }, { name: 'v2', storage: false }] })]);
  dir = await mkdtemp(join(tmpdir(), 'envtest-webhooks-'));
  // A kustomize-like file: a Service and the configuration side by side; only the configuration is taken.
  await writeFile(
    join(dir, 'manifests.yaml'),
    `apiVersion: v1
kind: Service
metadata: { name: webhook-service, namespace: system }
spec: { ports: [{ port: 443 }] }
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: ${group}-validating
webhooks:
  - name: vgadget.${group}
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    clientConfig:
      service: { name: webhook-service, namespace: system, path: /validate-gadget }
    rules:
      - apiGroups: ['${group}']
        apiVersions: [v1]
        operations: [CREATE]
        resources: [${plural}]
`,
  );
  hooks = await installWebhooks(kc, { configurations: [dir], conversionCRDs: [`${plural}.${group}`] });
  server = createServer({ cert: await readFile(hooks.certFile), key: await readFile(hooks.keyFile) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push(req.url ?? '');
      const review = JSON.parse(Buffer.concat(chunks).toString()) as {
        request: { uid: string; object?: { spec?: { bad?: boolean } }; desiredAPIVersion?: string; objects?: { apiVersion: string }[] };
      };
      if (req.url?.startsWith('/validate-gadget')) {
        const bad = review.request.object?.spec?.bad === true;
        json(res, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: !bad, ...(bad ? { status: { code: 403, message: 'bad gadget' } } : {}) } });
      } else {
        const convertedObjects = (review.request.objects ?? []).map((o) => ({ ...o, apiVersion: review.request.desiredAPIVersion }));
        json(res, { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', response: { uid: review.request.uid, convertedObjects, result: { status: 'Success' } } });
      }
    });
  });
  await new Promise<void>((r) => server.listen(hooks.port, hooks.host, r));
});

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await hooks?.uninstall();
  await rm(dir, { recursive: true, force: true });
});

/** Retry while the API server has not loaded the configuration yet (its informer lags the write a little). */
async function eventually<T>(fn: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('installWebhooks', () => {
  it('points service webhooks at the local server with the CA bundle', async () => {
    expect(hooks.url).toBe(`https://127.0.0.1:${hooks.port}`);
    expect(hooks.configurations).toEqual([{ kind: 'ValidatingWebhookConfiguration', name: `${group}-validating` }]);
    const res = await kubeRequest(kc, 'GET', `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${group}-validating`);
    const config = JSON.parse(res.body) as { webhooks: { clientConfig: { url?: string; service?: unknown; caBundle?: string } }[] };
    expect(config.webhooks[0]!.clientConfig).toEqual({ url: `${hooks.url}/validate-gadget`, caBundle: Buffer.from(hooks.caPem).toString('base64') });
  });

  it('the API server calls back into this process for admission', async () => {
    const create = (name: string, bad: boolean) =>
      kubeRequest(kc, 'POST', `/apis/${group}/v1/namespaces/default/${plural}`, { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name }, spec: { bad } });
    const denied = await eventually(() => create(uniqueName('bad'), true), (r) => r.status === 403);
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body)).toMatchObject({ message: `admission webhook "vgadget.${group}" denied the request: bad gadget` });
    expect((await create(uniqueName('good'), false)).status).toBe(201);
    expect(seen.some((u) => u.startsWith('/validate-gadget?timeout='))).toBe(true);
  });

  it('the API server calls back into this process for conversion', async () => {
    const name = uniqueName('conv');
    expect((await kubeRequest(kc, 'POST', `/apis/${group}/v1/namespaces/default/${plural}`, { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name }, spec: {} })).status).toBe(201);
    const read = await kubeRequest(kc, 'GET', `/apis/${group}/v2/namespaces/default/${plural}/${name}`);
    expect(read.status).toBe(200);
    expect((JSON.parse(read.body) as { apiVersion: string }).apiVersion).toBe(`${group}/v2`);
    expect(seen.some((u) => u.startsWith('/convert'))).toBe(true);
  });

  it('refuses sources that are not webhook configurations', async () => {
    const err: unknown = await installWebhooks(kc, { configurations: [{ kind: 'ConfigMap', metadata: { name: 'x' } } as never] }).catch((e: unknown) => e);
    expect(isEnvtestError(err) && err.reason).toBe('InvalidOptions');
    const missing: unknown = await installWebhooks(kc, { configurations: [join(dir, 'nope.yaml')] }).catch((e: unknown) => e);
    expect(isEnvtestError(missing) && missing.message).toMatch(/nope.yaml cannot be read/);
  });

  it('uninstall removes the configuration and the webhook conversion', async () => {
    const extra = await installWebhooks(kc, {
      configurations: [
        {
          kind: 'MutatingWebhookConfiguration',
          metadata: { name: `${group}-mutating` },
          webhooks: [
            {
              name: `mgadget.${group}`,
              admissionReviewVersions: ['v1'],
              sideEffects: 'None',
              failurePolicy: 'Ignore',
              clientConfig: { service: { name: 's', namespace: 'system', path: '/mutate' } },
              rules: [{ apiGroups: [group], apiVersions: ['v1'], operations: ['CREATE'], resources: [plural] }],
            },
          ],
        },
      ],
    });
    await extra.uninstall();
    await extra.uninstall(); // twice is fine
    expect((await kubeRequest(kc, 'GET', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${group}-mutating`)).status).toBe(404);
  });

  it('its own certificate directory is private (0700, key 0600) and goes however the process ends: failed install, SIGKILL', async () => {
    const { spawn } = await import('node:child_process');
    const { existsSync, readdirSync, statSync } = await import('node:fs');
    // A configuration the API server refuses (422) after the key was written: nothing stays behind.
    const scratch = await mkdtemp(join(tmpdir(), 'envtest-webhook-tmp-'));
    const before = process.env['TMPDIR'];
    process.env['TMPDIR'] = scratch;
    try {
      const refused: unknown = await installWebhooks(kc, {
        configurations: [{ kind: 'ValidatingWebhookConfiguration', metadata: { name: `${group}-refused` }, webhooks: [{ name: 'not-a-qualified-name', clientConfig: { url: 'https://127.0.0.1:1/x' } }] } as never],
      }).catch((e: unknown) => e);
      expect(isEnvtestError(refused)).toBe(true);
      expect(readdirSync(scratch)).toEqual([]);
    } finally {
      if (before === undefined) delete process.env['TMPDIR'];
      else process.env['TMPDIR'] = before;
      await rm(scratch, { recursive: true, force: true });
    }

    // Killed with SIGKILL (nothing in the process runs): the watchdog removes the key within seconds.
    const dist = new URL('../dist/index.js', import.meta.url).pathname;
    const script = `
      const { installWebhooks } = await import(${JSON.stringify(dist)});
      const { KubeConfig } = await import('@kubernetes/client-node');
      const kc = new KubeConfig();
      kc.loadFromFile(process.argv[1]);
      const hooks = await installWebhooks(kc, {});
      console.log(hooks.certDir);
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, testKubeconfigPath()], { cwd: new URL('..', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'inherit'] });
    const certDir = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        if (buf.includes('\n')) resolve(buf.split('\n')[0] ?? '');
      });
      child.once('exit', (code) => reject(new Error(`child exited ${String(code)} before installing`)));
    });
    expect(statSync(certDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(certDir, 'tls.key')).mode & 0o777).toBe(0o600);
    const killedAt = Date.now();
    child.kill('SIGKILL');
    const deadline = Date.now() + 10_000;
    while (existsSync(certDir) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(certDir)).toBe(false);
    process.stderr.write(`[webhooks] SIGKILL: the key directory was gone ${Date.now() - killedAt} ms after the kill\n`);
  });

  it('an environment installs webhooks at start and, on an existing cluster, takes them out at stop', async () => {
    const name = `${group}-env`;
    const env = createEnvironment({
      useExistingCluster: true,
      kubeconfigPath: testKubeconfigPath(),
      webhooks: {
        configurations: [
          {
            kind: 'ValidatingWebhookConfiguration',
            metadata: { name },
            webhooks: [
              {
                name: `env.${group}`,
                admissionReviewVersions: ['v1'],
                sideEffects: 'None',
                failurePolicy: 'Ignore',
                clientConfig: { service: { name: 's', namespace: 'system', path: '/validate' } },
                rules: [{ apiGroups: [group], apiVersions: ['v1'], operations: ['UPDATE'], resources: [plural] }],
              },
            ],
          },
        ],
      },
    });
    expect(env.webhooks).toBeUndefined();
    await env.start();
    const installed = env.webhooks!;
    expect(installed.configurations).toEqual([{ kind: 'ValidatingWebhookConfiguration', name }]);
    const res = await kubeRequest(kc, 'GET', `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${name}`);
    expect((JSON.parse(res.body) as { webhooks: { clientConfig: { url: string } }[] }).webhooks[0]!.clientConfig.url).toBe(`${installed.url}/validate`);
    await env.stop();
    expect(env.webhooks).toBeUndefined();
    expect((await kubeRequest(kc, 'GET', `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${name}`)).status).toBe(404);
  });
});
