/** The mapper's DiscoveryClient, served over the client's transport (same auth, TLS, rate limits). */
import type { DiscoveryClient, DiscoveryResponse } from '@kubeloop/mapper';
import type { Transport } from './transport.js';

/**
 * A DiscoveryClient that sends its requests through `transport`.
 *
 * @example
 * ```ts
 * const mapper = createDynamicRESTMapper(transportDiscovery(createTransport(kc)));
 * ```
 */
export function transportDiscovery(transport: Transport): DiscoveryClient {
  return {
    async get(path: string, accept: string, signal?: AbortSignal): Promise<DiscoveryResponse> {
      const res = await transport.request({ method: 'GET', path, accept, ...(signal ? { signal } : {}) });
      const ct = res.headers['content-type'];
      return { status: res.status, contentType: typeof ct === 'string' ? ct : undefined, body: res.body };
    },
  };
}
