/** Shared helpers of the client tests: a proxy in front of the shared control plane, and a CRD with status. */
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment } from '@kubeloop/envtest';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';

export interface HardDisk extends KubeObject {
  apiVersion?: `${string}/v1`;
  kind?: 'HardDisk';
  spec?: { size?: string; storageClass?: string };
  status?: { phase?: string };
}

export interface Fixture {
  env: Environment;
  proxy: ApiProxy;
  group: string;
  HardDisk: ReturnType<typeof defineKind<HardDisk>>;
  close(): Promise<void>;
}

/** Connect to the shared control plane through a recording proxy and install a HardDisk CRD (status subresource on). */
export async function fixture(): Promise<Fixture> {
  const env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  const group = `${uniqueName('c')}.kubeloop.dev`;
  await env.installCRDs([
    testCRD(group, 'HardDisk', {
      status: true,
      schema: {
        type: 'object',
        properties: {
          spec: { type: 'object', properties: { size: { type: 'string' }, storageClass: { type: 'string' } } },
          status: { type: 'object', properties: { phase: { type: 'string' } } },
        },
      },
    }),
  ]);
  const proxy = await startApiProxy(env.kubeConfig);
  const HardDisk = defineKind<HardDisk>({ group, version: 'v1', kind: 'HardDisk', plural: 'harddisks', namespaced: true, listKind: 'HardDiskList' });
  return {
    env,
    proxy,
    group,
    HardDisk,
    close: async () => {
      await proxy.close();
      await env.stop();
    },
  };
}

/** Requests other than discovery (`/api`, `/apis`, `/api/v1`, `/apis/<g>/<v>`). */
export function nonDiscovery(proxy: ApiProxy): number {
  return proxy.count((r) => !/^\/apis?(\/[^/]+){0,2}$/.test(r.path) || r.method !== 'GET');
}
