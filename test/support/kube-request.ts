/** Raw JSON requests to the shared control plane, for tests below the client package (scheme) that must talk to the real API server. */
import { request } from 'node:https';
import type { RequestOptions } from 'node:https';
import { testKubeConfig } from './env.js';

/** The status code and parsed JSON body (or text, when not JSON) of one request. */
export interface KubeResponse {
  readonly status: number;
  readonly body: unknown;
  readonly warnings: readonly string[];
}

/**
 * One request to the shared control plane as its admin user.
 *
 * @example
 * ```ts
 * const res = await kubeRequest('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All', crd);
 * ```
 */
export async function kubeRequest(method: string, path: string, body?: unknown, extraHeaders: Readonly<Record<string, string>> = {}): Promise<KubeResponse> {
  const kc = testKubeConfig();
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined) throw new Error('the test kubeconfig has no current cluster');
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<KubeResponse>((resolve, reject) => {
    const headers: Record<string, string> = { Accept: 'application/json', ...extraHeaders };
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const req = request(new URL(path, server), { ...options, method, headers: { ...(options.headers as Record<string, string>), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: keep the text
        }
        const warning: string | string[] | undefined = res.headers['warning'];
        const list: string[] = Array.isArray(warning) ? warning : warning ? [warning] : [];
        const warnings = list.map((w) => w.replace(/^299 - "?|"$/g, ''));
        resolve({ status: res.statusCode ?? 0, body: parsed, warnings });
      });
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
    req.end(payload);
  });
}
