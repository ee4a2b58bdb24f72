/**
 * From nothing to a running operator, as a new user gets there (issue 13):
 * a real npm registry (Verdaccio, on loopback, third-party packages proxied to
 * the registry npm is configured with), every public package published to it
 * as a registry would serve it, then outside this workspace
 * `pnpm create kubeloop demo`, `pnpm install` (no overrides, no links),
 * `pnpm build`, `pnpm generate:check`, `pnpm test` (the project's own tests
 * against its own envtest), and the built operator run against this run's
 * shared control plane until it reconciles the sample.
 *
 * Each step's wall time is printed at the end and written to
 * .tmp/e2e-registry-times.json. It is slow (minutes: packing every package,
 * an install through the proxy, a second control plane), so it runs only when
 * KUBELOOP_E2E_REGISTRY=1 (scripts/test.sh sets it); otherwise its tests
 * are reported skipped, under a suite name that says what turns them on.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createClient, loadKubeConfig, mergePatch } from '@kubeloop/client';
import { installWebhooks } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { LONG_RUNNING, NOT_IN_WALKTHROUGH, WALKTHROUGH_FILES, WALKTHROUGH_PROJECT, commandsOf } from '../support/doc-commands.js';
import type { DocCommand } from '../support/doc-commands.js';
import { testKubeConfig } from '../support/env.js';
import { freePort, httpsGet, startConnectProxy } from '../support/net.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const enabled = process.env['KUBELOOP_E2E_REGISTRY'] === '1';
const MINUTE = 60_000;

interface Step {
  readonly step: string;
  readonly ms: number;
  /** A step on the path from an empty directory to a reconciling operator with a webhook (summed at the end). */
  readonly path?: true;
}
const steps: Step[] = [];

async function timed<T>(step: string, fn: () => Promise<T>, path = false): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } finally {
    steps.push({ step, ms: Math.round(performance.now() - started), ...(path ? { path: true as const } : {}) });
  }
}

interface RunResult {
  readonly code: number | null;
  readonly output: string;
}

/** Runs a command; resolves with its exit code and combined output (the tail of which goes into failures). */
function run(cmd: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-200_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} timed out after ${options.timeoutMs} ms; output:\n${output.slice(-4000)}`));
    }, options.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

async function ok(cmd: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<string> {
  const result = await run(cmd, args, options);
  if (result.code !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${options.cwd}) exited ${result.code}:\n${result.output.slice(-6000)}`);
  return result.output;
}


/** The environment of a user's shell: none of this vitest run's or pnpm's own variables. */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|VITEST|TEST$|NODE_ENV$|NODE_OPTIONS$|KUBECONFIG$)/i.test(key)) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

const publicPackages = readdirSync(join(root, 'packages'))
  .filter((d) => existsSync(join(root, 'packages', d, 'package.json')))
  .map((d) => ({ dir: join(root, 'packages', d), manifest: JSON.parse(readFileSync(join(root, 'packages', d, 'package.json'), 'utf8')) as { name: string; version: string; private?: boolean } }))
  .filter((p) => !p.manifest.private);


/** cert-manager's Certificate CRD, trimmed to what the tests use: a kind the projects do not own, vendored as docs/schema.md says. */
const vendored = [
  'apiVersion: apiextensions.k8s.io/v1',
  'kind: CustomResourceDefinition',
  'metadata: { name: certificates.cert-manager.io }',
  'spec:',
  '  group: cert-manager.io',
  '  scope: Namespaced',
  '  names: { plural: certificates, singular: certificate, kind: Certificate, listKind: CertificateList, shortNames: [cert, certs] }',
  '  versions:',
  '    - name: v1',
  '      served: true',
  '      storage: true',
  '      subresources: { status: {} }',
  '      schema:',
  '        openAPIV3Schema:',
  '          type: object',
  '          required: [spec]',
  '          properties:',
  '            spec:',
  '              type: object',
  '              required: [secretName, issuerRef]',
  '              properties:',
  '                secretName: { type: string }',
  '                dnsNames: { type: array, items: { type: string } }',
  '                issuerRef: { type: object, required: [name], properties: { name: { type: string }, kind: { type: string } } }',
  '            status: { type: object, x-kubernetes-preserve-unknown-fields: true }',
  '',
].join('\n');

