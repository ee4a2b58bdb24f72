/**
 * A small JSON-over-HTTPS helper for envtest's own calls (readiness, CRDs).
 * It uses the KubeConfig's TLS and auth, so it works against envtest and an
 * existing cluster alike. The real client lives in @kubeloop/client; envtest
 * sits below it in the import graph and cannot use it.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface HttpResult {
  readonly status: number;
  readonly body: string;
}

export async function kubeRequest(
  kc: KubeConfig,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<HttpResult> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  const options: RequestOptions = {
    method,
    headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
  };
  await kc.applyToHTTPSOptions(options);
  return rawRequest(url, options, body === undefined ? undefined : JSON.stringify(body), timeoutMs);
}

export function rawRequest(url: URL, options: RequestOptions, payload: string | undefined, timeoutMs: number): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const fn = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = fn(url, { ...options, timeout: timeoutMs, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${options.method ?? 'GET'} ${url.pathname} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}
