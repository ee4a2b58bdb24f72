/** The mapper's DiscoveryClient, served over the client's transport (same auth, TLS, rate limits). */
import type { DiscoveryClient, DiscoveryResponse } from '@kubeloop/mapper';
import { ClientError } from './errors.js';
import { retryAfterSeconds } from './transport.js';
import type { Transport } from './transport.js';

/**
 * A DiscoveryClient that sends its requests through `transport`. A 401 or
 * 403 rejects with the ClientError (Unauthorized, Forbidden) rather than
 * being handed to the mapper as an answer: it says nothing about which kinds
 * exist, and the client passes it on so `isUnauthorized()` recognises it.
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
      if (res.status === 401 || res.status === 403) throw ClientError.fromResponse('GET', path, res.status, res.body, retryAfterSeconds(res.headers));
      const ct = res.headers['content-type'];
      return { status: res.status, contentType: typeof ct === 'string' ? ct : undefined, body: res.body };
    },
  };
}
