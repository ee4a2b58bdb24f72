#!/usr/bin/env node
/**
 * The README's main job: run the HardDisk operator.
 *
 * With no cluster configured (no KUBECONFIG and no ~/.kube/config), or with
 * --envtest, it starts a local control plane through @kubeloop/envtest;
 * otherwise it uses the cluster in KUBECONFIG. It installs the CRD, starts
 * the manager, applies the sample HardDisk, and logs the reconcile and the
 * disk's status until Ctrl-C.
 *
 * High availability: run one process per replica with --leader-elect (each
 * gets its own identity, host name plus a random suffix, so only one leads);
 * --replicas 2 runs two leader-elected managers in this one process, for a
 * quick look at a takeover.
 *
 *   node dist/main.js [--envtest] [--leader-elect] [--replicas 1|2] [--no-sample] [--kubeconfig PATH]
 *                     [--shard-ring NAME [--shard-identity ID] [--shard-namespace NS] [--shard-lease-duration 15s]]
 *                     [--metrics-bind-address 127.0.0.1:8080] [--health-probe-bind-address 127.0.0.1:8081]
 *                     [--webhook-cert-dir DIR [--webhook-port 9443] [--webhook-host 127.0.0.1]]
 *                     [--metrics-cert-dir DIR]
 *
 * Sharded: with --shard-ring NAME every replica (one process each, on a
 * cluster: not with --envtest) is a member of the shard ring NAME (a Lease
 * per member in --shard-namespace, default `default`; identity
 * --shard-identity, else $POD_NAME, else host name plus a random suffix) and
 * reconciles, lists, watches and caches only its share of the HardDisks (by
 * uid) and the ConfigMaps they own (by their owner's uid); leader-only work
 * runs on the member holding the ring's leader bucket. A member not renewed
 * for --shard-lease-duration (renew deadline 2/3 of it, a round every 2/15)
 * is taken over by the others. See docs/sharding.md.
 *
 * With --webhook-cert-dir (holding tls.crt and tls.key, reloaded when they
 * change, as cert-manager or a mounted Secret rotates them) the operator also
 * serves its admission webhooks and the v1 ⇄ v2 conversion (src/webhooks.ts,
 * src/conversion.ts; configurations in webhook/manifests.yaml, the CRD's
 * conversion stanza). In a pod, pass `--webhook-host 0.0.0.0`: the API
 * server calls the pod's IP. On the local control plane (envtest) it serves
 * them without the flag: envtest's installWebhooks makes a certificate and
 * points the configurations and the CRD at this process, so `kubectl get
 * harddisks` (v2, kubectl's default) and `harddisks.v1.crd-demo.io` both
 * work. On another cluster without --webhook-cert-dir nothing would answer a
 * conversion, so it installs the CRD serving v1 alone, without conversion
 * (an installed CRD that converts through a webhook is updated to that
 * first): `kubectl get harddisks` works there too, for everyone.
 *
 * With --metrics-cert-dir (tls.crt and tls.key, reloaded as well) /metrics is
 * served over HTTPS to callers whose bearer token may `get` it (TokenReview +
 * SubjectAccessReview; grant it with a ClusterRole on the non-resource URL
 * /metrics), as kubebuilder scaffolds by default; 401 or 403 otherwise.
 *
 * The probe and metrics servers bind 127.0.0.1 by default; pass `0.0.0.0:8081`
 * (or `:8081`) to serve other hosts, as a pod's kubelet probes need.
 */
import './index.js';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as JsYaml from 'js-yaml';
import { createClient, isClientError, isMapperError, isNotFound, loadKubeConfig, mergePatch } from '@kubeloop/client';
import type { Client, KubeConfigLike } from '@kubeloop/client';
import type { Environment, InstalledWebhooks } from '@kubeloop/envtest';
import { createShardRing, isLeaderElectionError } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import { createLogger, createManager, isManagerError, ringLeadership, ringShardFilter, signalHandler } from '@kubeloop/manager';
import type { Manager } from '@kubeloop/manager';
import { builtinScheme, ConfigMap, CustomResourceDefinition } from '@kubeloop/scheme';
import { generateCRDs } from '@kubeloop/scheme/schema';
import { watchCertificateFiles } from '@kubeloop/webhook';
import { HardDisk, HardDiskV2, setupHardDiskController, setupHardDiskWebhooks } from './index.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { existsSync, readFileSync } = process.getBuiltinModule('node:fs');
const { parseArgs } = process.getBuiltinModule('node:util');

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');

