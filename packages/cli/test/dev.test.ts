/**
 * `kubeloop dev` on a small project against the shared control plane: the
 * CRDs of config/crd (a kustomize directory) are installed, the operator
 * starts after the first build with the cluster's kubeconfig and the flags
 * given, restarts when a saved source compiles, keeps running when it does
 * not, and everything stops with the loop. A project with webhooks has them
 * pointed at the operator with the session's certificate and port (removed
 * when the loop stops), or, with `--no-webhooks` or `webhooks: false`, none
 * installed. (dev-webhooks.test.ts walks a scaffolded project.)
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCRDs } from '@kubeloop/scheme/schema';
import { defineKind } from '@kubeloop/scheme';
import { Type } from '@kubeloop/scheme/schema';
import { parse, stringify } from 'yaml';
import { dev } from '../src/index.js';
import { kubectl } from '../../../test/support/kubectl.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

const root = join(import.meta.dirname, '..', '..', '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
const group = `${uniqueName('dev')}.cli.kubeloop.dev`;
let work: string;

const main = (version: string, extra = ''): string => `declare const process: { argv: string[]; on(event: string, f: () => void): void; exit(code: number): never };
const version: string = '${version}';
console.log(JSON.stringify({ version, args: process.argv.slice(2) }));
process.on('SIGTERM', () => { console.log(JSON.stringify({ stopped: version })); process.exit(0); });
setInterval(() => undefined, 1000);
${extra}
`;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kubeloop-dev-'));
  await mkdir(join(work, 'src'));
  await mkdir(join(work, 'config', 'crd'), { recursive: true });
  await writeFile(join(work, 'package.json'), JSON.stringify({ name: 'dev-demo', type: 'module' }));
  await writeFile(join(work, 'tsconfig.json'), JSON.stringify({ compilerOptions: { outDir: 'dist', rootDir: 'src', module: 'nodenext', target: 'es2022', strict: true, types: [] }, include: ['src'] }));
  await writeFile(join(work, 'src', 'main.ts'), main('one'));
  const [crd] = generateCRDs([defineKind({ group, version: 'v1', kind: 'Gizmo', plural: 'gizmos', namespaced: true, schema: { spec: Type.Object({}) } })]);
  await writeFile(join(work, 'config', 'crd', `gizmos.${group}.yaml`), stringify(crd));
  await writeFile(join(work, 'config', 'crd', 'kustomization.yaml'), `resources:\n  - gizmos.${group}.yaml\n`);
});
afterAll(async () => {
  await kubectl(['delete', '--ignore-not-found', 'crd', `gizmos.${group}`]);
  await rm(work, { recursive: true, force: true });
});

/**
 * Save a source file as editors do, whole at once (a temporary file renamed over it): a plain writeFile truncates
 * first, and on a loaded machine tsc's watcher can read the empty file in between, a clean build that restarts the
 * operator (CI, 2026-12-08: the broken build's step saw its predecessor stopped).
 */
async function save(path: string, text: string): Promise<void> {
  await writeFile(`${path}.saving`, text);
  await rename(`${path}.saving`, path);
}

