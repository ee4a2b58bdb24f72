/**
 * The built-in descriptors against the real API server (the shared control
 * plane): each plural and scope as discovery serves it, and each list kind as
 * a LIST answers it. Catches a descriptor that was wrong from the start or
 * that a Kubernetes upgrade made wrong.
 */
import { request } from 'node:https';
import type { RequestOptions } from 'node:https';
import { describe, expect, it } from 'vitest';
import { builtinScheme } from '../src/index.js';
import { testKubeConfig } from '../../../test/support/env.js';

interface APIResource {
  name: string;
  kind: string;
  namespaced: boolean;
  group?: string;
  version?: string;
}

async function getJson<T>(path: string): Promise<T> {
  const kc = testKubeConfig();
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined) throw new Error('the test kubeconfig has no current cluster');
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  return new Promise<T>((resolve, reject) => {
    const req = request(new URL(path, server), { ...options, headers: { ...options.headers, Accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) reject(new Error(`GET ${path}: ${res.statusCode} ${body}`));
        else resolve(JSON.parse(body) as T);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('built-in descriptors match the API server', () => {
  it.each(builtinScheme.descriptors().map((d) => [`${d.apiVersion} ${d.kind}`, d] as const))('%s', async (_name, d) => {
    if (d.plural === undefined) {
      // Eviction: only served as the eviction subresource of pods.
      const core = await getJson<{ resources: APIResource[] }>('/api/v1');
      const served = core.resources.find((r) => r.kind === d.kind && r.group === d.group && r.version === d.version);
      expect(served?.name).toBe('pods/eviction');
      expect(served?.namespaced).toBe(d.namespaced);
      expect(d.listKind).toBeUndefined();
      return;
    }
    const base = d.group === '' ? `/api/${d.version}` : `/apis/${d.group}/${d.version}`;
    const discovery = await getJson<{ resources: APIResource[] }>(base);
    const resource = discovery.resources.find((r) => r.name === d.plural);
    expect(resource, `${base} serves no resource named ${d.plural}`).toBeDefined();
    expect(resource?.kind).toBe(d.kind);
    expect(resource?.namespaced).toBe(d.namespaced);
    const list = await getJson<{ kind: string; apiVersion: string }>(`${base}/${d.plural}?limit=1`);
    expect(list.kind).toBe(d.listKind);
    expect(list.apiVersion).toBe(d.apiVersion);
  });
});
