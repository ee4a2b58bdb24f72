/**
 * The README's main job, as built by tsc (decorators with emitted metadata:
 * the StorageClassCatalog dependency is resolved by its type): it installs
 * the CRD on the configured cluster, runs the operator, applies the sample,
 * logs the status turning Bound, and stops cleanly on SIGTERM (on an
 * existing cluster without loading envtest or client-node); serving no
 * webhook there, it installs the CRD serving v1 alone, taking an installed
 * CRD off webhook conversion, so kubectl's default version reads; with
 * --envtest on a control plane of its own, serving its webhooks so kubectl
 * works at either HardDisk version; with --shard-ring in two processes, as
 * docs/sharding.md runs it, each reconciles its own share of the disks and
 * one leads. The file's cluster is a control plane of
 * its own too (the shared one's CRD converts through a webhook other files use).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { parseBuckets, SHARD_HELD_ANNOTATION, SHARD_RING_LABEL } from '@kubeloop/leaderelection';
import { builtinScheme, Lease } from '@kubeloop/scheme';
import { selfSignedCertificate } from '@kubeloop/webhook';
import { documentedCommands } from '../../../test/support/doc-commands.js';
import { kubectl, kubectlOk } from '../../../test/support/kubectl.js';
import { HardDisk } from '../src/index.js';
import { startLogged, startLoggedCommand } from '../../../test/support/logged-process.js';
import type { LoggedOptions, Running } from '../../../test/support/logged-process.js';

const here = dirname(fileURLToPath(import.meta.url));
const main = join(here, '..', 'dist', 'main.js');
/** main.js bundled into one module by rolldown (rolldown.config.mjs): what scripts/dev.sh runs. */
const bundle = join(here, '..', 'dist', 'operator.js');
const crdDir = join(here, '..', 'crd');
/** dist/main.js (or `entry`, the bundle) as a child process. */
const startMain = (args: readonly string[], options: LoggedOptions & { entry?: string } = {}): Running => startLogged(options.entry ?? main, args, options);
/** A documented command line as written, in the example's directory. */
const startCommand = (text: string, env: Record<string, string>): Running => startLoggedCommand(text, { cwd: join(here, '..'), env });

const sampleBound = (l: Record<string, unknown>): boolean => l['msg'] === 'sample-disk status' && l['phase'] === 'Bound';

/**
 * Node internals that only an ES import of node:fs (its lazy `promises`), node:crypto (`webcrypto`)
 * or node:util loads, none of which an operator uses: about 2 MiB of RSS (docs/architecture.md, "Builtins").
 */
const lazyBuiltinParts = (loaded: readonly string[]): string[] =>
  loaded.filter((line) => /^node-internal:internal\/(crypto\/webcrypto|fs\/promises|readline\/)/.test(line));