describe('kubeloop dev', () => {
  it('installs the CRDs, starts the operator after a clean build, restarts it on a change, keeps it on a broken one, and stops it', async () => {
    let output = '';
    const logs: string[] = [];
    const until = async (what: string, ok: () => boolean): Promise<void> => {
      // Generous: tsc's first build in watch mode takes a while on a loaded machine.
      const deadline = Date.now() + 180_000;
      while (!ok()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; operator output:\n${output}\nloop:\n${logs.join('\n')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const controller = new AbortController();
    const loop = dev({ cwd: work, kubeconfig: testKubeconfigPath(), tsc, args: ['--metrics-bind-address', '127.0.0.1:0'], signal: controller.signal, log: (l) => logs.push(l), operatorOutput: (t) => (output += t) });
    try {
      await until('the first start', () => output.includes('"version":"one"'));
      expect(output).toContain(JSON.stringify({ version: 'one', args: ['--kubeconfig', testKubeconfigPath(), '--metrics-bind-address', '127.0.0.1:0'] }));
      expect((await kubectl(['get', 'crd', `gizmos.${group}`])).code).toBe(0);

      await save(join(work, 'src', 'main.ts'), main('two'));
      await until('the restart', () => output.includes('"version":"two"'));
      expect(output.indexOf('{"stopped":"one"}')).toBeGreaterThan(-1);
      expect(output.indexOf('{"stopped":"one"}')).toBeLessThan(output.indexOf('"version":"two"'));

      await save(join(work, 'src', 'main.ts'), main('three', 'const broken: number = "not a number";'));
      await until('the failed build', () => logs.some((l) => l === 'not restarting: the build has errors'));
      expect(output).not.toContain('{"stopped":"two"}');
    } finally {
      controller.abort();
      await loop;
    }
    expect(output).toContain('{"stopped":"two"}');
    expect(logs.at(-1)).toBe('stopped');
  }, 6 * 60_000);

  it('names the objects holding a CRD being deleted (what `pnpm run undeploy` leaves) at once, and starts the operator once they are freed', async () => {
    // A CRD that `undeploy` deleted while its objects had finalizers and no operator ran to remove them.
    const held = await mkdtemp(join(tmpdir(), 'kubeloop-dev-held-'));
    const heldGroup = `${uniqueName('held')}.cli.kubeloop.dev`;
    const resource = `doohickeys.${heldGroup}`;
    await mkdir(join(held, 'src'));
    await mkdir(join(held, 'config', 'crd'), { recursive: true });
    await writeFile(join(held, 'package.json'), JSON.stringify({ name: 'dev-held', type: 'module' }));
    await writeFile(join(held, 'tsconfig.json'), JSON.stringify({ compilerOptions: { outDir: 'dist', rootDir: 'src', module: 'nodenext', target: 'es2022', strict: true, types: [] }, include: ['src'] }));
    await writeFile(join(held, 'src', 'main.ts'), main('held'));
    const [crd] = generateCRDs([defineKind({ group: heldGroup, version: 'v1', kind: 'Doohickey', plural: 'doohickeys', namespaced: true, schema: { spec: Type.Object({}) } })]);
    await writeFile(join(held, 'config', 'crd', `${resource}.yaml`), stringify(crd));
    await writeFile(join(held, 'config', 'crd', 'kustomization.yaml'), `resources:\n  - ${resource}.yaml\n`);
    expect((await kubectl(['apply', '--server-side', '-k', join(held, 'config', 'crd')])).code).toBe(0);
    expect((await kubectl(['wait', '--for=condition=Established', `crd/${resource}`, '--timeout=60s'])).code).toBe(0);
    const object = { apiVersion: `${heldGroup}/v1`, kind: 'Doohickey', metadata: { name: 'kept', namespace: 'default', finalizers: [`${heldGroup}/cleanup`] }, spec: {} };
    expect((await kubectl(['apply', '--server-side', '-f', '-'], { stdin: JSON.stringify(object) })).code).toBe(0);
    expect((await kubectl(['delete', '--wait=false', '-k', join(held, 'config', 'crd')])).code).toBe(0);

    let output = '';
    const logs: string[] = [];
    const controller = new AbortController();
    const loop = dev({ cwd: held, kubeconfig: testKubeconfigPath(), tsc, signal: controller.signal, log: (l) => logs.push(l), operatorOutput: (t) => (output += t) });
    const until = async (what: string, ok: () => boolean): Promise<void> => {
      const deadline = Date.now() + 180_000;
      while (!ok()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; operator output:\n${output}\nloop:\n${logs.join('\n')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const patch = `kubectl patch ${resource} kept -n default --type merge -p '{"metadata":{"finalizers":null}}'`;
    try {
      await until('the report of the CRD being deleted', () => logs.some((l) => l.includes('is being deleted')));
      const report = logs.find((l) => l.includes('is being deleted'))!;
      expect(report).toMatch(new RegExp(`^CRDs in config/crd not installed: CRD ${resource.replaceAll('.', '\\.')} is being deleted \\(Terminating since [^)]+\\) and cannot be installed again until it is gone: 1 Doohickey still has finalizers, which keep it and the CRD: default/kept \\(${heldGroup.replaceAll('.', '\\.')}/cleanup\\)\\. `));
      expect(report).toContain(`remove them by hand: ${patch}. The loop tries again every 5 s and starts the operator once it is installed`);
      expect(logs.join('\n')).not.toContain('not ready within');
      expect(output).not.toContain('"version":"held"');
      // Told once, though the loop keeps trying.
      await new Promise((r) => setTimeout(r, 12_000));
      expect(logs.filter((l) => l.includes('is being deleted'))).toHaveLength(1);

      // The command the report gives, as written: the CRD goes, the loop installs it anew and starts the operator.
      const freed = await new Promise<number | null>((resolve, reject) => {
        const child = spawn('sh', ['-c', patch], { env: { ...process.env, KUBECONFIG: testKubeconfigPath() }, stdio: 'ignore' });
        child.once('error', reject);
        child.once('close', resolve);
      });
      expect(freed).toBe(0);
      await until('the operator started', () => output.includes('"version":"held"'));
      const installed = JSON.parse((await kubectl(['get', 'crd', resource, '-o', 'json'])).stdout) as { metadata: { deletionTimestamp?: string } };
      expect(installed.metadata.deletionTimestamp).toBeUndefined();
    } finally {
      controller.abort();
      await loop;
      await kubectl(['delete', '--ignore-not-found', 'crd', resource]);
      await rm(held, { recursive: true, force: true });
    }
  }, 6 * 60_000);

  describe('with webhooks', () => {
    let hooked: string;
    const configuration = `${uniqueName('dev-hooks')}-validating`;
    beforeAll(async () => {
      hooked = await mkdtemp(join(tmpdir(), 'kubeloop-dev-hooks-'));
      await mkdir(join(hooked, 'src'));
      await mkdir(join(hooked, 'config', 'webhook'), { recursive: true });
      // What `kubeloop create webhook` leaves: the "kubeloop".webhooks settings; `pnpm generate` the manifests.
      await writeFile(join(hooked, 'package.json'), JSON.stringify({ name: 'dev-hooks', type: 'module', kubeloop: { webhooks: { setup: 'dist/webhooks/index.js#setupWebhooks', namespace: 'dev-hooks-system' } } }));
      await writeFile(join(hooked, 'tsconfig.json'), JSON.stringify({ compilerOptions: { outDir: 'dist', rootDir: 'src', module: 'nodenext', target: 'es2022', strict: true, types: [] }, include: ['src'] }));
      await writeFile(join(hooked, 'src', 'main.ts'), main('hooked'));
      await writeFile(
        join(hooked, 'config', 'webhook', 'manifests.yaml'),
        stringify({
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingWebhookConfiguration',
          metadata: { name: configuration },
          webhooks: [{
            name: `vgizmo-v1.${group}`,
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Fail',
            clientConfig: { service: { name: 'dev-hooks-webhook-service', namespace: 'dev-hooks-system', path: `/validate-${group.replaceAll('.', '-')}-v1-gizmo` } },
            rules: [{ apiGroups: [group], apiVersions: ['v1'], operations: ['CREATE'], resources: ['gizmos'] }],
          }],
        }),
      );
    });
    afterAll(async () => {
      await kubectl(['delete', '--ignore-not-found', 'validatingwebhookconfiguration', configuration]);
      await rm(hooked, { recursive: true, force: true });
    });

    const run = async (options: { args?: string[]; webhooks?: boolean; kubeconfig?: string }, during: (seen: { output: () => string; logs: string[] }) => Promise<void>): Promise<string[]> => {
      let output = '';
      const logs: string[] = [];
      const controller = new AbortController();
      const loop = dev({ cwd: hooked, kubeconfig: testKubeconfigPath(), tsc, signal: controller.signal, log: (l) => logs.push(l), operatorOutput: (t) => (output += t), ...options });
      try {
        const deadline = Date.now() + 180_000;
        while (!output.includes('"version":"hooked"')) {
          if (Date.now() > deadline) throw new Error(`the operator did not start; loop:\n${logs.join('\n')}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        await during({ output: () => output, logs });
      } finally {
        controller.abort();
        await loop;
      }
      return logs;
    };
    const argsOf = (output: string): string[] => (JSON.parse(output.split('\n').find((l) => l.includes('"version":"hooked"'))!) as { args: string[] }).args;

    it('points the configurations at the operator with the session\'s certificate and port, and removes them and the certificate when it stops', async () => {
      let certDir = '';
      const logs = await run({}, async ({ output }) => {
        const args = argsOf(output());
        expect(args.slice(0, 2)).toEqual(['--kubeconfig', testKubeconfigPath()]);
        expect(args[2]).toBe('--webhook-cert-dir');
        expect(args[4]).toBe('--webhook-port');
        certDir = args[3]!;
        // A directory of this session (mkdtemp), named after the project: never a fixed path two projects would share.
        expect(certDir).toMatch(new RegExp(`^${tmpdir().replaceAll('/', '\\/')}\\/kubeloop-dev-${basename(hooked)}-\\w{6}$`));
        expect(existsSync(join(certDir, 'tls.crt')) && existsSync(join(certDir, 'tls.key'))).toBe(true);
        const url = await kubectl(['get', 'validatingwebhookconfiguration', configuration, '-o', 'jsonpath={.webhooks[0].clientConfig.url}']);
        expect(url.stdout).toBe(`https://127.0.0.1:${args[5]}/validate-${group.replaceAll('.', '-')}-v1-gizmo`);
      });
      expect(logs).toContain(`webhooks removed: ${configuration}`);
      expect((await kubectl(['get', 'validatingwebhookconfiguration', configuration])).stderr).toContain('NotFound');
      expect(existsSync(certDir)).toBe(false);
    }, 6 * 60_000);

    it('installs none with the operator\'s --no-webhooks, nor with webhooks: false (the operator then gets --no-webhooks)', async () => {
      await run({ args: ['--no-webhooks'] }, async ({ output }) => {
        expect(argsOf(output())).toEqual(['--kubeconfig', testKubeconfigPath(), '--no-webhooks']);
        expect((await kubectl(['get', 'validatingwebhookconfiguration', configuration])).stderr).toContain('NotFound');
      });
      const logs = await run({ webhooks: false }, async ({ output }) => {
        expect(argsOf(output())).toEqual(['--kubeconfig', testKubeconfigPath(), '--no-webhooks']);
        expect((await kubectl(['get', 'validatingwebhookconfiguration', configuration])).stderr).toContain('NotFound');
      });
      expect(logs).toContain('webhooks not served (webhooks: false): the operator runs with --no-webhooks');
    }, 6 * 60_000);

    it('against an API server that is not on this machine installs none, runs the operator with --no-webhooks, and says why', async () => {
      // The shared control plane reached through this machine's non-loopback address (a TCP relay: TLS end to end), as a remote cluster is.
      const address = Object.values(networkInterfaces()).flat().find((a) => a?.family === 'IPv4' && !a.internal)?.address;
      expect(address, 'a non-loopback IPv4 address').toBeDefined();
      const kubeconfig = parse(await readFile(testKubeconfigPath(), 'utf8')) as { clusters: { cluster: Record<string, string> }[] };
      const upstream = new URL(kubeconfig.clusters[0]!.cluster['server']!);
      const open = new Set<Socket>();
      const relay = createServer((socket) => {
        const up = connect(Number(upstream.port), upstream.hostname);
        open.add(socket).add(up);
        socket.on('error', () => up.destroy());
        up.on('error', () => socket.destroy());
        socket.pipe(up).pipe(socket);
      });
      await new Promise<void>((r) => relay.listen(0, address, () => r()));
      const remote = `https://${address}:${(relay.address() as AddressInfo).port}`;
      const path = join(hooked, 'remote.kubeconfig');
      await writeFile(path, stringify({ ...kubeconfig, clusters: kubeconfig.clusters.map((c) => ({ ...c, cluster: { ...c.cluster, server: remote, 'tls-server-name': 'localhost' } })) }));
      try {
        const logs = await run({ kubeconfig: path }, async ({ output }) => {
          expect(argsOf(output())).toEqual(['--kubeconfig', path, '--no-webhooks']);
          expect((await kubectl(['get', 'validatingwebhookconfiguration', configuration])).stderr).toContain('NotFound');
        });
        expect(logs).toContain(
          `the API server at ${remote} is not on this machine and cannot call webhooks served here: the operator runs with --no-webhooks (nothing is admitted or converted by them). ` +
            'To run them: kubeloop dev --envtest (a local control plane), or deploy the operator to the cluster (pnpm run deploy)',
        );
      } finally {
        relay.close();
        for (const socket of open) socket.destroy();
      }
    }, 6 * 60_000);
  });
});
