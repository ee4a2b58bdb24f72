/** Test-side access to the shared control plane started by global-setup.ts. */
import { randomBytes } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';

/** A KubeConfig for the shared control plane's admin user. */
export function testKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject('kubeconfigPath'));
  return kc;
}

/** The shared control plane's kubeconfig file. */
export function testKubeconfigPath(): string {
  return inject('kubeconfigPath');
}

/** A DNS-1123 name unique to this run, for objects and namespaces tests create. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}
