/**
 * From nothing to a running operator, as a new user gets there (issue 13):
 * every public package published to a real npm registry (Verdaccio, on
 * loopback, third-party packages proxied to the registry npm is configured
 * with; test/support/registry-setup.ts starts it and publishes once per run),
 * then outside this workspace `pnpm create kubeloop demo`, `pnpm install` (no
 * overrides, no links), `pnpm build`, `pnpm generate:check`, `pnpm test` (the
 * project's own tests against its own envtest), and the built operator run
 * against this run's shared control plane until it reconciles the sample.
 * registry-docs.test.ts walks every command of the docs against the same
 * registry, side by side with this file.
 *
 * Each step's wall time is printed at the end and written to
 * .tmp/e2e-registry-times.json. It is slow (minutes: an install through the
 * proxy, builds, a second control plane), so it runs only when
 * KUBELOOP_E2E_REGISTRY=1 (scripts/test.sh sets it); otherwise its tests are
 * reported skipped, under a suite name that says what turns them on.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createClient, loadKubeConfig, mergePatch } from '@kubeloop/client';
import { installWebhooks } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { testKubeConfig } from '../support/env.js';
import { freePort, httpsGet, startConnectProxy } from '../support/net.js';
import { MINUTE, ok, publicPackages, publishedRegistry, reportSteps, run, stepTimer, userEnv } from '../support/registry.js';
import type { E2eRegistry, Published } from '../support/registry.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const enabled = process.env['KUBELOOP_E2E_REGISTRY'] === '1';
const { steps, timed } = stepTimer();

describe.skipIf(!enabled)('a new user, from a registry to a running operator (KUBELOOP_E2E_REGISTRY=1)', () => {
  let work: string;
  let registry: E2eRegistry & Published;
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
    registry = await publishedRegistry();
    env = userEnv({ npm_config_userconfig: registry.npmrc, npm_config_registry: registry.url, npm_config_cache_dir: join(work, 'pnpm-cache') });
  }, 25 * MINUTE);

  afterAll(() => {
    // The registry's own steps (started, packed and published by test/support/registry-setup.ts) first.
    reportSteps(root, 'e2e-registry-times.json', 'e2e registry', [...(registry?.steps ?? []), ...steps]);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('packs every public package complete and publishes it', async () => {
    expect(publicPackages(root).map((p) => p.manifest.name)).toContain('create-kubeloop');
    expect(registry.packages.map((p) => p.name)).toEqual(publicPackages(root).map((p) => p.manifest.name));
    for (const { name, tarball, packOutput } of registry.packages) {
      const entries = (await ok('tar', ['-tzf', tarball], { cwd: work, env, timeoutMs: MINUTE })).split('\n').filter(Boolean);
      expect(entries, `${name}; pack said:\n${packOutput}`).toContain('package/LICENSE');
      expect(entries, name).toContain('package/package.json');
      expect(entries.some((e) => /^package\/dist\/.*\.js$/.test(e)), `${name} ships dist/*.js`).toBe(true);
      expect(entries.some((e) => /^package\/dist\/.*\.d\.ts$/.test(e)), `${name} ships dist/*.d.ts`).toBe(true);
      expect(entries.filter((e) => e.includes('tsbuildinfo')), name).toEqual([]);
      if (name === 'create-kubeloop') {
        expect(entries).toContain('package/templates/src/main.ts');
        expect(entries).toContain('package/templates/_gitignore');
      }
      // The packed manifest has real ranges, never workspace: ones.
      const packedManifest = await ok('tar', ['-xzOf', tarball, 'package/package.json'], { cwd: work, env, timeoutMs: MINUTE });
      expect(packedManifest, name).not.toContain('workspace:');
    }
    for (const p of registry.packages) {
      const meta = (await (await fetch(`${registry.url}${p.name.replace('/', '%2f')}`)).json()) as { versions?: Record<string, unknown> };
      expect(Object.keys(meta.versions ?? {}), p.name).toContain(p.version);
    }
  }, 5 * MINUTE);

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

  it('pnpm generate built it, it typechecks and lints, and the committed CRD is what kubeloop generate crds writes', async () => {
    // pnpm generate compiled and bundled the project as pnpm build does (its script begins with the build's two steps;
    // pnpm build itself ran on the new project above): tsc's output (what `pnpm run dev` runs) and the bundle of it
    // (what `pnpm start` and the image run)
    expect(readFileSync(join(project, 'package.json'), 'utf8')).toContain('"generate": "tsc -p tsconfig.json && rolldown -c rolldown.config.mjs && ');
    expect(existsSync(join(project, 'dist', 'main.js'))).toBe(true);
    expect(existsSync(join(project, 'dist', 'apis', 'blog.js'))).toBe(true); // the kind create api added
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
    /** Applies a file's objects; with `namespace`, its namespaced ones there instead of where the file says. */
    const apply = async (file: string, namespace?: string) => {
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
        const obj = doc.toJSON() as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
        if (namespace !== undefined && obj.metadata.namespace !== undefined) obj.metadata.namespace = namespace;
        await client.apply(obj, { force: true });
      }
    };
    // The Website sample in a namespace of this test's: registry-docs.test.ts's project, running beside this one, has
    // a Website kind too (another group) whose sample of the same name writes the same ConfigMap name in `default`.
    const sampleNamespace = `demo-sample-${Date.now().toString(36)}`;
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: sampleNamespace } });
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
          const applied = await apply(join(project, 'config', 'samples', 'website.yaml'), sampleNamespace).then(() => true, () => false);
          if (applied) break;
          if (Date.now() > deadline) throw new Error('the Website CRD was not served within 2 minutes');
          await new Promise((r) => setTimeout(r, 250));
        }
        for (;;) {
          const cm = await client.get(ConfigMap, { namespace: sampleNamespace, name: 'website-sample-site' }).catch(() => undefined);
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
});

