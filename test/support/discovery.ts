/**
 * A DiscoveryClient over plain node:http(s) with a KubeConfig's TLS, for the
 * mapper's tests. The product's discovery client comes from @kubeloop/client.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { DiscoveryClient, DiscoveryResponse } from '@kubeloop/mapper';

export async function kubeConfigDiscovery(kc: KubeConfig): Promise<DiscoveryClient> {
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const tls: RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const https = server.protocol === 'https:';
  const agent = https
    ? new HttpsAgent({ ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.rejectUnauthorized ?? true, keepAlive: true })
    : new HttpAgent({ keepAlive: true });
  return {
    get(path: string, accept: string, signal?: AbortSignal): Promise<DiscoveryResponse> {
      return new Promise((resolve, reject) => {
        const fn = https ? httpsRequest : httpRequest;
        const req = fn(new URL(path, server), { method: 'GET', headers: { ...tls.headers, accept }, agent, ...(signal ? { signal } : {}) }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
    },
  };
}
