#!/usr/bin/env node
/**
 * The README's main job: run the fleet operator.
 *
 * With --envtest it starts a local host control plane and `--members N`
 * member control planes (@kubeloop/envtest), installs the FleetConfig CRD in
 * the host, registers each member as a kubeconfig Secret in the host (as you
 * would with `kubectl create secret generic ... --from-file=kubeconfig=...`
 * and the label `fleet.kubeloop.dev/kubeconfig=true`), applies the sample
 * FleetConfig and logs its per-member status as it changes. Otherwise the
 * host is the cluster of --kubeconfig (or KUBECONFIG): it installs the CRD
 * there and serves the members whose Secrets it finds. Its metrics and
 * probes default to ports 8180 and 8181, beside the HardDisk example's
 * 8080 and 8081, so both can run on one machine.
 *
 *   node dist/main.js [--envtest [--members 2]] [--kubeconfig PATH] [--no-sample]
 *                     [--secret-namespace fleet-system] [--member-selector fleet.kubeloop.dev/kubeconfig=true]
 *                     [--metrics-bind-address 127.0.0.1:8180] [--health-probe-bind-address 127.0.0.1:8181]
 *                     [--leader-elect]
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import type * as JsYaml from 'js-yaml';
import { createClient, isAlreadyExists, isClientError, loadKubeConfig } from '@kubeloop/client';
import type { Client, KubeConfigLike } from '@kubeloop/client';
import type { Environment } from '@kubeloop/envtest';
import { createLogger, createManager, isManagerError, signalHandler } from '@kubeloop/manager';
import { KUBECONFIG_SECRET_LABEL } from '@kubeloop/manager/fleet';
import { builtinScheme, CustomResourceDefinition } from '@kubeloop/scheme';
import { generateCRDs } from '@kubeloop/scheme/schema';
import { FIELD_OWNER, FleetConfig, setupFleetOperator } from './index.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { readFileSync } = process.getBuiltinModule('node:fs');
const { parseArgs } = process.getBuiltinModule('node:util');

/** js-yaml, through require: the instance @kubeloop/client loads to read a kubeconfig file. */
const yaml = (): typeof JsYaml => createRequire(import.meta.url)('js-yaml') as typeof JsYaml;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** A flag the operator cannot use. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A configuration mistake: one line on stderr saying what to fix, exit status 2, no stack trace. */
function configured<T>(step: () => T): T {
  try {
    return step();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const mistake = isClientError(err) ? err.reason === 'InvalidConfig' : isManagerError(err) ? err.reason === 'InvalidOptions' : err instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'));
    if (!mistake) throw err;
    process.stderr.write(`fleet-operator: ${(err as Error).message}\n`);
    process.exit(2);
  }
}

const { values } = configured(() => parseArgs({
  options: {
    envtest: { type: 'boolean', default: false },
    members: { type: 'string', default: '2' },
    kubeconfig: { type: 'string' },
    'no-sample': { type: 'boolean', default: false },
    'secret-namespace': { type: 'string', default: 'fleet-system' },
    'member-selector': { type: 'string', default: `${KUBECONFIG_SECRET_LABEL}=true` },
    'metrics-bind-address': { type: 'string', default: '127.0.0.1:8180' },
    'health-probe-bind-address': { type: 'string', default: '127.0.0.1:8181' },
    'leader-elect': { type: 'boolean', default: false },
  },
}));
const members = Number(values.members);
configured(() => {
  if (!Number.isInteger(members) || members < 1 || members > 5) throw new UsageError(`--members must be a whole number from 1 to 5, not ${values.members}`);
  if (!values.envtest && values.members !== '2') throw new UsageError('--members starts local member control planes: use it with --envtest');
});

const log = createLogger();
const stop = signalHandler();
const scheme = builtinScheme.extend(FleetConfig);
const secretNamespace = values['secret-namespace'];