/**
 * A configuration mistake (an unknown flag, a kubeconfig that cannot be read, a bad address or
 * number): one line saying what to fix on stderr, exit status 2; no stack trace.
 */
function configured<T>(step: () => T): T {
  try {
    return step();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const mistake = isClientError(err)
      ? err.reason === 'InvalidConfig'
      : isManagerError(err) || isLeaderElectionError(err)
        ? err.reason === 'InvalidOptions'
        : err instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'));
    if (!mistake) throw err;
    process.stderr.write(`harddisk-operator: ${(err as Error).message}\n`);
    process.exit(2);
  }
}

/** A flag the operator cannot use. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The CRD could not be installed (not established, names refused). */
class InstallError extends Error {
  override readonly name = 'InstallError';
}

/**
 * The cluster cannot be used (refused or timed-out connections, TLS, credentials refused, no
 * permission, not a Kubernetes API server, the CRD not installed): one line on stderr saying what
 * went wrong and where, exit status 1; no stack trace. Anything else (a bug) is thrown as it is.
 */
async function reachable<T>(server: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    const line = cannotUse(server, err);
    if (line === undefined) throw err;
    process.stderr.write(`harddisk-operator: ${line.replace(/\s+/g, ' ').trim()}\n`);
    process.exit(1);
  }
}

/** What to tell the user when `err` means the cluster at `server` cannot be used; undefined when it is not such an error. */
function cannotUse(server: string, err: unknown): string | undefined {
  if (err instanceof InstallError) return err.message;
  if (isMapperError(err)) return `${server} does not answer as a Kubernetes API server (${err.message}): check the server URL of the kubeconfig`;
  if (!isClientError(err)) return undefined;
  switch (err.reason) {
    case 'Network':
      return `cannot connect to the cluster at ${server} (${err.message}): is it running, and is the server URL of the kubeconfig right?`;
    case 'ClientTimeout':
      return `the cluster at ${server} did not answer (${err.message}): is it reachable from here?`;
    case 'TLS':
      return `cannot talk to the cluster at ${server}: ${err.message}`;
    case 'Unauthorized':
      return `the cluster at ${server} refused the kubeconfig's credentials (401 Unauthorized): check the user's token, client certificate or exec plugin`;
    case 'Forbidden':
      return `the cluster at ${server} does not let this user install or read the HardDisk CRD (403 Forbidden: ${err.message}): grant rbac/ or use an admin kubeconfig`;
    default:
      return undefined;
  }
}

const { values } = configured(() => parseArgs({
  options: {
    envtest: { type: 'boolean', default: false },
    replicas: { type: 'string', default: '1' },
    'leader-elect': { type: 'boolean', default: false },
    'no-sample': { type: 'boolean', default: false },
    kubeconfig: { type: 'string' },
    'metrics-bind-address': { type: 'string', default: '127.0.0.1:8080' },
    'health-probe-bind-address': { type: 'string', default: '127.0.0.1:8081' },
    'webhook-cert-dir': { type: 'string' },
    'metrics-cert-dir': { type: 'string' },
    'webhook-port': { type: 'string', default: '9443' },
    'webhook-host': { type: 'string', default: '127.0.0.1' },
    'shard-ring': { type: 'string' },
    'shard-identity': { type: 'string' },
    'shard-namespace': { type: 'string' },
    'shard-lease-duration': { type: 'string' },
  },
}));

const replicas = Number.parseInt(values.replicas, 10);
configured(() => {
  if (!(replicas === 1 || replicas === 2)) throw new UsageError(`--replicas must be 1 or 2, not ${values.replicas}`);
  if (values['webhook-cert-dir'] && !/^\d{1,5}$/.test(values['webhook-port'])) throw new UsageError(`--webhook-port must be a port number, not ${values['webhook-port']}`);
});

