/**
 * Vitest global setup: one real control plane (etcd + kube-apiserver, from
 * @kubeloop/envtest) for the whole test run, with the project's CRDs
 * (config/crd, and vendor/crds when there is one) installed. Tests reach it through `inject('kubeconfigPath')`.
 *
 * The binaries come from KUBEBUILDER_ASSETS when set, else from
 * ~/.cache/kubeloop/envtest; `pnpm exec kubeloop-envtest build` puts them
 * there (see the README).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';

let env: Environment | undefined;

export async function setup(project: TestProject): Promise<void> {
  // The project's CRDs (config/crd), and those of kinds it uses but does not own (vendor/crds).
  const root = join(import.meta.dirname, '..', '..');
  const crds = [join(root, 'config', 'crd'), join(root, 'vendor', 'crds')].filter((dir) => existsSync(dir));
  env = createEnvironment({ crds });
  await env.start();
  project.provide('kubeconfigPath', env.kubeconfigPath);
}

export async function teardown(): Promise<void> {
  await env?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
  }
}
