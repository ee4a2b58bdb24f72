/**
 * `@kubeloop/testing` is the test kit for operator authors:
 *
 * - a fake Kubernetes API server in memory with the real server's
 *   semantics (resourceVersions from one counter, optimistic concurrency,
 *   generation, finalizers, status subresources, selectors, pagination,
 *   watches with bookmarks and 410s, patches of every kind, server-side
 *   apply with field ownership), served to the unchanged kubeloop client,
 *   informers and controllers through its `Transport`, or over loopback
 *   HTTP to anything else (kubectl included); with fault injection per
 *   verb/kind/name and a clock the test drives;
 * - `eventually` / `consistently` with failure messages that show the last
 *   value seen; a fresh namespace per test; an event collector.
 *
 * It sits above `@kubeloop/client` and imports only the client and the
 * scheme. What the fake does not do (admission, CEL, API priority and
 * fairness, defaulting of built-in kinds, real watch-cache timing) is listed
 * in docs/testing-fake.md; prefer envtest for those.
 *
 * @example
 * ```ts
 * import { createFakeApiServer, eventually } from '@kubeloop/testing';
 * import { ConfigMap } from '@kubeloop/scheme';
 *
 * const fake = createFakeApiServer();
 * const client = fake.client({ fieldOwner: 'my-operator' });
 * await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'default' } });
 * await eventually(async () => (await client.get(ConfigMap, { namespace: 'default', name: 'a' })).metadata?.uid !== undefined);
 * ```
 *
 * @packageDocumentation
 */
export { createFakeApiServer } from './fake-api-server.js';
export type {
  Fault,
  FaultError,
  FakeApiServer,
  FakeApiServerOptions,
  FakeHttpEndpoint,
  Injection,
  RegisterOptions,
  RequestMatch,
  RequestRecord,
  Verb,
} from './fake-api-server.js';
export type { RequestAttributes } from './internal/request-info.js';
export type { ObjectValidator, ValidationProblem } from './validator.js';
export { createTestClock } from './clock.js';
export type { Clock, TestClock, TestClockOptions } from './clock.js';
export { consistently, eventually } from './eventually.js';
export type { Condition, ConsistentlyOptions, EventuallyOptions } from './eventually.js';
export { createTestNamespace } from './namespaces.js';
export type { TestNamespace, TestNamespaceOptions } from './namespaces.js';
export { collectEvents } from './events.js';
export type { EventCollector, EventCollectorOptions, RecordedEvent } from './events.js';
export { TestingError, isTestingError } from './errors.js';
export type { TestingErrorReason } from './errors.js';
