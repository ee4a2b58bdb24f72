/**
 * Vitest global setup: one real control plane (etcd + kube-apiserver, from
 * @kubeloop/envtest) for the whole test run, with the project's CRDs
 * (config/crd) installed. Tests reach it through `inject('kubeconfigPath')`.
 *
 * The binaries come from KUBEBUILDER_ASSETS when set, else from
 * ~/.cache/kubeloop/envtest; `pnpm exec kubeloop-envtest build` puts them
 * there (see the README).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';

let env: Environment | undefined;

export async function setup(project: TestProject): Promise<void> {
  // The CRD files of config/crd (its kustomization.yaml is not one).
  const crdDir = join(import.meta.dirname, '..', '..', 'config', 'crd');
  const crds = readdirSync(crdDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').map((f) => join(crdDir, f));
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