describe.skipIf(!enabled)('a new user, from a registry to a running operator (KUBELOOP_E2E_REGISTRY=1)', () => {
  let work: string;
  let registry: string;
  let verdaccio: ReturnType<typeof spawn> | undefined;
  let npmrc: string;
  let env: NodeJS.ProcessEnv;
  let project: string;
  /**
   * Whether this machine lets us give the operator a pod's view: a mount
   * namespace (root, or unprivileged user namespaces) where the service
   * account's files are mounted where a pod has them. Else the run uses a
   * kubeconfig holding the same token, and says so in the test's name.
   */
  const inClusterStyle = spawnSync('unshare', ['--mount', 'sh', '-c', 'mount -t tmpfs tmpfs /run'], { stdio: 'ignore' }).status === 0;
  /** How the demo's image runs the operator: its Dockerfile's ENTRYPOINT (`node`, the shipped flags, the entry file). */
  const dockerEntrypoint = (): string[] => JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(join(project, 'Dockerfile'), 'utf8'))![1]!) as string[];
  /** A `node --import` preload appending the URL of every module the process loads to KUBELOOP_MODULE_LOG. */
  const recordModules = join(root, 'examples', 'harddisk-operator', 'test', 'fixtures', 'record-modules.mjs');

  /** A token of a ServiceAccount (TokenRequest, 10 minutes), as the kubelet mounts one in a pod. */
  const serviceAccountToken = async (client: ReturnType<typeof createClient>, namespace: string, name: string): Promise<string> =>
    (await client.subResource('token').create<{ status: { token: string } }>({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { namespace, name } }, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } })).status.token;

  /**
   * The built operator as the demo's image runs it (its Dockerfile's ENTRYPOINT: node, the
   * shipped flags, the bundle dist/operator.js; NODE_ENV=production), started as a
   * ServiceAccount holding `token`, with `flags`: in a pod's view where the machine allows one
   * (inClusterStyle), else with a kubeconfig holding the token. `dir` names the directory under
   * the run's work directory that holds the mounted service account files. With `moduleLog`,
   * every module the process loads is appended to that file (record-modules.mjs).
   */
  function startAsServiceAccount(token: string, flags: readonly string[], dir: string, moduleLog?: string): { operator: ChildProcess; logs: () => string } {
    const [node, ...args] = dockerEntrypoint();
    const command = [node!, ...(moduleLog ? ['--import', recordModules] : []), ...args];
    const recording = moduleLog ? { KUBELOOP_MODULE_LOG: moduleLog } : {};
    const admin = parseAllDocuments(readFileSync(inject('kubeconfigPath'), 'utf8'))[0]!.toJSON() as { clusters: { cluster: { server: string; 'certificate-authority-data'?: string; 'certificate-authority'?: string } }[]; users: { name: string; user: Record<string, unknown> }[] };
    let operator: ChildProcess;
    if (inClusterStyle) {
      // As in a pod: the service account's token, CA and namespace mounted at
      // /var/run/secrets/kubernetes.io/serviceaccount (in a mount namespace of its own,
      // over a private tmpfs on /run), KUBERNETES_SERVICE_HOST/PORT set, no kubeconfig anywhere:
      // the scaffold's main finds the cluster as it would in the cluster.
      const cluster = admin.clusters[0]!.cluster;
      const serviceAccount = join(work, dir);
      mkdirSync(serviceAccount);
      writeFileSync(join(serviceAccount, 'token'), token);
      writeFileSync(join(serviceAccount, 'namespace'), 'demo-system');
      writeFileSync(join(serviceAccount, 'ca.crt'), cluster['certificate-authority-data'] ? Buffer.from(cluster['certificate-authority-data'], 'base64') : readFileSync(cluster['certificate-authority']!));
      const server = new URL(cluster.server);
      const mountAndRun = 'mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && mount --bind "$SA_DIR" /run/secrets/kubernetes.io/serviceaccount && exec "$@"';
      operator = spawn('unshare', ['--mount', 'sh', '-c', mountAndRun, 'operator', ...command, ...flags], {
        cwd: project,
        env: { ...env, ...recording, NODE_ENV: 'production', HOME: join(work, 'nohome'), KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port, POD_NAMESPACE: 'demo-system', SA_DIR: serviceAccount },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } else {
      // No mount namespace here: the admin kubeconfig with its user swapped for the ServiceAccount's token.
      const saKubeconfig = join(work, `${dir}-kubeconfig.yaml`);
      writeFileSync(saKubeconfig, JSON.stringify({ ...admin, users: admin.users.map((u) => ({ name: u.name, user: { token } })) }));
      operator = spawn(command[0]!, [...command.slice(1), '--kubeconfig', saKubeconfig, ...flags], { cwd: project, env: { ...env, ...recording, NODE_ENV: 'production', POD_NAMESPACE: 'demo-system' }, stdio: ['ignore', 'pipe', 'pipe'] });
    }
    let logs = '';
    operator.stdout?.on('data', (c: Buffer) => (logs += c.toString()));
    operator.stderr?.on('data', (c: Buffer) => (logs += c.toString()));
    return { operator, logs: () => logs };
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'kubeloop-e2e-'));
    const upstream = (await ok('npm', ['config', 'get', 'registry'], { cwd: work, env: userEnv({}), timeoutMs: MINUTE })).trim();
    const port = await freePort();
    registry = `http://127.0.0.1:${port}/`;
    const config = join(work, 'verdaccio.yaml');
    writeFileSync(
      config,
      [
        `storage: ${join(work, 'storage')}`,
        'auth:',
        '  htpasswd:',
        `    file: ${join(work, 'htpasswd')}`,
        'uplinks:',
        '  upstream:',
        `    url: ${upstream}`,
        '    timeout: 60s',
        'packages:',
        // Ours are served only from here, never from the uplink.
        "  '@kubeloop/*':",
        '    access: $all',
        '    publish: $authenticated',
        "  'create-kubeloop':",
        '    access: $all',
        '    publish: $authenticated',
        "  '**':",
        '    access: $all',
        '    publish: $authenticated',
        '    proxy: upstream',
        'max_body_size: 200mb',
        'log: { type: stdout, format: pretty, level: warn }',
        '',
      ].join('\n'),
    );
    await timed('start Verdaccio 6.8.0', async () => {
      const bin = join(root, 'test', 'node_modules', '.bin', 'verdaccio');
      const log = createWriteStream(join(work, 'verdaccio.log'));
      verdaccio = spawn(bin, ['--config', config, '--listen', `127.0.0.1:${port}`], { cwd: work, env: userEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
      verdaccio.stdout?.pipe(log);
      verdaccio.stderr?.pipe(log);
      const deadline = Date.now() + 2 * MINUTE;
      for (;;) {
        const up = await fetch(`${registry}-/ping`).then((r) => r.ok, () => false);
        if (up) break;
        if (verdaccio.exitCode !== null) throw new Error(`verdaccio exited ${verdaccio.exitCode}: ${readFileSync(join(work, 'verdaccio.log'), 'utf8').slice(-3000)}`);
        if (Date.now() > deadline) throw new Error('verdaccio did not answer /-/ping within 2 minutes');
        await new Promise((r) => setTimeout(r, 250));
      }
    });
    // A user, as `npm adduser` would create one; its token goes in the npmrc.
    const res = await fetch(`${registry}-/user/org.couchdb.user:e2e`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'e2e', password: 'e2e-password-1', type: 'user', roles: [], date: new Date().toISOString() }),
    });
    const { token } = (await res.json()) as { token?: string };
    if (!res.ok || !token) throw new Error(`verdaccio did not create a user: ${res.status}`);
    npmrc = join(work, 'npmrc');
    writeFileSync(npmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
    env = userEnv({ npm_config_userconfig: npmrc, npm_config_registry: registry, npm_config_cache_dir: join(work, 'pnpm-cache') });
  }, 5 * MINUTE);

  afterAll(async () => {
    verdaccio?.kill('SIGTERM');
    const lines = steps.map((s) => `  ${s.step.padEnd(58)} ${(s.ms / 1000).toFixed(1).padStart(7)} s`);
    const total = steps.reduce((sum, s) => sum + s.ms, 0);
    // Machine time from an empty directory to an operator reconciling with its webhook: the steps marked
    // path (create, install, create api, generate types, create webhook, generate, which builds, run), not the
    // checks this test adds between them (generate:check, typecheck, lint, tests, the earlier runs).
    const path = steps.filter((s) => s.path);
    const pathMs = path.reduce((sum, s) => sum + s.ms, 0);
    process.stdout.write(
      `\n[e2e registry] step times:\n${lines.join('\n')}\n  ${'total'.padEnd(58)} ${(total / 1000).toFixed(1).padStart(7)} s\n` +
        `  ${'empty directory -> reconciling operator with a webhook'.padEnd(58)} ${(pathMs / 1000).toFixed(1).padStart(7)} s (${path.length} steps: ${path.map((s) => s.step).join('; ')})\n`,
    );
    mkdirSync(join(root, '.tmp'), { recursive: true });
    writeFileSync(join(root, '.tmp', 'e2e-registry-times.json'), `${JSON.stringify({ steps, totalMs: total, emptyDirectoryToWebhookOperatorMs: pathMs }, null, 2)}\n`);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('packs every public package complete and publishes it', async () => {
    expect(publicPackages.map((p) => p.manifest.name)).toContain('create-kubeloop');
    const tarballs = join(work, 'tarballs');
    mkdirSync(tarballs);
    const packed: { dir: string; name: string; version: string; tarball: string }[] = [];
    for (const { dir, manifest } of publicPackages) {
      const out = await timed(`pack ${manifest.name} (prepack: tsc -b)`, () => ok('pnpm', ['pack', '--pack-destination', tarballs], { cwd: dir, env, timeoutMs: 5 * MINUTE }));
      const tarball = readdirSync(tarballs).find((f) => f.startsWith(`${manifest.name.replace('@', '').replace('/', '-')}-${manifest.version}.tgz`));
      expect(tarball, `${manifest.name} tarball; pack said:\n${out}`).toBeDefined();
      const entries = (await ok('tar', ['-tzf', join(tarballs, tarball!)], { cwd: work, env, timeoutMs: MINUTE })).split('\n').filter(Boolean);
      expect(entries, manifest.name).toContain('package/LICENSE');
      expect(entries, manifest.name).toContain('package/package.json');
      expect(entries.some((e) => /^package\/dist\/.*\.js$/.test(e)), `${manifest.name} ships dist/*.js`).toBe(true);
      expect(entries.some((e) => /^package\/dist\/.*\.d\.ts$/.test(e)), `${manifest.name} ships dist/*.d.ts`).toBe(true);
      expect(entries.filter((e) => e.includes('tsbuildinfo')), manifest.name).toEqual([]);
      if (manifest.name === 'create-kubeloop') {
        expect(entries).toContain('package/templates/src/main.ts');
        expect(entries).toContain('package/templates/_gitignore');
      }
      // The packed manifest has real ranges, never workspace: ones.
      const packedManifest = await ok('tar', ['-xzOf', join(tarballs, tarball!), 'package/package.json'], { cwd: work, env, timeoutMs: MINUTE });
      expect(packedManifest, manifest.name).not.toContain('workspace:');
      packed.push({ dir, name: manifest.name, version: manifest.version, tarball: join(tarballs, tarball!) });
    }
    // Publishing is network-bound: all at once.
    await timed(`publish ${packed.length} packages (pnpm publish, concurrently)`, () =>
      Promise.all(packed.map((p) => ok('pnpm', ['publish', p.tarball, '--registry', registry, '--no-git-checks'], { cwd: p.dir, env, timeoutMs: 5 * MINUTE }))),
    );
    for (const p of packed) {
      const meta = (await (await fetch(`${registry}${p.name.replace('/', '%2f')}`)).json()) as { versions?: Record<string, unknown> };
      expect(Object.keys(meta.versions ?? {}), p.name).toContain(p.version);
    }
  }, 30 * MINUTE);

  it('pnpm create kubeloop demo, outside the workspace', async () => {
    const users = join(work, 'home');
    mkdirSync(users);
    await timed('pnpm create kubeloop demo', () => ok('pnpm', ['create', 'kubeloop', 'demo'], { cwd: users, env, timeoutMs: 5 * MINUTE }), true);
    project = join(users, 'demo');
    expect(existsSync(join(project, 'src', 'main.ts'))).toBe(true);
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; pnpm?: unknown };
    expect(manifest.pnpm).toBeUndefined(); // no overrides
    expect(manifest.dependencies['@kubeloop/manager']).toMatch(/^\^\d/);
  }, 10 * MINUTE);

  it('pnpm install from the registry (no overrides, no links)', async () => {
    await timed('pnpm install (demo)', () => ok('pnpm', ['install'], { cwd: project, env, timeoutMs: 15 * MINUTE }), true);
    const lock = readFileSync(join(project, 'pnpm-lock.yaml'), 'utf8');
    // Every package resolved from the registry: no link:, file: or workspace: versions.
    expect(lock).not.toMatch(/(specifier|version): (link|file|workspace):/);
    expect(lock).toContain("'@kubeloop/manager@");
  }, 20 * MINUTE);

  it('the new project\'s generated files are current: pnpm build, pnpm generate:check (CRDs and RBAC)', async () => {
    await timed('pnpm build + generate:check (new demo)', async () => {
      await ok('pnpm', ['build'], { cwd: project, env, timeoutMs: 5 * MINUTE });
      await ok('pnpm', ['generate:check'], { cwd: project, env, timeoutMs: 5 * MINUTE });
    });
  }, 10 * MINUTE);

  it('kubeloop create api adds a kind, and pnpm generate writes its CRD and the role', async () => {
    const out = await timed('kubeloop create api (demo: Blog)', () => ok('pnpm', ['exec', 'kubeloop', 'create', 'api', '--group', 'demo.example.com', '--version', 'v1', '--kind', 'Blog'], { cwd: project, env, timeoutMs: MINUTE }), true);
    expect(out).toContain('created src/apis/blog.ts');
    await timed('pnpm generate (demo)', () => ok('pnpm', ['generate'], { cwd: project, env, timeoutMs: 5 * MINUTE }));
    expect(readFileSync(join(project, 'config', 'crd', 'blogs.demo.example.com.yaml'), 'utf8')).toContain('kind: Blog');
    // kubeloop generate rbac (in pnpm generate) read the new controller: the role now reads Blogs and writes their status.
    const role = readFileSync(join(project, 'config', 'rbac', 'role.yaml'), 'utf8');
    expect(role).toContain('#   demo.example.com blogs get,list,watch: controller blog reconciles Blog');
    expect(role).toContain('- blogs/status');
  }, 10 * MINUTE);

  it('pnpm build, and the committed CRD is what kubeloop generate crds writes', async () => {
    await timed('pnpm build (demo)', () => ok('pnpm', ['build'], { cwd: project, env, timeoutMs: 5 * MINUTE }));
    // tsc's output (what `pnpm run dev` runs) and the bundle of it (what `pnpm start` and the image run).
    expect(existsSync(join(project, 'dist', 'main.js'))).toBe(true);
    expect(existsSync(join(project, 'dist', 'operator.js'))).toBe(true);
    await timed('pnpm typecheck (demo, src + test)', () => ok('pnpm', ['typecheck'], { cwd: project, env, timeoutMs: 5 * MINUTE }));
    // The kind create api added lints clean under the scaffold's eslint.config.js (typescript-eslint, type-aware).
    await timed('pnpm lint (demo, src + test)', () => ok('pnpm', ['lint'], { cwd: project, env, timeoutMs: 5 * MINUTE }));
    await timed('pnpm generate:check (demo)', () => ok('pnpm', ['generate:check'], { cwd: project, env, timeoutMs: 5 * MINUTE }));
  }, 15 * MINUTE);

  it('the generated manifests pass server-side dry-run on the API server', async () => {
    const client = createClient({ kubeConfig: loadKubeConfig(inject('kubeconfigPath')), fieldOwner: 'e2e-registry' });
    const docs = (dir: string) =>
      readdirSync(join(project, 'config', dir))
        .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
        .flatMap((f) => parseAllDocuments(readFileSync(join(project, 'config', dir, f), 'utf8')).map((d) => ({ file: `config/${dir}/${f}`, obj: d.toJSON() as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } } })));
    const all = ['crd', 'rbac', 'manager'].flatMap(docs);
    expect(all.map((d) => d.obj.kind)).toEqual(expect.arrayContaining(['CustomResourceDefinition', 'ClusterRole', 'Role', 'ServiceAccount', 'ClusterRoleBinding', 'RoleBinding', 'Deployment', 'Service', 'Namespace']));
    // A dry-run create in a namespace that does not exist is refused, so the Namespace is made for real.
    for (const { obj } of all.filter((d) => d.obj.kind === 'Namespace')) await client.apply(obj, { force: true });
    const refused: string[] = [];
    for (const { file, obj } of all.filter((d) => d.obj.kind !== 'Namespace')) {
      await client.apply(obj, { force: true, dryRun: true }).catch((err: unknown) => refused.push(`${file} ${obj.kind}/${obj.metadata.name}: ${err instanceof Error ? err.message : String(err)}`));
    }
    expect(refused).toEqual([]);
  }, 5 * MINUTE);

  it('pnpm test of the generated project passes against envtest', async () => {
    const which = JSON.parse(await ok('node', [join(root, 'packages', 'envtest', 'dist', 'cli.js'), 'which'], { cwd: root, env, timeoutMs: MINUTE })) as { kubeApiserver: string; etcd: string };
    // KUBEBUILDER_ASSETS holds both binaries, as setup-envtest lays them out.
    const assets = join(work, 'assets');
    mkdirSync(assets);
    await ok('ln', ['-s', which.kubeApiserver, join(assets, 'kube-apiserver')], { cwd: work, env, timeoutMs: MINUTE });
    await ok('ln', ['-s', which.etcd, join(assets, 'etcd')], { cwd: work, env, timeoutMs: MINUTE });
    const output = await timed('pnpm test (demo, its own envtest)', () => ok('pnpm', ['test'], { cwd: project, env: { ...env, KUBEBUILDER_ASSETS: assets }, timeoutMs: 10 * MINUTE }));
    // Website on envtest (5, the last auditing every request the manager made against the generated role) and on the fake (2), Blog on the fake (1).
    expect(stripVTControlCharacters(output)).toMatch(/Tests\s+8 passed \(8\)/);
  }, 15 * MINUTE);

  it('--leader-elect outside a cluster without a Lease namespace stops at once, saying which flag to pass', async () => {
    const result = await run('node', ['dist/operator.js', '--kubeconfig', inject('kubeconfigPath'), '--leader-elect'], { cwd: project, env, timeoutMs: MINUTE });
    expect(result.code).toBe(2);
    expect(result.output).toContain('--leader-elect outside a cluster needs --leader-election-namespace');
  }, 2 * MINUTE);

  it('configuration mistakes stop the operator at once with one line saying what to fix, no stack trace', async () => {
    for (const [args, says] of [
      [['--kubeconfig', join(work, 'no-such-kubeconfig')], `demo: kubeconfig ${join(work, 'no-such-kubeconfig')} does not exist`],
      [['--kubeconfig', inject('kubeconfigPath'), '--health-probe-bind-address', 'nonsense'], 'demo: bind address "nonsense" is not valid'],
      [['--frobnicate'], "demo: Unknown option '--frobnicate'"],
    ] as const) {
      const result = await run('node', ['dist/operator.js', ...args], { cwd: project, env, timeoutMs: MINUTE });
      expect(result.code).toBe(2);
      expect(result.output.trim().split('\n')).toEqual([expect.stringContaining(says)]);
    }
  }, 2 * MINUTE);

  it('an auth-provider kubeconfig (gcp): the bundle loads @kubernetes/client-node, which the project does not list, and sends its token', async () => {
    // The admin kubeconfig with its user swapped for a gcp auth provider holding an access token an hour from
    // expiry: client-node's provider sends it as is (oidc is done by kubeloop itself), and this API server answers 401.
    const admin = parseAllDocuments(readFileSync(inject('kubeconfigPath'), 'utf8'))[0]!.toJSON() as { users: { name: string }[] };
    const gcpKubeconfig = join(work, 'gcp-kubeconfig.yaml');
    writeFileSync(gcpKubeconfig, JSON.stringify({ ...admin, users: admin.users.map((u) => ({ name: u.name, user: { 'auth-provider': { name: 'gcp', config: { 'access-token': 'ya29.not-a-real-token', expiry: new Date(Date.now() + 3600_000).toISOString() } } } })) }));
    const operator = spawn('node', ['dist/operator.js', '--kubeconfig', gcpKubeconfig, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let logs = '';
    operator.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    operator.stderr.on('data', (c: Buffer) => (logs += c.toString()));
    try {
      const deadline = Date.now() + MINUTE;
      while (!logs.includes('401 Unauthorized')) {
        if (operator.exitCode !== null) throw new Error(`the operator exited ${operator.exitCode}:\n${logs.slice(-4000)}`);
        if (Date.now() > deadline) throw new Error(`no request of the operator was answered 401 within a minute:\n${logs.slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      operator.kill('SIGTERM');
      await new Promise((r) => operator.once('close', r));
    }
    expect(logs).not.toMatch(/Cannot find (module|package)/);
  }, 2 * MINUTE);

  it('the built operator reconciles its sample', async () => {
    const kubeconfigPath = inject('kubeconfigPath');
    const kubeConfig = loadKubeConfig(kubeconfigPath);
    const client = createClient({ kubeConfig, fieldOwner: 'e2e-registry' });
    const apply = async (file: string) => {
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
        const obj = doc.toJSON() as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
        await client.apply(obj, { force: true });
      }
    };
    await apply(join(project, 'config', 'crd', 'websites.demo.example.com.yaml'));
    await apply(join(project, 'config', 'crd', 'blogs.demo.example.com.yaml')); // the kind create api added
    const metricsPort = await freePort();
    const probePort = await freePort();
    // The bundle reads the kubeconfig file with the js-yaml of @kubeloop/client: the project need not list it.
    expect(Object.keys((JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies)).not.toContain('js-yaml');
    const operator = spawn('node', ['dist/operator.js', '--kubeconfig', kubeconfigPath, '--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-probe-bind-address', `127.0.0.1:${probePort}`, '--leader-elect', '--leader-election-namespace', 'default'], {
      cwd: project,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let logs = '';
    operator.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    operator.stderr.on('data', (c: Buffer) => (logs += c.toString()));
    try {
      await timed('operator: start → sample reconciled (ConfigMap written)', async () => {
        // The CRD may take a moment to be served; apply the sample until it is accepted.
        const deadline = Date.now() + 2 * MINUTE;
        for (;;) {
          const applied = await apply(join(project, 'config', 'samples', 'website.yaml')).then(() => true, () => false);
          if (applied) break;
          if (Date.now() > deadline) throw new Error('the Website CRD was not served within 2 minutes');
          await new Promise((r) => setTimeout(r, 250));
        }
        for (;;) {
          const cm = await client.get(ConfigMap, { namespace: 'default', name: 'website-sample-site' }).catch(() => undefined);
          if (cm?.data?.['index.html']?.includes('Hello from demo')) break;
          if (Date.now() > deadline) throw new Error(`the operator did not write the sample's ConfigMap; its logs:\n${logs.slice(-4000)}`);
          if (operator.exitCode !== null) throw new Error(`the operator exited ${operator.exitCode}:\n${logs.slice(-4000)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      });
      // The kind create api added is reconciled too: its sample reports Ready.
      await timed('operator: Blog sample (from create api) Ready', async () => {
        const deadline = Date.now() + 2 * MINUTE;
        for (;;) {
          await apply(join(project, 'config', 'samples', 'blog.yaml')).catch(() => undefined);
          const blog = (await client.get({ apiVersion: 'demo.example.com/v1', kind: 'Blog' }, { namespace: 'default', name: 'blog-sample' }).catch(() => undefined)) as { status?: { conditions?: { type: string; status: string }[] } } | undefined;
          if (blog?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) break;
          if (Date.now() > deadline) throw new Error(`the Blog sample did not become Ready; the operator's logs:\n${logs.slice(-4000)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      });
      const ready = await fetch(`http://127.0.0.1:${probePort}/readyz`);
      expect(ready.status).toBe(200);
      // Secure metrics by default: HTTPS (self-signed, so not verified here), 401 without a token,
      // 200 for a ServiceAccount bound to the scaffold's metrics-reader ClusterRole.
      expect((await httpsGet(`https://127.0.0.1:${metricsPort}/metrics`)).status).toBe(401);
      await apply(join(project, 'config', 'rbac', 'metrics-reader-role.yaml'));
      const sa = await client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'prometheus-e2e', namespace: 'default' } });
      await client.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'demo-metrics-reader-e2e' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'demo-metrics-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'prometheus-e2e', namespace: 'default' }],
      });
      const token = (await client.subResource('token').create<{ status: { token: string } }>({ ...sa, apiVersion: 'v1', kind: 'ServiceAccount' }, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } })).status.token;
      const scraped = await httpsGet(`https://127.0.0.1:${metricsPort}/metrics`, { token });
      expect(scraped.status).toBe(200);
      expect(scraped.body).toContain('controller_runtime_reconcile_total');
      // Not a terminal: JSON lines.
      expect(logs.split('\n').find((l) => l.includes('starting demo'))).toMatch(/^\{.*"msg":"starting demo"/);
    } finally {
      operator.kill('SIGTERM');
      await new Promise((r) => operator.once('close', r));
    }
  }, 10 * MINUTE);

  it('a proxy-url kubeconfig: the bundle loads hpagent from @kubeloop/client, which the project does not list, and its caches sync through the proxy', async () => {
    // A loopback HTTP CONNECT proxy that records its tunnels, and the admin kubeconfig with proxy-url pointing at it.
    const proxy = await startConnectProxy();
    const admin = parseAllDocuments(readFileSync(inject('kubeconfigPath'), 'utf8'))[0]!.toJSON() as { clusters: { name: string; cluster: Record<string, unknown> }[] };
    const proxied = join(work, 'proxy-kubeconfig.yaml');
    writeFileSync(proxied, JSON.stringify({ ...admin, clusters: admin.clusters.map((c) => ({ name: c.name, cluster: { ...c.cluster, 'proxy-url': proxy.url } })) }));
    const operator = spawn('node', ['dist/operator.js', '--kubeconfig', proxied, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let logs = '';
    operator.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    operator.stderr.on('data', (c: Buffer) => (logs += c.toString()));
    try {
      const deadline = Date.now() + MINUTE;
      while (!logs.includes('caches synced')) {
        if (operator.exitCode !== null) throw new Error(`the operator exited ${operator.exitCode}:\n${logs.slice(-4000)}`);
        if (Date.now() > deadline) throw new Error(`the operator's caches did not sync through the proxy within a minute:\n${logs.slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      operator.kill('SIGTERM');
      await new Promise((r) => operator.once('close', r));
      await proxy.close();
    }
    expect(logs).not.toMatch(/Cannot find (module|package)/);
    expect(proxy.tunnels.length).toBeGreaterThan(0);
    expect(new Set(proxy.tunnels)).toEqual(new Set([new URL(admin.clusters[0]!.cluster['server'] as string).host]));
  }, 2 * MINUTE);

  it(`the operator, as its image runs it (the bundle), runs as its ServiceAccount under the generated RBAC alone (a TokenRequest token, ${inClusterStyle ? 'in-cluster: KUBERNETES_SERVICE_HOST and the mounted service account' : 'in a kubeconfig: no mount namespace on this machine'})`, async () => {
    const kubeconfigPath = inject('kubeconfigPath');
    const client = createClient({ kubeConfig: loadKubeConfig(kubeconfigPath), fieldOwner: 'e2e-registry' });
    const apply = async (file: string) => {
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) await client.apply(doc.toJSON() as { apiVersion: string; kind: string; metadata: { name: string } }, { force: true });
    };
    await apply(join(project, 'config', 'manager', 'namespace.yaml'));
    for (const f of readdirSync(join(project, 'config', 'rbac')).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')) await apply(join(project, 'config', 'rbac', f));
    const tokenOf = (namespace: string, name: string) => serviceAccountToken(client, namespace, name);
    const metricsPort = await freePort();
    const probePort = await freePort();
    const moduleLog = join(work, 'serviceaccount-modules.log');
    const { operator, logs } = startAsServiceAccount(await tokenOf('demo-system', 'demo-manager'), ['--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-probe-bind-address', `127.0.0.1:${probePort}`, '--leader-elect'], 'serviceaccount', moduleLog);
    try {
      await timed('operator as its ServiceAccount: a Website reconciled', async () => {
        await client.apply({ apiVersion: 'demo.example.com/v1', kind: 'Website', metadata: { name: 'as-sa', namespace: 'default' }, spec: { title: 'Least privilege' } }, { force: true });
        const deadline = Date.now() + 2 * MINUTE;
        for (;;) {
          const cm = await client.get(ConfigMap, { namespace: 'default', name: 'as-sa-site' }).catch(() => undefined);
          if (cm?.data?.['index.html']?.includes('Least privilege')) break;
          if (Date.now() > deadline) throw new Error(`the operator did not reconcile as its ServiceAccount; its logs:\n${logs().slice(-4000)}`);
          if (operator.exitCode !== null) throw new Error(`the operator exited ${operator.exitCode}:\n${logs().slice(-4000)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      });
      expect((await fetch(`http://127.0.0.1:${probePort}/readyz`)).status).toBe(200);
      // It found the cluster the way it was meant to.
      if (inClusterStyle) expect(logs()).toContain('"source":"in-cluster service account (/var/run/secrets/kubernetes.io/serviceaccount)"');
      // Secure metrics need the operator's own TokenReview and SubjectAccessReview rights (config/rbac/role.yaml).
      const scraped = await httpsGet(`https://127.0.0.1:${metricsPort}/metrics`, { token: await tokenOf('default', 'prometheus-e2e') });
      expect(scraped.status).toBe(200);
      expect(logs()).not.toMatch(/forbidden/i);
    } finally {
      operator.kill('SIGTERM');
      await new Promise((r) => operator.once('close', r));
    }
    // As the image runs it: one bundled module, not tsc's output and the 600-odd modules it imports
    // one by one (rolldown's runtime helpers may come as a small file of their own, shared with the
    // chunk read only for auth-provider kubeconfigs); from node_modules only js-yaml, and only when a
    // kubeconfig file is read.
    const files = readFileSync(moduleLog, 'utf8').split('\n').filter((l) => l.startsWith('file:')).map((url) => fileURLToPath(url));
    const bundle = join(project, 'dist', 'operator.js');
    expect(files).toContain(bundle);
    const jsYaml = files.filter((f) => /\/node_modules\/.*\/js-yaml\//.test(f));
    expect(jsYaml.length > 0, files.join('\n')).toBe(!inClusterStyle);
    const rest = files.filter((f) => f !== bundle && !jsYaml.includes(f));
    expect(rest.length, files.join('\n')).toBeLessThanOrEqual(1);
    for (const f of rest) {
      expect(relative(project, f)).toMatch(/^dist\/operator-[\w-]+\.js$/);
      expect(statSync(f).size).toBeLessThan(16 * 1024);
    }
  }, 10 * MINUTE);

  it('on a terminal the operator logs pretty lines (pino-pretty), not JSON', async () => {
    // util-linux `script` gives the operator a pseudo-terminal as stdout.
    // pino-pretty stays outside the bundle (rolldown.config.mjs): loaded from the project's node_modules.
    const command = `node dist/operator.js --kubeconfig ${inject('kubeconfigPath')} --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0`;
    const operator = spawn('script', ['-qec', command, '/dev/null'], { cwd: project, env: { ...env, TERM: 'xterm' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let logs = '';
    operator.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    operator.stderr.on('data', (c: Buffer) => (logs += c.toString()));
    try {
      await timed('operator on a TTY: first pretty log line', async () => {
        const deadline = Date.now() + MINUTE;
        while (!logs.includes('starting demo')) {
          if (operator.exitCode !== null) throw new Error(`script exited ${operator.exitCode}: ${logs.slice(-3000)}`);
          if (Date.now() > deadline) throw new Error(`no "starting demo" line within a minute: ${logs.slice(-3000)}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      });
      const line = stripVTControlCharacters(logs.split('\n').find((l) => l.includes('starting demo'))!);
      expect(line).not.toMatch(/^\s*\{/);
      expect(line).toMatch(/INFO.*starting demo/);
      expect(logs.includes('\u001b[')).toBe(true); // coloured (ANSI escapes)
    } finally {
      process.kill(-operator.pid!, 'SIGTERM');
      await new Promise((r) => operator.once('close', r));
    }
  }, 5 * MINUTE);
  // Issue 25's Done-when: the demo grows a webhook and a kind it does not own, as a user adds them
  // (the steps of the scaffold's README: generate types from a vendored CRD, a controller for it,
  // create webhook), is deployed from its generated manifests (a server-side dry run, the image set
  // at deploy time) and runs under its generated role with the API server calling its webhook.
  it('an operator with a webhook and a foreign kind: generate types from cert-manager\'s vendored CRD, a controller for Certificates, create webhook --defaulting --programmatic-validation, pnpm generate', async () => {
    // cert-manager's own CRD, where the scaffold's README keeps kinds you do not own (not config/crd: not yours, not deployed).
    mkdirSync(join(project, 'vendor', 'crds'), { recursive: true });
    writeFileSync(join(project, 'vendor', 'crds', 'certificates.cert-manager.io.yaml'), readFileSync(join(root, 'packages', 'create-kubeloop', 'test', 'fixtures', 'crds', 'certificates.cert-manager.io.yaml')));
    const types = await timed('kubeloop generate types vendor/crds/ (demo: cert-manager Certificate)', () => ok('pnpm', ['exec', 'kubeloop', 'generate', 'types', 'vendor/crds/', '--out', 'src/generated'], { cwd: project, env, timeoutMs: MINUTE }), true);
    expect(stripVTControlCharacters(types)).toMatch(/1 kind\(s\)/);
    expect(readFileSync(join(project, 'src', 'generated', 'certificates.cert-manager.io.ts'), 'utf8')).toContain('"foreign": true');

    // What the user writes: a controller for Certificates (reads them, writes a ConfigMap of each one's DNS names),
    // registered in setupControllers, the kind added to main's scheme.
    writeFileSync(
      join(project, 'src', 'controllers', 'certificate-controller.ts'),
      [
        '/** cert-manager\'s Certificates (a kind this project does not own): the DNS names of each, in a ConfigMap beside it. */',
        "import { isNotFound } from '@kubeloop/client';",
        "import { Result, createOrUpdate } from '@kubeloop/manager';",
        "import type { Manager } from '@kubeloop/manager';",
        "import { ConfigMap } from '@kubeloop/scheme';",
        "import { Certificate } from '../generated/certificates.cert-manager.io.js';",
        '',
        '/** Registers the Certificate controller: it only reads Certificates, and writes ConfigMaps. */',
        'export function setupCertificateController(manager: Manager): void {',
        '  manager',
        '    .controller()',
        "    .named('certificate')",
        '    .for(Certificate)',
        "    .withPermissions({ resource: ConfigMap, verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] })",
        '    .complete(async (request) => {',
        '      const certificate = await manager.client.get(Certificate, { namespace: request.namespace!, name: request.name }).catch((err: unknown) => {',
        '        if (isNotFound(err)) return undefined;',
        '        throw err;',
        '      });',
        '      if (!certificate) return Result.done();',
        "      const cm: ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${request.name}-dns-names`, namespace: request.namespace! } };",
        '      await createOrUpdate(manager.client, cm, (c) => {',
        "        c.data = { dnsNames: (certificate.spec?.dnsNames ?? []).join(',') };",
        '      });',
        '      return Result.done();',
        '    });',
        '}',
        '',
      ].join('\n'),
    );
    const edit = (file: string, change: (text: string) => string) => {
      const before = readFileSync(join(project, file), 'utf8');
      const after = change(before);
      expect(after, `the edit of ${file} changed nothing`).not.toBe(before);
      writeFileSync(join(project, file), after);
    };
    edit('src/controllers/index.ts', (t) =>
      t
        .replace('// kubeloop:scaffold:imports', "import { setupCertificateController } from './certificate-controller.js';\n// kubeloop:scaffold:imports")
        .replace('  // kubeloop:scaffold:controllers', '  setupCertificateController(manager);\n  // kubeloop:scaffold:controllers'),
    );
    edit('src/main.ts', (t) =>
      t.replace('// kubeloop:scaffold:imports', "import { Certificate } from './generated/certificates.cert-manager.io.js';\n// kubeloop:scaffold:imports").replace(' /* kubeloop:scaffold:kinds */', ', Certificate /* kubeloop:scaffold:kinds */'),
    );

    const created = await timed('kubeloop create webhook (demo: Blog, --defaulting --programmatic-validation)', () =>
      ok('pnpm', ['exec', 'kubeloop', 'create', 'webhook', '--group', 'demo.example.com', '--version', 'v1', '--kind', 'Blog', '--defaulting', '--programmatic-validation'], { cwd: project, env, timeoutMs: MINUTE }), true);
    expect(created).toContain('src/webhooks/blog-webhook.ts');
    // The webhook's bodies, as the user fills them in: a message defaulted when left empty, markup refused.
    edit('src/webhooks/blog-webhook.ts', (t) =>
      t
        .replace("import { Blog } from '../apis/index.js';", "import { fieldError } from '@kubeloop/webhook';\nimport { Blog } from '../apis/index.js';")
        .replace('    void obj; // nothing to default yet', "    obj.spec.message ||= 'Hello from the defaulter';")
        .replace('    void obj; // no checks yet', "    if (obj.spec.message.includes('<')) errors.push(fieldError.invalid('spec.message', obj.spec.message, 'must not hold markup'));"),
    );

    const generated = await timed('pnpm generate (demo: CRDs, role, webhooks)', () => ok('pnpm', ['generate'], { cwd: project, env, timeoutMs: 5 * MINUTE }), true);
    // No CRD of ours for cert-manager's kind (src/generated is not a kind module, and the kind is marked foreign);
    // reads alone on it in the role, no status verbs.
    expect(generated).toContain('kubeloop: wrote config/webhook/manifests.yaml: 2 webhook(s) (mutating Blog, validating Blog)');
    expect(readdirSync(join(project, 'config', 'crd')).filter((f) => f.includes('cert-manager'))).toEqual([]);
    const role = parseAllDocuments(readFileSync(join(project, 'config', 'rbac', 'role.yaml'), 'utf8')).map((d) => d.toJSON() as { kind: string; rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[] });
    const certRules = role.filter((d) => d.kind === 'ClusterRole').flatMap((d) => d.rules ?? []).filter((r) => r.apiGroups.includes('cert-manager.io'));
    expect(certRules).toEqual([{ apiGroups: ['cert-manager.io'], resources: ['certificates'], verbs: ['get', 'list', 'watch'] }]);
    const webhookDocs = parseAllDocuments(readFileSync(join(project, 'config', 'webhook', 'manifests.yaml'), 'utf8')).map((d) => d.toJSON() as { kind: string; metadata: { name: string }; webhooks?: { clientConfig: { service?: { name: string; namespace: string } } }[] });
    const configurations = webhookDocs.filter((d) => d.kind.endsWith('WebhookConfiguration'));
    expect(configurations.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual(['MutatingWebhookConfiguration/demo-mutating-webhook-configuration', 'ValidatingWebhookConfiguration/demo-validating-webhook-configuration']);
    expect(configurations.flatMap((d) => d.webhooks ?? []).map((w) => w.clientConfig.service)).toEqual([expect.objectContaining({ name: 'demo-webhook-service', namespace: 'demo-system' }), expect.objectContaining({ name: 'demo-webhook-service', namespace: 'demo-system' })]);

    // pnpm generate built dist/ (tsc, which type-checked the user's code and the generated types, then the bundle): the next test runs it.
  }, 20 * MINUTE);

  it('deploys from the generated manifests: IMG=... pnpm run deploy -- --dry-run server (kustomize config/default, webhooks included)', async () => {
    const kubeconfigPath = inject('kubeconfigPath');
    // deploy applies the namespace first; a dry run on a cluster without it checks its objects in default (deploy.test.ts).
    // The earlier tests applied the roles of role.yaml as field manager e2e-registry, and the Certificate controller
    // has changed their rules since: a server-side apply by another manager (deploy's) would conflict on them. As on
    // a cluster the project was never deployed to, they go first (the next test applies them again).
    await ok('kubectl', ['delete', '--ignore-not-found', '-f', 'config/rbac/role.yaml'], { cwd: project, env: { ...env, KUBECONFIG: kubeconfigPath }, timeoutMs: MINUTE });
    const out = await timed('IMG=registry.example.com/demo:0.1.0 pnpm run deploy -- --dry-run server', () =>
      ok('pnpm', ['run', 'deploy', '--', '--dry-run', 'server'], { cwd: project, env: { ...env, IMG: 'registry.example.com/demo:0.1.0', KUBECONFIG: kubeconfigPath }, timeoutMs: 5 * MINUTE }));
    for (const object of [
      'customresourcedefinition.apiextensions.k8s.io/blogs.demo.example.com',
      'customresourcedefinition.apiextensions.k8s.io/websites.demo.example.com',
      'serviceaccount/demo-manager',
      'clusterrole.rbac.authorization.k8s.io/demo-manager',
      'deployment.apps/demo-manager',
      'service/demo-webhook-service',
      'validatingwebhookconfiguration.admissionregistration.k8s.io/demo-validating-webhook-configuration',
      'mutatingwebhookconfiguration.admissionregistration.k8s.io/demo-mutating-webhook-configuration',
    ]) {
      expect(out, out).toContain(`${object} serverside-applied (server dry run)`);
    }
    // cert-manager's CRD is not the project's to deploy.
    expect(out).not.toContain('certificates.cert-manager.io');
  }, 10 * MINUTE);

  it(`the operator with its webhook runs under the generated role (${inClusterStyle ? 'in-cluster service account' : 'a kubeconfig with the ServiceAccount\'s token'}): a Blog defaulted, one refused, a Certificate reconciled, no 403`, async () => {
    const kubeconfigPath = inject('kubeconfigPath');
    const client = createClient({ kubeConfig: loadKubeConfig(kubeconfigPath), fieldOwner: 'e2e-registry' });
    const apply = async (docs: readonly { apiVersion: string; kind: string; metadata: { name: string } }[]) => {
      for (const doc of docs) await client.apply(doc, { force: true });
    };
    const docsOf = (file: string) => parseAllDocuments(readFileSync(join(project, file), 'utf8')).map((d) => d.toJSON() as { apiVersion: string; kind: string; metadata: { name: string } });
    // What deploy applies for the operator's rights: the namespace, config/rbac and the certificate roles of the
    // generated webhook manifests; the project's CRDs; cert-manager's CRD, as a cluster with cert-manager has it.
    await apply(docsOf('config/manager/namespace.yaml'));
    for (const f of readdirSync(join(project, 'config', 'rbac')).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')) await apply(docsOf(`config/rbac/${f}`));
    await apply(docsOf('config/webhook/manifests.yaml').filter((d) => !d.kind.endsWith('WebhookConfiguration')));
    for (const f of readdirSync(join(project, 'config', 'crd')).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')) await apply(docsOf(`config/crd/${f}`));
    const kubectlEnv = { ...env, KUBECONFIG: kubeconfigPath };
    await ok('kubectl', ['apply', '--server-side', '-f', 'vendor/crds'], { cwd: project, env: kubectlEnv, timeoutMs: MINUTE });
    await ok('kubectl', ['wait', '--for', 'condition=Established', '--timeout', '60s', 'crd/certificates.cert-manager.io', 'crd/blogs.demo.example.com'], { cwd: project, env: kubectlEnv, timeoutMs: 2 * MINUTE });
    // The generated webhook configurations, pointed by envtest at this machine with a certificate for it
    // (what `kubeloop dev` does for a local run).
    const hooks = await installWebhooks(testKubeConfig(), { configurations: [join(project, 'config', 'webhook', 'manifests.yaml')] });
    const probePort = await freePort();
    const flags = ['--metrics-bind-address', `127.0.0.1:${await freePort()}`, '--health-probe-bind-address', `127.0.0.1:${probePort}`, '--leader-elect', '--webhook-port', String(hooks.port), '--webhook-cert-dir', hooks.certDir];
    const token = await serviceAccountToken(client, 'demo-system', 'demo-manager');
    const { operator, logs } = startAsServiceAccount(token, flags, 'serviceaccount-webhooks');
    const blog = (name: string) => client.get({ apiVersion: 'demo.example.com/v1', kind: 'Blog' }, { namespace: 'default', name }) as unknown as Promise<{ spec: { message?: string }; status?: { conditions?: { type: string; status: string }[] } }>;
    try {
      await timed('operator with its webhook, as its ServiceAccount: start → a Blog defaulted by its webhook, a Certificate reconciled', async () => {
        const deadline = Date.now() + 2 * MINUTE;
        // The mutating webhook fails closed until the operator serves it: create until the API server got an answer.
        let last: unknown;
        for (;;) {
          const created = await client.create({ apiVersion: 'demo.example.com/v1', kind: 'Blog', metadata: { name: 'defaulted', namespace: 'default' }, spec: {} }).then(() => true, (err: unknown) => ((last = err), false));
          if (created) break;
          if (operator.exitCode !== null) throw new Error(`the operator exited ${operator.exitCode}:\n${logs().slice(-4000)}`);
          if (Date.now() > deadline) throw new Error(`no Blog was admitted within 2 minutes (last: ${String(last)}); the operator's logs:\n${logs().slice(-4000)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
        await client.create({ apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'demo-cert', namespace: 'default' }, spec: { secretName: 'demo-cert-tls', dnsNames: ['demo.example.com', 'www.demo.example.com'], issuerRef: { name: 'selfsigned', kind: 'Issuer' } } });
        for (;;) {
          const cm = await client.get(ConfigMap, { namespace: 'default', name: 'demo-cert-dns-names' }).catch(() => undefined);
          if (cm?.data?.['dnsNames'] === 'demo.example.com,www.demo.example.com') break;
          if (operator.exitCode !== null) throw new Error(`the operator exited ${operator.exitCode}:\n${logs().slice(-4000)}`);
          if (Date.now() > deadline) throw new Error(`the Certificate was not reconciled; the operator's logs:\n${logs().slice(-4000)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      }, true);
      // Stored as the defaulter left it, and reconciled by the Blog controller.
      expect((await blog('defaulted')).spec.message).toBe('Hello from the defaulter');
      const deadline = Date.now() + 2 * MINUTE;
      while (!(await blog('defaulted')).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
        if (Date.now() > deadline) throw new Error(`the defaulted Blog did not become Ready:\n${logs().slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      // Refused by the validator, with its field error, on create and on update; nothing stored.
      const refusal = /admission webhook "[^"]+" denied the request: .*spec\.message: Invalid value: "<b>bold<\/b>": must not hold markup/;
      await expect(client.create({ apiVersion: 'demo.example.com/v1', kind: 'Blog', metadata: { name: 'markup', namespace: 'default' }, spec: { message: '<b>bold</b>' } })).rejects.toThrow(refusal);
      await expect(blog('markup')).rejects.toThrow(/not found/);
      await expect(client.patch({ apiVersion: 'demo.example.com/v1', kind: 'Blog', metadata: { name: 'defaulted', namespace: 'default' } }, mergePatch({ spec: { message: '<b>bold</b>' } }))).rejects.toThrow(refusal);
      expect((await fetch(`http://127.0.0.1:${probePort}/readyz`)).status).toBe(200);
      if (inClusterStyle) expect(logs()).toContain('"source":"in-cluster service account (/var/run/secrets/kubernetes.io/serviceaccount)"');
      // Every request it made was allowed by the generated role.
      expect(logs()).not.toMatch(/forbidden|\b403\b/i);
    } finally {
      await hooks.uninstall();
      operator.kill('SIGTERM');
      if (operator.exitCode === null && operator.signalCode === null) await new Promise((r) => operator.once('close', r));
    }
  }, 10 * MINUTE);

  it(`every command of ${WALKTHROUGH_FILES.join(', ')}, exactly as written, in a new project (${WALKTHROUGH_PROJECT})`, async () => {
    // A user's machine: ~/.kube/config is this run's control plane, so `--kubeconfig ~/.kube/config` and
    // kubectl reach it; ~/.cache is the real one (envtest's binaries, pnpm's metadata), the pnpm store too.
    const home = join(work, 'doc-home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeFileSync(join(home, '.kube', 'config'), readFileSync(inject('kubeconfigPath')));
    symlinkSync(join(homedir(), '.cache'), join(home, '.cache'));
    const store = (await ok('pnpm', ['store', 'path'], { cwd: work, env, timeoutMs: MINUTE })).trim();
    const docEnv: NodeJS.ProcessEnv = { ...env, HOME: home, npm_config_store_dir: store };
    const users = join(work, 'doc-user');
    mkdirSync(users);
    // What the docs say is there before their commands: kinds we do not own, their CRDs vendored
    // (schema.md: `generate types vendor/crds/`) and installed in the cluster (`--cluster --group cert-manager.io`).
    const setup: Record<string, (dir: string) => Promise<void>> = {
      'docs/schema.md': async (dir) => {
        mkdirSync(join(dir, 'vendor', 'crds'), { recursive: true });
        writeFileSync(join(dir, 'vendor', 'crds', 'certificates.cert-manager.io.yaml'), vendored);
        await ok('kubectl', ['apply', '--server-side', '-f', join(dir, 'vendor', 'crds')], { cwd: dir, env: docEnv, timeoutMs: MINUTE });
      },
    };
    // What the cluster would do after a command, where envtest cannot: it runs no pods, so the operator that
    // `pnpm run deploy` installed never runs, and `pnpm run undeploy` leaves the Websites it finalized (the sample)
    // holding their finalizer and the deleted CRD Terminating for good. On a cluster the deployed operator
    // finalizes them as its Deployment goes; here the walk does it for the operator, and waits until the CRD is
    // gone, so the next block (`pnpm run dev` installing the CRD again) starts from what a cluster would have.
    const after: Record<string, (dir: string) => Promise<void>> = {
      'pnpm run undeploy': async (dir) => {
        const crd = 'customresourcedefinition/websites.website-operator.example.com';
        const names = await run('kubectl', ['get', 'websites.website-operator.example.com', '-A', '-o', "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{'\\n'}{end}"], { cwd: dir, env: docEnv, timeoutMs: MINUTE });
        for (const line of names.code === 0 ? names.output.split('\n').filter((l) => l.includes('/')) : []) {
          const [namespace, name] = line.trim().split('/');
          await run('kubectl', ['-n', namespace!, 'patch', 'websites.website-operator.example.com', name!, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], { cwd: dir, env: docEnv, timeoutMs: MINUTE });
        }
        const gone = await run('kubectl', ['wait', '--for=delete', crd, '--timeout=120s'], { cwd: dir, env: docEnv, timeoutMs: 3 * MINUTE });
        expect(gone.code, `after pnpm run undeploy, ${crd} was not deleted:\n${gone.output}`).toBe(0);
      },
    };
    // Commands another doc repeats that run again all the same: what they make is gone by then (the sample,
    // after `pnpm run undeploy` took its CRD), and the block that repeats them needs it (the README's webhook
    // block reads the sample as v2). Idempotent, so running them twice on an unchanged cluster is harmless.
    const RUN_AGAIN = new Set(['kubectl apply -f config/samples/website.yaml']);
    // What a command's output must show, besides exiting 0.
    const expected: Record<string, RegExp> = {
      'pnpm test': /Tests\s+\d+ passed/,
      'kubectl auth can-i patch websites.website-operator.example.com --subresource=status --as system:serviceaccount:website-operator-system:website-operator-manager -A': /^yes/m,
      'kubectl auth can-i get /metrics --as system:serviceaccount:monitoring:prometheus-k8s': /^yes/m,
      // The API server converted the sample (stored as v1) through the local operator's /convert.
      'kubectl get websites.v2.website-operator.example.com website-sample -o yaml': /^apiVersion: website-operator\.example\.com\/v2$/m,
      "kubectl -n website-operator-system get deployment website-operator-manager -o jsonpath='{.spec.template.spec.containers[0].image}'": /^registry\.example\.com\/website-operator:0\.1\.0$/,
      'pnpm exec kubeloop generate types vendor/crds/ --out src/generated': /1 kind\(s\)/,
    };
    let cwd = users;
    const ran = new Map<string, string>();
    const stopGroup = async (child: ChildProcess): Promise<void> => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const closed = new Promise((r) => child.once('close', r));
      process.kill(-child.pid!, 'SIGTERM');
      const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 40_000);
      await closed;
      clearTimeout(timer);
    };
    for (const file of WALKTHROUGH_FILES) {
      // The scaffold's README as the new project has it (the published template, rendered).
      const source = file.includes('/templates/') ? join(users, WALKTHROUGH_PROJECT, 'README.md') : join(root, file);
      const commands = commandsOf(file, readFileSync(source, 'utf8'));
      await setup[file]?.(join(users, WALKTHROUGH_PROJECT));
      const blocks = new Map<number, DocCommand[]>();
      for (const c of commands) blocks.set(c.block, [...(blocks.get(c.block) ?? []), c]);
      for (const block of blocks.values()) {
        const background: { child: ChildProcess; output: () => string; command: DocCommand }[] = [];
        try {
          for (const command of block) {
            const where = `${command.file}:${command.line}: ${command.text}`;
            if (command.text in NOT_IN_WALKTHROUGH) continue;
            const cd = /^cd (\S+)$/.exec(command.text);
            if (cd) {
              cwd = resolve(cwd, cd[1]!);
              continue;
            }
            // Run once per walk when another doc repeats it (the scaffold's README repeats getting-started);
            // within one doc every step runs, state changes between them (pnpm generate after create api).
            // A long-running command runs again: the rest of its block needs it (`pnpm run dev` serving the webhooks).
            const long = LONG_RUNNING[command.text];
            const before = ran.get(command.text);
            if (before !== undefined && before !== command.file && !long && !RUN_AGAIN.has(command.text)) continue;
            if (long) {
              const child = spawn('bash', ['-c', command.text], { cwd, env: docEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
              let output = '';
              child.stdout.on('data', (d: Buffer) => (output += d.toString()));
              child.stderr.on('data', (d: Buffer) => (output += d.toString()));
              background.push({ child, output: () => output, command });
              await timed(`doc: ${command.text}`, async () => {
                const deadline = Date.now() + 3 * MINUTE;
                while (!long.ready.test(stripVTControlCharacters(output))) {
                  if (child.exitCode !== null) throw new Error(`${where} exited ${child.exitCode}:\n${output.slice(-4000)}`);
                  if (Date.now() > deadline) throw new Error(`${where} did not print ${long.ready} within 3 minutes:\n${output.slice(-4000)}`);
                  await new Promise((r) => setTimeout(r, 200));
                }
              });
              ran.set(command.text, command.file);
              continue;
            }
            const result = await timed(`doc: ${command.text}`, () => run('bash', ['-c', command.text], { cwd, env: docEnv, timeoutMs: 10 * MINUTE }));
            expect(result.code, `${where} (in ${cwd}):\n${result.output.slice(-6000)}`).toBe(0);
            const want = expected[command.text];
            if (want) expect(stripVTControlCharacters(result.output), where).toMatch(want);
            await after[command.text]?.(cwd);
            ran.set(command.text, command.file);
          }
          // A block that started the operator and applied the sample: the sample is reconciled before the operator stops.
          if (background.some((b) => b.command.text.includes('pnpm start')) && block.some((c) => c.text.includes('config/samples/website.yaml'))) {
            const deadline = Date.now() + 2 * MINUTE;
            while ((await run('kubectl', ['get', 'configmap', 'website-sample-site', '-n', 'default'], { cwd, env: docEnv, timeoutMs: MINUTE })).code !== 0) {
              if (Date.now() > deadline) throw new Error(`the operator started by the docs did not reconcile the sample:\n${background.map((b) => b.output()).join('\n').slice(-4000)}`);
              await new Promise((r) => setTimeout(r, 250));
            }
          }
        } finally {
          for (const b of background.reverse()) await stopGroup(b.child);
        }
      }
    }
    // Everything the walkthrough files ask for ran, but for what NOT_IN_WALKTHROUGH says why not.
    const asked = WALKTHROUGH_FILES.flatMap((f) => commandsOf(f, readFileSync(f.includes('/templates/') ? join(users, WALKTHROUGH_PROJECT, 'README.md') : join(root, f), 'utf8')));
    expect(asked.filter((c) => !ran.has(c.text) && !(c.text in NOT_IN_WALKTHROUGH) && !c.text.startsWith('cd ')).map((c) => `${c.file}:${c.line}: ${c.text}`)).toEqual([]);
  }, 40 * MINUTE);
});

