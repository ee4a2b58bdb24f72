#!/usr/bin/env node
/**
 * kubeloop-envtest: run a local control plane in the foreground, or build its
 * binaries ahead of time.
 *
 *   kubeloop-envtest start [--crds PATH]... [--kubeconfig-out PATH] [--feature-gates A=true,B=false]
 *                          [--webhooks PATH]... [--conversion-crd NAME]... [--webhook-port N] [--webhook-cert-dir DIR]
 *   kubeloop-envtest build
 *   kubeloop-envtest which
 */
import { copyFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { resolveBinaries } from './binaries.js';
import { createEnvironment } from './environment.js';
import { isEnvtestError } from './errors.js';
import { installWebhooks } from './webhooks.js';
import type { InstalledWebhooks, WebhookInstallOptions } from './webhooks.js';
import { parseFeatureGates } from './feature-gates.js';
import type { FeatureGates } from './feature-gates.js';

const USAGE = `usage:
  kubeloop-envtest start [--crds PATH]... [--kubeconfig-out PATH] [--feature-gates A=true,B=false]
      start etcd + kube-apiserver on loopback, print the kubeconfig, stop on Ctrl-C
      (--feature-gates: kube-apiserver's gates, e.g. ShardedListAndWatch=true)
                         [--webhooks PATH]... [--conversion-crd NAME]... [--webhook-port N] [--webhook-cert-dir DIR]
      --webhooks installs webhook configurations (files or directories, other kinds skipped) pointing at
      https://127.0.0.1:<webhook-port> with a CA bundle, and writes the serving certificate (tls.crt,
      tls.key) for the local operator to --webhook-cert-dir; --conversion-crd switches a CRD's
      conversion to that server's /convert
  kubeloop-envtest build
      find, download (setup-envtest's prebuilt archives, SHA-512 verified) or build (Go) kube-apiserver and etcd
  kubeloop-envtest which
      print where the binaries are, without building`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      crds: { type: 'string', multiple: true },
      'kubeconfig-out': { type: 'string' },
      'feature-gates': { type: 'string', multiple: true },
      webhooks: { type: 'string', multiple: true },
      'conversion-crd': { type: 'string', multiple: true },
      'webhook-port': { type: 'string' },
      'webhook-cert-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0] ?? 'start';
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  switch (command) {
    case 'build': {
      const started = Date.now();
      const bins = await resolveBinaries();
      console.log(`kube-apiserver ${bins.kubernetesVersion}: ${bins.kubeApiserver}`);
      console.log(`etcd ${bins.etcdVersion}: ${bins.etcd}`);
      console.log(`ready in ${Math.round((Date.now() - started) / 1000)}s`);
      return 0;
    }
    case 'which': {
      const bins = await resolveBinaries({ build: false });
      console.log(JSON.stringify(bins, null, 2));
      return 0;
    }
    case 'start': {
      const port = values['webhook-port'];
      if (port !== undefined && !/^\d{1,5}$/.test(port)) {
        console.error(`--webhook-port must be a port number, not ${port}`);
        return 2;
      }
      return start(values.crds ?? [], values['kubeconfig-out'], parseFeatureGates((values['feature-gates'] ?? []).join(',')), {
        configurations: values.webhooks ?? [],
        conversionCRDs: values['conversion-crd'] ?? [],
        ...(port !== undefined ? { localServingPort: Number(port) } : {}),
        ...(values['webhook-cert-dir'] !== undefined ? { localServingCertDir: values['webhook-cert-dir'] } : {}),
      });
    }
    default:
      console.error(`unknown command ${command}\n${USAGE}`);
      return 2;
  }
}

async function start(crds: string[], kubeconfigOut: string | undefined, featureGates: FeatureGates, webhooks: WebhookInstallOptions): Promise<number> {
  const env = createEnvironment({ crds, featureGates, log: (line) => console.error(`[envtest] ${line}`) });
  let installed: InstalledWebhooks | undefined;
  let stopping = false;
  const stopped = new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      console.error(`\n[envtest] ${signal}: stopping the control plane`);
      (installed?.uninstall() ?? Promise.resolve()).then(() => env.stop()).then(resolve, (err: unknown) => {
        console.error(err);
        resolve();
      });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  const startedAt = Date.now();
  await env.start();
  if (stopping) {
    await stopped;
    return 0;
  }
  let path = env.kubeconfigPath;
  if (kubeconfigOut) {
    await copyFile(path, kubeconfigOut);
    path = kubeconfigOut;
  }
  const gates = Object.entries(env.featureGates).map(([name, on]) => `${name}=${on}`).join(',');
  const where = env.existingCluster
    ? 'existing cluster'
    : `kube-apiserver ${env.binaries?.kubernetesVersion ?? ''}${gates ? ` (feature gates ${gates})` : ''} + etcd ${env.binaries?.etcdVersion ?? ''}`;
  console.log(`control plane ready in ${((Date.now() - startedAt) / 1000).toFixed(1)}s: ${where} at ${env.server}`);
  console.log(`kubeconfig: ${path}`);
  if ((webhooks.configurations?.length ?? 0) > 0 || (webhooks.conversionCRDs?.length ?? 0) > 0) {
    try {
      installed = await installWebhooks(env.kubeConfig, webhooks);
    } catch (err) {
      // Nothing would serve what was asked for: say why and take the control plane down, rather than run on without it.
      console.error(`envtest: the webhooks could not be installed: ${isEnvtestError(err) ? `${err.reason}: ${err.message}` : String(err)}`);
      await env.stop();
      return 1;
    }
    const configs = installed.configurations.map((c) => `${c.kind}/${c.name}`).join(', ') || 'none';
    console.log(`webhooks: ${configs}${webhooks.conversionCRDs?.length ? `; conversion of ${webhooks.conversionCRDs.join(', ')}` : ''} call ${installed.url}`);
    console.log(`serve them with the certificate in ${installed.certDir} (tls.crt, tls.key): --webhook-cert-dir ${installed.certDir} --webhook-port ${installed.port}`);
  }
  console.log('');
  console.log('Point kubectl at it from another shell:');
  console.log(`  export KUBECONFIG=${path}`);
  console.log('  kubectl get namespaces');
  console.log('');
  console.log('Press Ctrl-C to stop.');
  await stopped;
  console.error('[envtest] stopped');
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (isEnvtestError(err)) console.error(`envtest: ${err.reason}: ${err.message}`);
    else console.error(err);
    process.exitCode = 1;
  },
);
