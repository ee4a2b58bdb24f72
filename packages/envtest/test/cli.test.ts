/**
 * The foreground command: it prints a kubeconfig that kubectl can use, and
 * Ctrl-C (SIGINT) stops the control plane cleanly.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { testCRD } from '../../../test/support/crds.js';

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

  it('--webhooks naming a file that is not there: says so, stops the control plane and exits 1 (instead of running on without the webhooks)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'envtest-cli-nohooks-'));
    try {
      const child = spawn(process.execPath, [cli, 'start', '--kubeconfig-out', join(dir, 'kubeconfig'), '--webhooks', join(dir, 'missing.yaml')], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(1);
      expect(out).toContain(`envtest: the webhooks could not be installed: InvalidOptions: webhook configuration path ${join(dir, 'missing.yaml')} cannot be read`);
      expect(out).not.toContain('Press Ctrl-C');
      // The control plane it had started is gone: its kubeconfig reaches nothing.
      const server = /^\s+server: (.+)$/m.exec(await readFile(join(dir, 'kubeconfig'), 'utf8'))?.[1] ?? '';
      const reached = await fetch(`${server}/readyz`, { signal: AbortSignal.timeout(5000) }).then(() => true, () => false);
      expect(reached).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('--crds takes a kustomize directory; --webhooks points a project\'s configurations at a local process, whose certificate it writes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'envtest-cli-hooks-'));
    try {
      await mkdir(join(dir, 'crd'));
      await writeFile(join(dir, 'crd', 'gizmos.cli.envtest.dev.yaml'), JSON.stringify(testCRD('cli.envtest.dev', 'Gizmo')));
      await writeFile(join(dir, 'crd', 'kustomization.yaml'), 'resources:\n  - gizmos.cli.envtest.dev.yaml\n');
      // As a project has it: a Service client config, which envtest replaces with the local URL and a CA bundle.
      await writeFile(join(dir, 'manifests.yaml'), [
        'apiVersion: admissionregistration.k8s.io/v1',
        'kind: ValidatingWebhookConfiguration',
        'metadata: { name: gizmo-validating }',
        'webhooks:',
        '  - name: vgizmo.cli.envtest.dev',
        '    admissionReviewVersions: [v1]',
        '    sideEffects: None',
        '    failurePolicy: Fail',
        '    clientConfig: { service: { name: demo-webhook, namespace: demo-system, path: /validate-cli-envtest-dev-v1-gizmo } }',
        '    rules: [{ apiGroups: [cli.envtest.dev], apiVersions: [v1], operations: [CREATE], resources: [gizmos] }]',
        '',
      ].join('\n'));
      const certDir = join(dir, 'certs');
      const child = spawn(process.execPath, [cli, 'start', '--crds', join(dir, 'crd'), '--webhooks', join(dir, 'manifests.yaml'), '--webhook-cert-dir', certDir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('Press Ctrl-C')) resolve();
        });
        child.stderr.on('data', (d: Buffer) => (out += d.toString()));
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      const kubeconfig = /^kubeconfig: (.+)$/m.exec(out)?.[1] ?? '';
      const port = Number(/--webhook-port (\d+)/.exec(out)?.[1]);
      expect(out).toContain(`webhooks: ValidatingWebhookConfiguration/gizmo-validating call https://127.0.0.1:${port}`);
      // The local operator: what it needs is in --webhook-cert-dir.
      const server = createServer({ cert: await readFile(join(certDir, 'tls.crt')), key: await readFile(join(certDir, 'tls.key')) }, (req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          const review = JSON.parse(body) as { request: { uid: string } };
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: false, status: { code: 403, message: `no gizmos today (${req.url})` } } }));
        });
      });
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
      try {
        const gizmo = JSON.stringify({ apiVersion: 'cli.envtest.dev/v1', kind: 'Gizmo', metadata: { name: 'g', namespace: 'default' } });
        const refused = await new Promise<string>((resolve) => {
          const k = spawn('kubectl', ['--kubeconfig', kubeconfig, 'create', '-f', '-'], { stdio: ['pipe', 'pipe', 'pipe'] });
          let text = '';
          k.stdout.on('data', (d: Buffer) => (text += d.toString()));
          k.stderr.on('data', (d: Buffer) => (text += d.toString()));
          k.once('close', () => resolve(text));
          k.stdin.end(gizmo);
        });
        expect(refused).toContain('denied the request: no gizmos today (/validate-cli-envtest-dev-v1-gizmo?timeout=10s)');
      } finally {
        server.close();
        const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
        child.kill('SIGINT');
        expect(await exited).toBe(0);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects an unknown command', async () => {
    const result = await promisify(execFile)(process.execPath, [cli, 'frobnicate']).catch((e: { code: number; stderr: string }) => e);
    expect(result).toMatchObject({ code: 2 });
    expect((result as { stderr: string }).stderr).toContain('unknown command frobnicate');
  });
});