describe('harddisk-operator main', () => {
  // A control plane of its own: without --webhook-cert-dir main installs the CRD serving v1 alone,
  // while the shared plane's CRD is the webhook-converted one other test files use at the same time.
  let env: Environment;
  beforeAll(async () => {
    env = createEnvironment();
    await env.start();
  }, 240_000);
  afterAll(async () => {
    await env.stop();
  });

  /** kubectl as a user who has not used this cluster before: no cached discovery (it would name a version the CRD no longer serves). */
  const fresh = async (args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => {
    const cache = await mkdtemp(join(tmpdir(), 'kubectl-cache-'));
    try {
      return await kubectl(['--cache-dir', cache, ...args], { kubeconfig: env.kubeconfigPath });
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  };
  /** The CRD's conversion strategy and which versions it serves, as `None v1=true v2=false`. */
  const served = async (): Promise<string[]> =>
    (await fresh(['get', 'crd', 'harddisks.crd-demo.io', '-o', 'jsonpath={.spec.conversion.strategy} {range .spec.versions[*]}{.name}={.served} {end}'])).stdout.trim().split(' ').sort();
  const synced = (l: Record<string, unknown>): boolean => l['msg'] === 'caches synced; starting workers';
  /** main.js without a sample, until its controller runs; then stopped. */
  const runUntilSynced = async (): Promise<void> => {
    const op = startMain(['--kubeconfig', env.kubeconfigPath, '--no-sample', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0']);
    try {
      await op.until(synced);
    } finally {
      op.kill();
    }
    expect(await op.exited).toBe(0);
  };
  const disk = (name: string): string => JSON.stringify({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name, namespace: 'default' }, spec: { size: '5Gi', storageClass: 'fast' } });

  it('on a cluster without the CRD, serving no webhook: it installs the CRD serving v1 alone, so kubectl get harddisks works for everyone', async () => {
    // The first test of the file, on a control plane nothing has touched: no CRD yet.
    expect((await fresh(['get', 'crd', 'harddisks.crd-demo.io'])).code).not.toBe(0);
    await runUntilSynced();
    expect(await served()).toEqual(['None', 'v1=true', 'v2=false']);
    // kubectl's default version is the highest served one: v1, read without any conversion.
    await kubectlOk(['apply', '--server-side', '-f', '-'], { kubeconfig: env.kubeconfigPath, stdin: disk('plain-disk') });
    const listed = await fresh(['get', 'harddisks', '-n', 'default', '-o', 'name']);
    expect(listed.stderr).toBe('');
    expect(listed.stdout).toContain('harddisk.crd-demo.io/plain-disk');
  });

  it('on a cluster whose CRD converts through a webhook nobody serves (kubectl apply -f crd/): it takes the CRD off the webhook, and kubectl get harddisks works again', async () => {
    // As a user who ran `kubectl apply --server-side -f crd/` has it: v2 served through the webhook
    // Service, which is not deployed, so reading a disk at v2 (kubectl's default) fails.
    await kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', crdDir], { kubeconfig: env.kubeconfigPath });
    expect(await served()).toEqual(['Webhook', 'v1=true', 'v2=true']);
    const broken = await fresh(['get', 'harddisks', '-n', 'default', '-o', 'name']);
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toContain('conversion webhook');
    await runUntilSynced();
    expect(await served()).toEqual(['None', 'v1=true', 'v2=false']);
    const crd = JSON.parse((await fresh(['get', 'crd', 'harddisks.crd-demo.io', '-o', 'json'])).stdout) as { spec: { conversion: Record<string, unknown> } };
    expect(crd.spec.conversion).toEqual({ strategy: 'None' });
    const listed = await fresh(['get', 'harddisks', '-n', 'default', '-o', 'name']);
    expect(listed.stderr).toBe('');
    expect(listed.stdout).toContain('harddisk.crd-demo.io/plain-disk');
  });

  it('reconciles the sample to Bound and exits 0 on SIGTERM', async () => {
    const op = startMain(['--kubeconfig', env.kubeconfigPath, '--replicas', '2', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0']);
    try {
      await op.until(sampleBound);
    } catch (err) {
      op.kill();
      throw err;
    }
    // Two replicas, one leader: exactly one of them reconciled.
    const reconcilers = new Set(op.lines.filter((l) => l['controller'] === 'harddisk' && l['reconcileID']).map((l) => l['replica']));
    expect(reconcilers.size).toBe(1);
    expect(op.lines.some((l) => l['msg'] === 'became leader; starting leader-only runnables')).toBe(true);
    op.kill();
    expect(await op.exited).toBe(0);
    expect(op.lines.at(-1)?.['msg']).toBe('operator stopped');
  });

  it('on an existing cluster behind an http:// kubeconfig: reconciles the sample without ever loading envtest, @kubernetes/client-node or Node\'s fetch (undici); discovery: one /api, one /apis', async () => {
    // The CRD in place, as an earlier test of this file leaves it (so discovery below is a restart's).
    if ((await fresh(['get', 'crd', 'harddisks.crd-demo.io'])).code !== 0) await runUntilSynced();
    // Plain HTTP on loopback, no insecure-skip-tls-verify: kubeloop's client accepts it (client-node refused it).
    await using proxy = await startApiProxy(env.kubeConfig);
    const dir = await mkdtemp(join(tmpdir(), 'harddisk-main-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const moduleLog = join(dir, 'modules.log');
    await writeFile(kubeconfig, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'proxy',
      clusters: [{ name: 'proxy', cluster: { server: proxy.url } }],
      users: [{ name: 'proxy', user: {} }],
      contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'proxy', namespace: 'default' } }],
    }));
    const op = startMain(['--kubeconfig', kubeconfig, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], {
      nodeArgs: ['--import', join(here, 'fixtures', 'record-modules.mjs')],
      env: { KUBELOOP_MODULE_LOG: moduleLog },
    });
    try {
      await op.until(sampleBound);
    } finally {
      op.kill();
    }
    expect(await op.exited).toBe(0);
    const loaded = (await readFile(moduleLog, 'utf8')).split('\n').filter(Boolean);
    // The recorder saw the operator's own modules, so an empty list cannot pass for a clean one.
    expect(loaded.some((url) => url.includes('/packages/manager/dist/'))).toBe(true);
    expect(loaded.some((url) => url.includes('/js-yaml/'))).toBe(true);
    expect(loaded.filter((url) => url.includes('@kubernetes/client-node') || url.includes('/packages/envtest/'))).toEqual([]);
    // Nor Node's fetch (undici, about 8 MiB of RSS), which an ES import of node:http used to load
    // through its lazy WebSocket getters; the internal list is there (node:https is, for one).
    expect(loaded).toContain('node-internal:https');
    expect(loaded.filter((line) => line.includes('undici'))).toEqual([]);
    expect(lazyBuiltinParts(loaded)).toEqual([]);
    // Tracing is off (no OTEL_* variable asks for it): no OpenTelemetry module, nor kubeloop's tracer, is loaded (docs/tracing.md, Cost).
    expect(loaded.filter((url) => /opentelemetry|otel-tracer/i.test(url))).toEqual([]);
    // The CRD went in through kubeloop's client: server-side apply, through this proxy.
    expect(proxy.count((r) => r.method === 'PATCH' && r.path === '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/harddisks.crd-demo.io')).toBe(1);
    // Discovery, the CRD installed already (as on every restart): the group lists once each (aggregated:
    // every resource), shared by the install, the manager, its event recorder and the sample; no
    // group-version document. (A first install reads /apis once more, to learn the new group.)
    const discovery = proxy.requests.filter((r) => r.method === 'GET' && /^\/api(\/[^/]+)?$|^\/apis(\/[^/]+){0,2}$/.test(r.path));
    expect(discovery.map((r) => r.path).sort()).toEqual(['/api', '/apis']);
  });

  it('dist/operator.js, the bundle scripts/dev.sh runs: reconciles the sample on an existing cluster as one module of its own, loading neither envtest nor client-node', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'harddisk-bundle-'));
    const moduleLog = join(dir, 'modules.log');
    const op = startMain(['--kubeconfig', env.kubeconfigPath, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], {
      entry: bundle,
      nodeArgs: ['--max-semi-space-size=1', '--no-opt', '--no-maglev', '--import', join(here, 'fixtures', 'record-modules.mjs')],
      env: { KUBELOOP_MODULE_LOG: moduleLog },
    });
    try {
      await op.until(sampleBound);
    } finally {
      op.kill();
    }
    expect(await op.exited).toBe(0);
    const loaded = (await readFile(moduleLog, 'utf8')).split('\n').filter(Boolean);
    await rm(dir, { recursive: true, force: true });
    // Its own code, the framework and typebox come from the one bundled file; what it still loads from
    // node_modules is what main requires at run time (js-yaml, to read the kubeconfig file).
    const files = loaded.filter((url) => url.startsWith('file:'));
    expect(files).toContain(pathToFileURL(bundle).href);
    expect(files.filter((url) => /\/packages\/[a-z-]+\/dist\/|\/typebox\/|\/examples\/harddisk-operator\/dist\/(?!operator\.js)/.test(url))).toEqual([]);
    expect(files.filter((url) => url.includes('@kubernetes/client-node') || url.includes('/envtest/'))).toEqual([]);
    expect(loaded.filter((line) => line.includes('undici'))).toEqual([]);
    expect(lazyBuiltinParts(loaded)).toEqual([]);
    // Tracing off: the tracer's chunk (the OpenTelemetry SDK) is never loaded (docs/tracing.md, Cost).
    expect(loaded.filter((url) => /opentelemetry|otel-tracer/i.test(url))).toEqual([]);
    // V8 keeps the script's source on the heap: ASCII only (one byte a character; one character past
    // Latin-1 makes it two) and without the packages' TSDoc (rolldown.config.mjs), 0.7 MB held, not 2.1.
    const source = await readFile(bundle, 'utf8');
    expect(source.match(/[^\t\n\r -~]/g) ?? []).toEqual([]);
    expect(source).not.toContain('@example');
  });

  it('--envtest (the README main job without a cluster): its own control plane, serving admission and conversion, so kubectl works at either version', async () => {
    const op = startMain(['--envtest', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0']);
    try {
      await op.until(sampleBound);
      const kubeconfig = op.lines.find((l) => typeof l['kubeconfig'] === 'string')?.['kubeconfig'] as string;
      // kubectl's default version is v2: answered through the operator's conversion webhook.
      const table = await kubectlOk(['get', 'harddisks', '-n', 'default'], { kubeconfig });
      expect(table).toMatch(/\nsample-disk\s+10\s+Gi\s+Bound/);
      expect(await kubectlOk(['get', 'harddisks.v1.crd-demo.io', 'sample-disk', '-n', 'default', '-o', 'jsonpath={.spec.size}'], { kubeconfig })).toBe('10Gi');
      // And the validating webhook refuses a bad disk at apply.
      const refused = await kubectl(['apply', '-f', '-'], { kubeconfig, stdin: JSON.stringify({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'bad', namespace: 'default' }, spec: { size: 'ten' } }) });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('spec.size: Invalid value: "ten": must be a quantity such as 10Gi');
    } finally {
      op.kill();
    }
    expect(await op.exited).toBe(0);
  });

  it('configuration mistakes end it with one line saying what to fix, exit status 2, no stack trace', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'harddisk-main-'));
    await writeFile(join(dir, 'bad.yaml'), 'clusters: [\n');
    const mistakes = [
      [['--kubeconfig', join(dir, 'missing')], `harddisk-operator: kubeconfig ${join(dir, 'missing')} does not exist`],
      [['--kubeconfig', join(dir, 'bad.yaml')], `harddisk-operator: kubeconfig ${join(dir, 'bad.yaml')} is not valid YAML`],
      [['--replicas', '3'], 'harddisk-operator: --replicas must be 1 or 2, not 3'],
      [['--frobnicate'], "harddisk-operator: Unknown option '--frobnicate'"],
      [['--kubeconfig', env.kubeconfigPath, '--no-sample', '--metrics-bind-address', 'nonsense'], 'harddisk-operator: bind address "nonsense" is not valid'],
      [['--kubeconfig', env.kubeconfigPath, '--shard-ring', 'Disks_1'], 'harddisk-operator: shard ring: name "Disks_1" must be a DNS label'],
      [['--kubeconfig', env.kubeconfigPath, '--shard-ring', 'disks', '--shard-lease-duration', '15'], 'harddisk-operator: --shard-lease-duration must be a duration such as 15s or 1500ms, not 15'],
      [['--kubeconfig', env.kubeconfigPath, '--shard-ring', 'disks', '--leader-elect'], 'harddisk-operator: --shard-ring replaces --leader-elect'],
      [['--envtest', '--shard-ring', 'disks'], 'harddisk-operator: --shard-ring needs a cluster the replicas share'],
      [['--kubeconfig', env.kubeconfigPath, '--shard-identity', 'a'], 'harddisk-operator: --shard-identity needs --shard-ring NAME'],
    ] as const;
    // All at once: each is a node start that ends at its first check (ten in a row took over a minute on a loaded machine).
    const ended = await Promise.all(
      mistakes.map(async ([args, says]) => {
        const op = startMain(args);
        return { says, code: await op.exited, lines: op.stderr().trim().split('\n') };
      }),
    );
    for (const { says, code, lines } of ended) {
      expect(code, says).toBe(2);
      expect(lines, says).toHaveLength(1);
      expect(lines[0]).toContain(says);
    }
    await rm(dir, { recursive: true, force: true });
  });

  it('a cluster it cannot use at start (refused, black-holed, wrong CA, token refused, forbidden, not a Kubernetes API): one line saying what and where, exit status 1, no stack trace', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'harddisk-unusable-'));
    const cluster = env.kubeConfig.getCurrentCluster()!;
    const admin = env.kubeConfig.getCurrentUser()!;
    const b64 = (data: string | undefined, file: string | undefined): string => data ?? readFileSync(file!).toString('base64');
    const ca = b64(cluster.caData, cluster.caFile);
    const adminUser = { 'client-certificate-data': b64(admin.certData, admin.certFile), 'client-key-data': b64(admin.keyData, admin.keyFile) };
    let n = 0;
    /** A kubeconfig file for `server`, with `clusterFields` and `user`. */
    const kubeconfig = async (server: string, clusterFields: Record<string, string>, user: Record<string, unknown>): Promise<string> => {
      const file = join(dir, `kubeconfig-${n++}`);
      await writeFile(file, JSON.stringify({
        apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
        clusters: [{ name: 'c', cluster: { server, ...clusterFields } }],
        users: [{ name: 'u', user }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u', namespace: 'default' } }],
      }));
      return file;
    };
    await using refused = await startApiProxy(env.kubeConfig);
    await refused.refuse();
    await using blackholed = await startApiProxy(env.kubeConfig);
    blackholed.blackhole(true);
    // An HTTP server that is not a Kubernetes API: 404 for every path.
    const notKube = createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found'));
    await new Promise<void>((resolve) => notKube.listen(0, '127.0.0.1', resolve));
    const notKubeUrl = `http://127.0.0.1:${(notKube.address() as AddressInfo).port}`;
    const otherCA = (await selfSignedCertificate({ hosts: ['127.0.0.1'] }).start(AbortSignal.timeout(10_000), () => undefined)).certPem;
    const cases: [string, string, string][] = [
      ['refused', await kubeconfig(refused.url, {}, {}), `harddisk-operator: cannot connect to the cluster at ${refused.url}`],
      ['black-holed', await kubeconfig(blackholed.url, {}, {}), `harddisk-operator: the cluster at ${blackholed.url} did not answer`],
      ['wrong CA', await kubeconfig(env.server, { 'certificate-authority-data': Buffer.from(otherCA).toString('base64') }, adminUser), `harddisk-operator: cannot talk to the cluster at ${env.server}: `],
      ['token refused', await kubeconfig(env.server, { 'certificate-authority-data': ca }, { token: 'not-a-token-this-cluster-knows' }), `harddisk-operator: the cluster at ${env.server} refused the kubeconfig's credentials (401 Unauthorized)`],
      ['forbidden', await kubeconfig(env.server, { 'certificate-authority-data': ca }, { ...adminUser, as: 'nobody-in-particular' }), `harddisk-operator: the cluster at ${env.server} does not let this user install or read the HardDisk CRD (403 Forbidden`],
      ['not a Kubernetes API', await kubeconfig(notKubeUrl, {}, {}), `harddisk-operator: ${notKubeUrl} does not answer as a Kubernetes API server`],
    ];
    try {
      const ended = await Promise.all(
        cases.map(async ([what, file, says]) => {
          const op = startMain(['--kubeconfig', file, '--no-sample', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0']);
          return { what, says, code: await op.exited, lines: op.stderr().trim().split('\n') };
        }),
      );
      for (const { what, says, code, lines } of ended) {
        expect({ what, code, lines }).toEqual({ what, code: 1, lines: [expect.stringContaining(says)] });
        expect(lines[0]).not.toMatch(/\.[cm]?[jt]s:\d+:\d+/); // no stack frame
      }
      const tls = ended.find((e) => e.what === 'wrong CA')!;
      expect(tls.lines[0]).toContain('TLS handshake failed');
    } finally {
      notKube.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('SIGTERM during start-up (--envtest, webhooks being served): a clean exit 0, and no key or control plane left in its temp dir', async () => {
    const scratch = await mkdtemp(join(tmpdir(), 'harddisk-tmp-'));
    const op = startMain(['--envtest', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], { env: { TMPDIR: scratch } });
    await op.until((l) => typeof l['kubeconfig'] === 'string'); // the control plane is up, the webhook certificate written
    expect(readdirSync(scratch).some((n) => n.startsWith('kubeloop-envtest-webhook-'))).toBe(true);
    op.kill();
    expect(await op.exited).toBe(0);
    expect(op.stderr()).toBe('');
    expect(op.lines.some((l) => String(l['msg']).includes('did not start serving'))).toBe(false);
    expect(readdirSync(scratch)).toEqual([]);
    await rm(scratch, { recursive: true, force: true });
  });

  it('--leader-elect in two processes: one identity each, exactly one leads', async () => {
    const args = ['--kubeconfig', env.kubeconfigPath, '--leader-elect', '--no-sample', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'];
    const a = startMain(args);
    const b = startMain(args);
    try {
      const deadline = Date.now() + 30_000;
      const started = (p: Running): boolean => p.lines.some((l) => l['msg'] === 'manager started');
      const leads = (p: Running): boolean => p.lines.some((l) => l['msg'] === 'became leader; starting leader-only runnables');
      while (Date.now() < deadline && !(started(a) && started(b) && (leads(a) || leads(b)))) await sleep(100);
      await sleep(3_000); // well inside the 15 s lease: the other one must still be standing by
      expect([leads(a), leads(b)].filter(Boolean)).toHaveLength(1);
      const leaders = new Set([...a.lines, ...b.lines].filter((l) => l['msg'] === 'new leader observed').map((l) => l['leader']));
      expect(leaders.size).toBe(1);
    } finally {
      a.kill();
      b.kill();
      expect(await a.exited).toBe(0);
      expect(await b.exited).toBe(0);
    }
  });

  it('--shard-ring in two processes, as docs/sharding.md runs it: each reconciles its own share of the disks, all Bound, and one leads', async () => {
    const repo = join(here, '..', '..', '..');
    const block = documentedCommands(repo).filter((c) => c.file === 'docs/sharding.md' && c.text.startsWith('node dist/main.js --shard-ring'));
    expect(block).toHaveLength(1);
    const commands = documentedCommands(repo).filter((c) => c.file === 'docs/sharding.md' && c.block === block[0]!.block);
    expect(commands.map((c) => c.text.split(' ').slice(0, 2).join(' '))).toEqual(['kubectl create', 'node dist/main.js']);
    const shell = { KUBECONFIG: env.kubeconfigPath };
    const created = spawn('sh', ['-c', commands[0]!.text], { env: { ...process.env, ...shell }, stdio: 'ignore' });
    expect(await new Promise((resolve) => created.once('close', resolve))).toBe(0);
    // Every reconcile's start and end at debug level, with the member's identity.
    const replicas = [startCommand(commands[1]!.text, { ...shell, KUBELOOP_LOG_LEVEL: 'debug' }), startCommand(commands[1]!.text, { ...shell, KUBELOOP_LOG_LEVEL: 'debug' })];
    const client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(HardDisk), fieldOwner: 'main-test' });
    try {
      // Both members of the ring, each holding half of its 128 buckets, before any disk is made.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const leases = (await client.list(Lease, { namespace: 'harddisk-system', labelSelector: `${SHARD_RING_LABEL}=harddisk-operator` })).items;
        const held = leases.map((l) => parseBuckets(l.metadata?.annotations?.[SHARD_HELD_ANNOTATION], 128).length);
        if (held.length === 2 && held.every((n) => n === 64)) break;
        if (Date.now() > deadline) throw new Error(`the ring did not settle: buckets held ${held.join(', ')}\n${replicas.map((r) => r.stderr()).join('\n')}`);
        await sleep(200);
      }
      const names = Array.from({ length: 16 }, (_, i) => `sharded-${i}`);
      await Promise.all(names.map((name) => client.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name, namespace: 'default' }, spec: { size: '1Gi', storageClass: 'standard' } })));
      const bound = async (): Promise<string[]> => (await client.list(HardDisk, { namespace: 'default' })).items.filter((d) => d.status?.phase === 'Bound').map((d) => d.metadata!.name!);
      const until = Date.now() + 60_000;
      for (;;) {
        const done = await bound();
        if (names.every((n) => done.includes(n))) break;
        if (Date.now() > until) throw new Error(`not Bound: ${names.filter((n) => !done.includes(n)).join(', ')}`);
        await sleep(200);
      }
      // Who reconciled each disk: exactly one member, and both members got some.
      const by = new Map<string, Set<string>>();
      for (const r of replicas) {
        for (const l of r.lines) {
          if (l['msg'] !== 'reconcile started' || !names.includes(String(l['name']))) continue;
          const set = by.get(String(l['name'])) ?? new Set<string>();
          by.set(String(l['name']), set.add(String(l['identity'])));
        }
      }
      expect([...by.keys()].sort()).toEqual([...names].sort());
      expect([...by.values()].filter((ids) => ids.size !== 1)).toEqual([]);
      expect(new Set([...by.values()].map((ids) => [...ids][0])).size).toBe(2);
      // Leader-only work on one of them: the member that holds the leader bucket says it leads and has not stopped.
      const leading = replicas.filter((r) => {
        const starts = r.lines.filter((l) => String(l['msg']).startsWith('this replica works on the shard ring leader bucket')).length;
        const stops = r.lines.filter((l) => String(l['msg']).startsWith('the shard ring leader bucket leaves this replica')).length;
        return starts > stops;
      });
      expect(leading).toHaveLength(1);
    } finally {
      for (const r of replicas) r.kill();
    }
    for (const r of replicas) {
      await r.exited;
      expect(r.lines.at(-1)?.['msg']).toBe('operator stopped');
    }
    // A member stopped by its signal deletes its Lease: none is left.
    expect((await client.list(Lease, { namespace: 'harddisk-system', labelSelector: `${SHARD_RING_LABEL}=harddisk-operator` })).items).toEqual([]);
  }, 180_000);
});
