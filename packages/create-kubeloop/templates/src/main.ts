#!/usr/bin/env node
/**
 * The operator's entry point: one manager running the project's controllers.
 *
 *   node dist/operator.js [--kubeconfig PATH] [--leader-elect] [--leader-election-namespace NS]
 *                         [--metrics-bind-address 127.0.0.1:8443] [--health-probe-bind-address 127.0.0.1:8081]
 *                         [--no-metrics-secure] [--metrics-cert-dir DIR]
 *                         [--webhook-port 9443] [--webhook-cert-dir DIR] [--no-webhooks]
 *                         [--shard-ring NAME [--shard-namespace NS]]
 *
 * dist/operator.js is this file compiled (dist/main.js) and bundled into one module with all it
 * imports by `pnpm build` (rolldown.config.mjs); `pnpm run dev` runs dist/main.js itself.
 *
 * /metrics is served over HTTPS to callers whose bearer token may `get` it
 * (config/rbac/metrics-reader-role.yaml; the operator checks tokens with
 * TokenReview and SubjectAccessReview), as kubebuilder scaffolds it. The
 * certificate comes from --metrics-cert-dir (tls.crt and tls.key, reloaded
 * when they change: cert-manager's Secret), else a self-signed one made at
 * start (Prometheus then needs `insecure_skip_verify`). --no-metrics-secure
 * serves plain HTTP to anyone who can reach it.
 *
 * Webhooks (`kubeloop create webhook` adds them to src/webhooks) are served
 * over HTTPS on --webhook-port. The certificate comes from --webhook-cert-dir
 * (tls.crt and tls.key: what `pnpm run dev` makes for a local run and passes
 * with --webhook-port, or cert-manager's Secret), else, in a pod, the operator makes and renews its own in the
 * Secret {{name}}-webhook-server-cert and puts its CA into the webhook
 * configurations of config/webhook/manifests.yaml. --no-webhooks serves none.
 * With no webhook registered, no webhook server starts.
 *
 * Sharded (--shard-ring NAME, what the Helm chart passes with sharding.enable):
 * every replica is a member of the shard ring NAME (a Lease per member in
 * --shard-namespace, default the pod's namespace; named for $POD_NAME) and
 * reconciles, lists, watches and caches only its share of the objects; the
 * member holding the ring's leader bucket does the leader-only work. It
 * replaces --leader-elect. A replica that dies has its share taken over once
 * its Lease expires (15 s). See kubeloop's docs/sharding.md.
 *
 * The cluster comes from --kubeconfig, else KUBECONFIG, else the in-cluster
 * service account, else ~/.kube/config. Logs are pretty and coloured on a
 * terminal and JSON lines otherwise (LOG_LEVEL sets the level). In a pod, bind
 * the probe and metrics servers to 0.0.0.0 (config/manager/deployment.yaml
 * does) so the kubelet and Prometheus can reach them.
 */
import 'reflect-metadata';
import { join } from 'node:path';
import { createClient, isClientError, loadKubeConfig } from '@kubeloop/client';
import { createShardRing, isLeaderElectionError } from '@kubeloop/leaderelection';
import { createLogger, createManager, isManagerError, ringLeadership, ringShardFilter, signalHandler } from '@kubeloop/manager';
import { builtinScheme, ConfigMap } from '@kubeloop/scheme';
import { managedCertificates, watchCertificateFiles } from '@kubeloop/webhook';
import type { CertificateSource } from '@kubeloop/webhook';
import { Website } from './apis/index.js';
import { setupControllers } from './controllers/index.js';
// kubeloop:scaffold:imports (`kubeloop create api` adds imports above this line)

// node:util through process.getBuiltinModule, not an ES import: an ES import of a builtin runs its
// lazy getters and loads parts of Node an operator never uses (about 1 MiB of RSS).
const { parseArgs } = process.getBuiltinModule('node:util');

/** The project's kinds: in the scheme, and sharded with --shard-ring. */
const kinds = [Website /* kubeloop:scaffold:kinds */];

