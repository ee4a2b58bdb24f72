/** Shared helpers of the client tests: a proxy in front of the shared control plane, a CRD with status, throwaway certificates. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** A self-signed certificate and its key (PEM), made with the openssl CLI: a CA nobody trusts, or a client certificate the API server does not know. */
export function selfSigned(commonName: string): { certPem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'kubeloop-cert-'));
  try {
    const r = spawnSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', `/CN=${commonName}`],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr || String(r.error)}`);
    return { certPem: readFileSync(join(dir, 'cert.pem'), 'utf8'), keyPem: readFileSync(join(dir, 'key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A CA certificate that signed nothing the test server uses. */
export function otherCaPem(): string {
  return selfSigned('kubeloop-test-other-ca').certPem;
}