/** Milliseconds of a duration flag such as `15s` or `1500ms`. */
function durationMs(flag: string, value: string): number {
  const m = /^(\d+)(ms|s)$/.exec(value);
  if (!m) throw new UsageError(`${flag} must be a duration such as 15s or 1500ms, not ${value}`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

/** --shard-ring and its companions checked before anything connects: the ring's options, or undefined when not sharded. */
const sharding = configured(() => {
  const name = values['shard-ring'];
  if (name === undefined) {
    const companion = (['shard-identity', 'shard-namespace', 'shard-lease-duration'] as const).find((f) => values[f] !== undefined);
    if (companion) throw new UsageError(`--${companion} needs --shard-ring NAME`);
    return undefined;
  }
  if (values['leader-elect']) throw new UsageError('--shard-ring replaces --leader-elect (the member holding the ring\'s leader bucket does the leader-only work): drop --leader-elect');
  if (replicas !== 1) throw new UsageError('--shard-ring runs one member per process: drop --replicas and start one process per replica');
  if (values.envtest || !clusterConfigured()) throw new UsageError('--shard-ring needs a cluster the replicas share (--kubeconfig, KUBECONFIG or ~/.kube/config), not a control plane of its own (--envtest)');
  const lease = values['shard-lease-duration'] ?? '15s';
  const leaseDurationMs = durationMs('--shard-lease-duration', lease);
  if (leaseDurationMs < 1000) throw new UsageError(`--shard-lease-duration must be at least 1s, not ${lease}`);
  const identity = values['shard-identity'] ?? process.env['POD_NAME'];
  return {
    name,
    namespace: values['shard-namespace'] ?? 'default',
    ...(identity === undefined ? {} : { identity }),
    leaseDurationMs,
    renewDeadlineMs: Math.round((leaseDurationMs * 2) / 3),
    retryPeriodMs: Math.round((leaseDurationMs * 2) / 15),
  };
});

const log = createLogger();
const stop = signalHandler();

function clusterConfigured(): boolean {
  if (values.kubeconfig) return true;
  const env = process.env['KUBECONFIG'];
  if (env) return env.split(':').some((p) => p && existsSync(p));
  return existsSync(join(homedir(), '.kube', 'config')) || Boolean(process.env['KUBERNETES_SERVICE_HOST']);
}

/** js-yaml, through require: the instance @kubeloop/client loads to read a kubeconfig file. */
const yaml = (): typeof JsYaml => createRequire(import.meta.url)('js-yaml') as typeof JsYaml;

/**
 * Apply the HardDisk CRD (generated from the kinds, the same CRD `kubeloop generate crds` writes
 * to crd/) with server-side apply, then wait until HardDisks can be listed: established, its names
 * accepted and served by discovery. When this process serves no conversion webhook
 * (`servesConversion` false), only v1, the storage version, is served and nothing converts: a v2
 * served through a webhook nobody answers would make `kubectl get harddisks` (v2, its default)
 * fail for every user with a StorageReadError.
 */
async function installCRD(client: Client, servesConversion: boolean): Promise<void> {
  const [generated] = generateCRDs([HardDisk, HardDiskV2]);
  if (!generated) throw new InstallError('generateCRDs returned no CRD for HardDisk');
  const name = generated.metadata.name;
  const crd = servesConversion
    ? generated
    : { ...generated, spec: { ...generated.spec, conversion: { strategy: 'None' as const }, versions: generated.spec.versions.map((v) => (v.storage ? v : { ...v, served: false })) } };
  if (!servesConversion) {
    // Server-side apply cannot take an installed CRD off webhook conversion: the webhook stanza
    // stays (another manager set it, or apply keeps what it does not name) and the API server
    // refuses "webhookClientConfig should not be set when strategy is not Webhook". One merge
    // patch sets the strategy, drops the stanza and stops serving v2 together.
    const current = await client.get(CustomResourceDefinition, { name }).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (current?.spec.conversion?.strategy === 'Webhook') {
      await client.patch(CustomResourceDefinition, { name }, mergePatch({ spec: { conversion: { strategy: 'None', webhook: null }, versions: crd.spec.versions } }));
    }
  }
  await client.apply(crd, { force: true });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const current = await client.get(CustomResourceDefinition, { name });
    const accepted = current.status?.conditions?.find((c) => c.type === 'NamesAccepted');
    if (accepted?.status === 'False') throw new InstallError(`CRD ${name}: names not accepted: ${accepted.message ?? ''}`);
    const established = current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    const lastError = established ? await client.list(HardDisk, { limit: 1 }).then(() => undefined, (err: unknown) => err) : undefined;
    if (established && lastError === undefined) return;
    if (Date.now() > deadline) throw new InstallError(`CRD ${name} was not established and served within 30 s${lastError instanceof Error ? `: ${lastError.message}` : ''}`, { cause: lastError });
    await new Promise((r) => setTimeout(r, 100));
  }
}

// envtest (and with it @kubernetes/client-node) is loaded only when used: an operator in a
// cluster never pays for it (see `pnpm bench:import-cost`).
let env: Environment | undefined;
let hooks: InstalledWebhooks | undefined;
let kubeConfig: KubeConfigLike;
/** The server of the kubeconfig's cluster, when not a control plane of its own. */
let clusterServer: string | undefined;
let ring: ShardRing | undefined;
if (values.envtest || !clusterConfigured()) {
  log.info('no cluster configured: starting a local control plane (etcd + kube-apiserver) with @kubeloop/envtest');
  const { createEnvironment } = await import('@kubeloop/envtest');
  env = createEnvironment({ crds: [join(root, 'crd')], log: (line) => log.info({ component: 'envtest' }, line) });
  await env.start();
  kubeConfig = env.kubeConfig;
  if (!values['webhook-cert-dir'] && !stop.aborted) {
    // Admission and conversion served by this process: the API server calls it on loopback.
    const { installWebhooks } = await import('@kubeloop/envtest');
    hooks = await installWebhooks(env.kubeConfig, {
      configurations: yaml().loadAll(readFileSync(join(root, 'webhook', 'manifests.yaml'), 'utf8')) as never[],
      conversionCRDs: ['harddisks.crd-demo.io'],
    });
  }
  log.info({ kubeconfig: env.kubeconfigPath }, `control plane ready; in another shell: export KUBECONFIG=${env.kubeconfigPath}; kubectl get harddisks -w`);
} else {
  // An existing cluster: kubeloop's own client only. Neither envtest nor @kubernetes/client-node is
  // loaded on this path (test/main.test.ts checks), so the operator's RSS is the framework's own.
  const rest = configured(() => loadKubeConfig(values.kubeconfig));
  kubeConfig = rest;
  clusterServer = rest.server;
  // The ring's own client (its Lease renewals never wait behind the manager's requests); a bad
  // ring name or identity ends the process here, before anything is written to the cluster.
  ring = sharding && configured(() => createShardRing({ client: createClient({ kubeConfig: rest }), ...sharding }));
}

const scheme = builtinScheme.extend(HardDisk);
const webhookCertDir = values['webhook-cert-dir'];
const webhookServing = webhookCertDir
  ? { host: values['webhook-host'], port: Number(values['webhook-port']), certFile: join(webhookCertDir, 'tls.crt'), keyFile: join(webhookCertDir, 'tls.key') }
  : hooks
    ? { host: hooks.host, port: hooks.port, certFile: hooks.certFile, keyFile: hooks.keyFile }
    : undefined;
const metricsCertDir = values['metrics-cert-dir'];
const managers: Manager[] = [];
for (let i = 0; i < replicas; i++) {
  const manager = configured(() => createManager({
    kubeConfig,
    scheme,
    fieldOwner: 'harddisk-operator',
    logger: log.child(ring ? { replica: i, identity: ring.identity } : { replica: i }),
    ...(i === 0 ? { metricsBindAddress: values['metrics-bind-address'], healthProbeBindAddress: values['health-probe-bind-address'] } : {}),
    ...(i === 0 && metricsCertDir ? { secureMetrics: { certificates: watchCertificateFiles({ certFile: join(metricsCertDir, 'tls.crt'), keyFile: join(metricsCertDir, 'tls.key') }) } } : {}),
    ...(i === 0 && webhookServing ? { webhook: { host: webhookServing.host, port: webhookServing.port, certificates: watchCertificateFiles({ certFile: webhookServing.certFile, keyFile: webhookServing.keyFile }) } } : {}),
    // No fixed identity: the default (host name + random suffix) is unique per process and per manager.
    ...(replicas > 1 || values['leader-elect'] ? { leaderElection: { name: 'harddisk-operator', namespace: 'default', releaseOnCancel: true } } : {}),
    // Sharded: this replica's share of the HardDisks (the server filters by uid where it has the
    // ShardedListAndWatch gate, the reflector otherwise) and the ConfigMaps their controller owns.
    ...(ring
      ? {
          leadership: ringLeadership(ring),
          cache: { byKind: [{ kind: HardDisk, options: { shard: ringShardFilter(ring) } }, { kind: ConfigMap, options: { shard: ringShardFilter(ring, 'controller-owner') } }] },
        }
      : {}),
  }));
  setupHardDiskController(manager, 'decorator', ring ? { shard: { ring } } : {});
  if (manager.webhookServer) setupHardDiskWebhooks(manager, 'decorator');
  managers.push(manager);
}

if (clusterServer !== undefined) {
  // The CRD goes in through the first manager's live client: its discovery (one /apis, one /api) then
  // serves the install, the manager and the sample alike. These are the first requests to the cluster:
  // one that cannot be used ends the process here, with one line.
  const server = clusterServer;
  await reachable(server, () => installCRD(managers[0]!.apiReader, Boolean(values['webhook-cert-dir'])));
  log.info({ server }, 'using the cluster from the kubeconfig; CRD installed');
}

const running = managers.map((m) => m.start(stop));
if (managers[0]?.metricsUrl) log.info({ metrics: `${managers[0].metricsUrl}/metrics` }, 'metrics');

// The webhooks admit every HardDisk write (failurePolicy Fail): apply the sample once they answer.
const webhookServer = managers[0]?.webhookServer;
if (webhookServer) {
  const deadline = Date.now() + 30_000;
  // A stop (SIGTERM) during start-up is a clean exit, not a webhook failure.
  while (!stop.aborted) {
    try {
      await webhookServer.readyCheck();
      break;
    } catch (err) {
      if (stop.aborted) break;
      if (Date.now() > deadline) throw new Error(`the webhook server did not start serving within 30 s: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

if (!values['no-sample'] && !stop.aborted) {
  // The first manager's transport and mapper: no discovery of its own.
  const client = createClient({ transport: managers[0]!.cluster.transport, mapper: managers[0]!.mapper, scheme, fieldOwner: 'harddisk-sample' });
  const sample = yaml().load(readFileSync(join(root, 'samples', 'harddisk.yaml'), 'utf8')) as { apiVersion: string; kind: string };
  await client.apply(sample, { force: true });
  log.info('applied samples/harddisk.yaml; watching its status (Ctrl-C to stop)');
  void (async () => {
    let last = '';
    while (!stop.aborted) {
      const disk = await client.get(HardDisk, { namespace: 'default', name: 'sample-disk' }).catch(() => undefined);
      const ready = disk?.status?.conditions?.find((c) => c.type === 'Ready');
      const line = `${disk?.status?.phase ?? 'Pending'} ${ready ? `${ready.status}/${ready.reason}` : ''} ${disk?.status?.configMapName ?? ''}`;
      if (line !== last) {
        log.info({ phase: disk?.status?.phase, ready: ready?.status, reason: ready?.reason, configMap: disk?.status?.configMapName }, 'sample-disk status');
        last = line;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
}

const results = await Promise.allSettled(running);
await hooks?.uninstall();
await env?.stop();
const failed = results.find((r) => r.status === 'rejected');
if (failed) {
  log.error({ err: (failed).reason as unknown }, 'operator stopped with an error');
  process.exitCode = 1;
} else {
  log.info('operator stopped');
}
// start() has returned within the graceful (or lease-loss) bound; a reconcile that ignored its
// signal may still hold a timer: exit now (once the log is written) rather than wait for it.
log.flush(() => process.exit());