/** Apply the FleetConfig CRD (generated from the kind, as `kubeloop generate crds` writes crd/) and wait until FleetConfigs can be listed. */
async function installCRD(client: Client): Promise<void> {
  const [crd] = generateCRDs([FleetConfig]);
  if (!crd) throw new Error('generateCRDs returned no CRD for FleetConfig');
  await client.apply(crd, { force: true });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const current = await client.get(CustomResourceDefinition, { name: crd.metadata.name });
    const established = current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    const error = established ? await client.list(FleetConfig, { limit: 1 }).then(() => undefined, (err: unknown) => err) : undefined;
    if (established && error === undefined) return;
    if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} was not established within 30 s`, { cause: error });
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Register a member: its kubeconfig in a labelled Secret of the host, as an administrator would. */
async function registerMember(host: Client, name: string, kubeconfigText: string): Promise<void> {
  await host.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: secretNamespace } }).catch((err: unknown) => {
    if (!isAlreadyExists(err)) throw err;
  });
  const [labelKey = KUBECONFIG_SECRET_LABEL, labelValue = 'true'] = values['member-selector'].split('=');
  await host.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { namespace: secretNamespace, name, labels: { [labelKey]: labelValue } },
    data: { kubeconfig: Buffer.from(kubeconfigText).toString('base64') },
  }, { force: true });
}

// envtest (and with it @kubernetes/client-node) is loaded only when used.
const planes: Environment[] = [];
let kubeConfig: KubeConfigLike;
if (values.envtest) {
  const { createEnvironment } = await import('@kubeloop/envtest');
  log.info({ members }, 'starting a local host control plane and the member control planes (@kubeloop/envtest)');
  const host = createEnvironment({ crds: [join(root, 'crd')], log: (line) => log.info({ component: 'envtest', plane: 'host' }, line) });
  const memberPlanes = Array.from({ length: members }, (_, i) => createEnvironment({ log: (line) => log.info({ component: 'envtest', plane: `member-${i + 1}` }, line) }));
  planes.push(host, ...memberPlanes);
  await Promise.all(planes.map((p) => p.start()));
  kubeConfig = host.kubeConfig;
  const client = createClient({ kubeConfig, scheme, fieldOwner: 'fleet-admin' });
  for (const [i, plane] of memberPlanes.entries()) {
    await registerMember(client, `member-${i + 1}`, readFileSync(plane.kubeconfigPath, 'utf8'));
    log.info({ member: `member-${i + 1}`, kubeconfig: plane.kubeconfigPath }, 'member control plane ready, its kubeconfig Secret created in the host');
  }
  client.transport.close();
  log.info({ kubeconfig: host.kubeconfigPath, secretNamespace }, `host ready; in another shell: export KUBECONFIG=${host.kubeconfigPath}; kubectl get fleetconfigs -o yaml`);
} else {
  kubeConfig = configured(() => loadKubeConfig(values.kubeconfig));
  const client = createClient({ kubeConfig, scheme, fieldOwner: FIELD_OWNER });
  await installCRD(client);
  client.transport.close();
  log.info({ server: kubeConfig.server, secretNamespace, memberSelector: values['member-selector'] }, 'using the host cluster from the kubeconfig; CRD installed');
}

const manager = configured(() => createManager({
  kubeConfig,
  scheme,
  fieldOwner: FIELD_OWNER,
  logger: log,
  metricsBindAddress: values['metrics-bind-address'],
  healthProbeBindAddress: values['health-probe-bind-address'],
  ...(values['leader-elect'] ? { leaderElection: { name: 'fleet-operator', namespace: secretNamespace, releaseOnCancel: true } } : {}),
}));
const fleet = configured(() => setupFleetOperator(manager, { secretNamespace, memberSelector: values['member-selector'] }));
fleet.onClusterChange(({ type, cluster }) => log.info({ cluster }, `member ${type}`));
const running = manager.start(stop);

if (!values['no-sample'] && !stop.aborted) {
  const client = createClient({ kubeConfig, scheme, fieldOwner: 'fleet-sample' });
  const sample = yaml().load(readFileSync(join(root, 'samples', 'fleetconfig.yaml'), 'utf8')) as FleetConfig & { apiVersion: string; kind: string };
  await client.apply(sample, { force: true });
  log.info('applied samples/fleetconfig.yaml; logging its status (Ctrl-C to stop)');
  void (async () => {
    let last = '';
    while (!stop.aborted) {
      const sample = await client.get(FleetConfig, { name: 'sample' }).catch(() => undefined);
      const status = (sample?.status?.members ?? []).map((m) => `${m.cluster}:${m.syncedGeneration ?? '-'}:${m.conditions?.find((c) => c.type === 'Synced')?.status ?? '?'}`).sort();
      if (status.join(' ') !== last) {
        log.info({ generation: sample?.metadata?.generation, members: status }, 'sample status');
        last = status.join(' ');
      }
      await new Promise((r) => setTimeout(r, 300));
    }
    client.transport.close();
  })();
}

const result = await running.then(() => undefined, (err: unknown) => err);
await Promise.all(planes.map((p) => p.stop()));
if (result !== undefined) {
  log.error({ err: result }, 'operator stopped with an error');
  process.exitCode = 1;
} else {
  log.info('operator stopped');
}
log.flush(() => process.exit());

