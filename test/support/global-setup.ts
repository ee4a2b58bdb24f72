/**
 * Vitest global setup: one real control plane (etcd + kube-apiserver from
 * @kubeloop/envtest) for the whole run, or the cluster in KUBECONFIG when
 * KUBELOOP_USE_EXISTING_CLUSTER=true. Test files reach it through
 * `inject('kubeconfigPath')` (see ./env.ts).
 */
import type { TestProject } from 'vitest/node';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';

let env: Environment | undefined;

export async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  env = createEnvironment({ log: (line) => process.stderr.write(`[envtest] ${line}\n`) });
  await env.start();
  process.stderr.write(`[envtest] shared control plane at ${env.server} ready in ${Date.now() - started} ms\n`);
  project.provide('kubeconfigPath', env.kubeconfigPath);
  project.provide('etcdUrl', env.etcdUrl ?? '');
  project.provide('existingCluster', env.existingCluster);
}

export async function teardown(): Promise<void> {
  await env?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
    etcdUrl: string;
    existingCluster: boolean;
  }
}
