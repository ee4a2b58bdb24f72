/**
 * Vitest global setup: one real control plane (etcd + kube-apiserver from
 * @kubeloop/envtest) for the whole run, or the cluster in KUBECONFIG when
 * KUBELOOP_USE_EXISTING_CLUSTER=true. Test files reach it through
 * `inject('kubeconfigPath')` (see ./env.ts).
 *
 * kube-apiserver runs with the `ShardedListAndWatch` gate (alpha, KEP-5866):
 * it changes nothing for requests without a `shardSelector`, and lets the
 * sharding tests use this plane; the gate-off path has a plane of its own.
 */
import type { TestProject } from 'vitest/node';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';

let env: Environment | undefined;

export async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  env = createEnvironment({ featureGates: { ShardedListAndWatch: true }, log: (line) => process.stderr.write(`[envtest] ${line}\n`) });
  await env.start();
  process.stderr.write(`[envtest] shared control plane at ${env.server} ready in ${Date.now() - started} ms\n`);
  project.provide('kubeconfigPath', env.kubeconfigPath);
  project.provide('etcdUrl', env.etcdUrl ?? '');
  project.provide('existingCluster', env.existingCluster);
  project.provide('featureGates', { ...env.featureGates });
}

export async function teardown(): Promise<void> {
  await env?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
    etcdUrl: string;
    existingCluster: boolean;
    /** The gates kube-apiserver started with (empty for an existing cluster: unknown). */
    featureGates: Record<string, boolean>;
  }
}
