/**
 * `@kubeloop/mapper` maps kinds (GVK) to REST resources (GVR) and scope, and
 * back, from the API server's discovery: loaded lazily per group, with the
 * fewest requests, concurrent misses coalesced, and no lock held across the
 * network. It sits between `@kubeloop/scheme` (which names kinds) and
 * `@kubeloop/client` (which builds request paths from mappings, and provides
 * the {@link DiscoveryClient} the mapper reads through).
 *
 * @example
 * ```ts
 * import { createTransport, loadKubeConfig, transportDiscovery } from '@kubeloop/client';
 * import { createDynamicRESTMapper, isNoKindMatch } from '@kubeloop/mapper';
 *
 * const mapper = createDynamicRESTMapper(transportDiscovery(createTransport(loadKubeConfig())));
 * const m = await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
 * // m.resource.resource === 'deployments', m.scope === 'Namespaced'
 * ```
 *
 * @packageDocumentation
 */
export { createDynamicRESTMapper } from './dynamic-mapper.js';
export type { DynamicRESTMapper, DynamicRESTMapperOptions } from './dynamic-mapper.js';
export type { PartialResource, RESTMapper, RESTMapping, Scope } from './rest-mapper.js';
export { AGGREGATED_DISCOVERY_ACCEPT, LEGACY_DISCOVERY_ACCEPT } from './discovery.js';
export type { DiscoveryClient, DiscoveryResponse } from './discovery.js';
export { MapperError, isAmbiguousResource, isMapperError, isNoKindMatch, isNoResourceMatch } from './errors.js';
export type { MapperErrorReason } from './errors.js';
