/**
 * The small discovery interface the mapper needs. `@kubeloop/client` provides
 * the real one over its transport (same KubeConfig, auth, TLS, rate limits);
 * the mapper never imports the client.
 */

/** Accept header asking for aggregated discovery (apidiscovery.k8s.io/v2), falling back to the legacy documents. */
export const AGGREGATED_DISCOVERY_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

/** Accept header for the legacy discovery documents only. */
export const LEGACY_DISCOVERY_ACCEPT = 'application/json';

/** One discovery response. */
export interface DiscoveryResponse {
  /** HTTP status. */
  readonly status: number;
  /** The Content-Type the server answered with (tells aggregated from legacy). */
  readonly contentType: string | undefined;
  /** The raw body. */
  readonly body: string;
}

/**
 * GET a discovery document. Implementations resolve for any HTTP status and
 * reject only when no response was had (network error, abort).
 *
 * @example
 * ```ts
 * const server = 'https://127.0.0.1:6443';
 * const discovery: DiscoveryClient = {
 *   async get(path, accept, signal) {
 *     const res = await fetch(new URL(path, server), { headers: { accept }, signal: signal ?? null });
 *     return { status: res.status, contentType: res.headers.get('content-type') ?? undefined, body: await res.text() };
 *   },
 * };
 * ```
 */
export interface DiscoveryClient {
  get(path: string, accept: string, signal?: AbortSignal): Promise<DiscoveryResponse>;
}