/**
 * A configuration mistake (an unknown flag, a kubeconfig that cannot be read, a bad bind address, a bad ring name):
 * one line on stderr saying what to fix, exit status 2, no stack trace. Anything else is thrown on.
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
        : typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
    if (!mistake) throw err;
    process.stderr.write(`{{name}}: ${(err as Error).message}\n`);
    process.exit(2);
  }
}

// `pnpm start -- --kubeconfig PATH` hands the `--` on to the program: skip it.
const args = process.argv.slice(2);
const { values } = configured(() => parseArgs({
  args: args[0] === '--' ? args.slice(1) : args,
  options: {
    kubeconfig: { type: 'string' },
    'leader-elect': { type: 'boolean', default: false },
    'leader-election-namespace': { type: 'string' },
    'metrics-bind-address': { type: 'string', default: '127.0.0.1:8443' },
    'metrics-secure': { type: 'boolean', default: true },
    'metrics-cert-dir': { type: 'string' },
    'health-probe-bind-address': { type: 'string', default: '127.0.0.1:8081' },
    webhooks: { type: 'boolean', default: true },
    'webhook-port': { type: 'string', default: '9443' },
    'webhook-cert-dir': { type: 'string' },
    'shard-ring': { type: 'string' },
    'shard-namespace': { type: 'string' },
  },
  allowNegative: true,
}));

// pino-pretty (about 3 MiB of RSS) is loaded only on a terminal: a pod logs JSON lines without it.
const log = createLogger(process.stdout.isTTY ? { destination: (await import('pino-pretty')).PinoPretty({ colorize: true, sync: true }) } : {});
const stop = signalHandler();

const kubeConfig = configured(() => loadKubeConfig(values.kubeconfig));
const metricsCertDir = values['metrics-cert-dir'];
// The Lease lives where config/rbac/role.yaml lets the manager write it: the pod's namespace in a
// cluster ({{name}}-system); outside one, say where (a Lease in any other namespace is refused).
const leaderElectionNamespace = values['leader-election-namespace'] ?? process.env['POD_NAMESPACE'] ?? (kubeConfig.context === undefined ? kubeConfig.namespace : undefined);
if (values['leader-elect'] && !leaderElectionNamespace) {
  log.error('--leader-elect outside a cluster needs --leader-election-namespace: the namespace of the Lease (the generated role allows {{name}}-system)');
  process.exit(2); // the logger writes synchronously: the line is out
}
// Sharded (--shard-ring): the ring's member Leases live beside the leader-election Lease; the ring has a
// client of its own, so its renewals never wait behind the manager's requests.
const ringName = values['shard-ring'];
const shardNamespace = values['shard-namespace'] ?? leaderElectionNamespace;
if (ringName !== undefined && (values['leader-elect'] || !shardNamespace)) {
  log.error(values['leader-elect'] ? '--shard-ring replaces --leader-elect (the member holding the ring\'s leader bucket does the leader-only work): drop --leader-elect' : '--shard-ring outside a cluster needs --shard-namespace: the namespace of the ring\'s Leases');
  process.exit(2);
}
const ring = ringName === undefined ? undefined : configured(() => createShardRing({
  client: createClient({ kubeConfig }),
  name: ringName,
  namespace: shardNamespace!,
  ...(process.env['POD_NAME'] ? { identity: process.env['POD_NAME'] } : {}), // the pod's name; default: host name and a random suffix
}));
const webhookPort = Number(values['webhook-port']);
if (!Number.isInteger(webhookPort) || webhookPort < 1 || webhookPort > 65535) {
  process.stderr.write(`{{name}}: --webhook-port must be a port number (1-65535), not ${values['webhook-port']}\n`);
  process.exit(2);
}
const webhookCertDir = values['webhook-cert-dir'];
const podNamespace = process.env['POD_NAMESPACE'];
// Chosen when the webhook server starts, once setupWebhooks has said which configurations and CRDs call it.
const webhookCertificates: CertificateSource = {
  start: (signal, update) => {
    if (webhookCertDir) return watchCertificateFiles({ certFile: join(webhookCertDir, 'tls.crt'), keyFile: join(webhookCertDir, 'tls.key') }).start(signal, update);
    const webhooks = manager.registeredWebhooks();
    const service = `{{name}}-webhook-service.${podNamespace}.svc`;
    return managedCertificates({
      client: manager.apiReader,
      secret: { namespace: podNamespace!, name: '{{name}}-webhook-server-cert' },
      hosts: [service, `${service}.cluster.local`],
      validatingWebhookConfigurations: webhooks.some((w) => w.type === 'validating') ? ['{{name}}-validating-webhook-configuration'] : [],
      mutatingWebhookConfigurations: webhooks.some((w) => w.type === 'mutating') ? ['{{name}}-mutating-webhook-configuration'] : [],
      conversionCRDs: webhooks.filter((w) => w.type === 'conversion').map((w) => `${w.kind.plural}.${w.kind.group}`),
      log: log.child({ component: 'webhook-certificates' }),
    }).start(signal, update);
  },
};
const manager = configured(() => createManager({
  kubeConfig,
  scheme: builtinScheme.extend(...kinds),
  fieldOwner: '{{name}}',
  logger: log,
  metricsBindAddress: values['metrics-bind-address'],
  ...(values['metrics-secure'] ? { secureMetrics: metricsCertDir ? { certificates: watchCertificateFiles({ certFile: join(metricsCertDir, 'tls.crt'), keyFile: join(metricsCertDir, 'tls.key') }) } : {} } : {}),
  healthProbeBindAddress: values['health-probe-bind-address'],
  ...(values['leader-elect'] && leaderElectionNamespace ? { leaderElection: { name: '{{name}}-leader', namespace: leaderElectionNamespace, releaseOnCancel: true } } : {}),
  ...(values.webhooks ? { webhook: { port: webhookPort, certificates: webhookCertificates } } : {}),
  // Sharded: this replica's share of the project's kinds (by uid; the API server filters where it has the
  // ShardedListAndWatch gate, the cache otherwise), and of the ConfigMaps they own (by their owner's uid).
  // A controller that reads ConfigMaps it does not own needs the ConfigMap line taken out.
  ...(ring
    ? {
        leadership: ringLeadership(ring),
        cache: {
          byKind: [
            ...kinds.map((kind) => ({ kind, options: { shard: ringShardFilter(ring) } })),
            { kind: ConfigMap, options: { shard: ringShardFilter(ring, 'controller-owner') } },
          ],
        },
      }
    : {}),
}));
setupControllers(manager, { shard: ring ? { ring } : undefined });
// kubeloop:scaffold:webhooks (`kubeloop create webhook` registers the webhooks above this line)
if (manager.registeredWebhooks().length > 0 && !webhookCertDir && !podNamespace) {
  log.error('webhooks outside a cluster need --webhook-cert-dir: `pnpm run dev` serves them on a control plane on this machine (it makes the certificate and points the webhook configurations at this process); or run with --no-webhooks');
  process.exit(2);
}

log.info({ server: kubeConfig.server, source: kubeConfig.source, leaderElect: values['leader-elect'], ...(ring ? { shardRing: ring.name, identity: ring.identity } : {}) }, 'starting {{name}}');
try {
  await manager.start(stop);
  log.info('stopped');
} catch (err) {
  log.error({ err }, 'stopped with an error');
  process.exitCode = 1;
}
// start() has returned within its graceful bound; exit once the log is written.
log.flush(() => process.exit());
