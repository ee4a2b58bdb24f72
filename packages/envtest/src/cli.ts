#!/usr/bin/env node
/**
 * kubeloop-envtest: run a local control plane in the foreground, or build its
 * binaries ahead of time.
 *
 *   kubeloop-envtest start [--crds PATH]... [--kubeconfig-out PATH] [--feature-gates A=true,B=false]
 *   kubeloop-envtest build
 *   kubeloop-envtest which
 */
import { copyFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { buildBinaries, resolveBinaries } from './binaries.js';
import { createEnvironment } from './environment.js';
import { isEnvtestError } from './errors.js';
import { parseFeatureGates } from './feature-gates.js';
import type { FeatureGates } from './feature-gates.js';

const USAGE = `usage:
  kubeloop-envtest start [--crds PATH]... [--kubeconfig-out PATH] [--feature-gates A=true,B=false]
      start etcd + kube-apiserver on loopback, print the kubeconfig, stop on Ctrl-C
      (--feature-gates: kube-apiserver's gates, e.g. ShardedListAndWatch=true)
  kubeloop-envtest build
      find or build kube-apiserver, etcd and etcdctl (KUBEBUILDER_ASSETS, cache, or Go)
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
      const bins = await buildBinaries();
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
    case 'start':
      return start(values.crds ?? [], values['kubeconfig-out'], parseFeatureGates((values['feature-gates'] ?? []).join(',')));
    default:
      console.error(`unknown command ${command}\n${USAGE}`);
      return 2;
  }
}

async function start(crds: string[], kubeconfigOut: string | undefined, featureGates: FeatureGates): Promise<number> {
  const env = createEnvironment({ crds, featureGates, log: (line) => console.error(`[envtest] ${line}`) });
  let stopping = false;
  const stopped = new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      console.error(`\n[envtest] ${signal}: stopping the control plane`);
      env.stop().then(resolve, (err: unknown) => {
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
