/**
 * `@kubeloop/envtest` starts a real etcd and kube-apiserver on loopback for
 * tests and local development, as controller-runtime's envtest does: the
 * framework's own tests run against it, never against a mock of the API.
 *
 * Binaries come from `KUBEBUILDER_ASSETS`, a per-version cache, or a build from
 * Go modules. `KUBELOOP_USE_EXISTING_CLUSTER=true` runs the same tests against
 * the cluster in KUBECONFIG instead.
 *
 * @example
 * ```ts
 * import { createEnvironment } from '@kubeloop/envtest';
 *
 * const env = createEnvironment({ crds: ['config/crd'] });
 * await env.start();
 * try {
 *   // env.kubeConfig is a @kubernetes/client-node KubeConfig for the admin user
 * } finally {
 *   await env.stop();
 * }
 * ```
 *
 * @packageDocumentation
 */
export { createEnvironment } from './environment.js';
export type { ComponentFlags, Environment, EnvironmentOptions } from './environment.js';
export { parseFeatureGates } from './feature-gates.js';
export type { FeatureGates } from './feature-gates.js';
export { buildBinaries, defaultCacheDir, downloadBinaries, resolveBinaries } from './binaries.js';
export { DEFAULT_ENVTEST_INDEX_URL } from './download.js';
export type { BinaryOptions, BinaryPaths } from './binaries.js';
export { installCRDs } from './crds.js';
export type { CRDSource, CustomResourceDefinitionLike, InstallCRDsOptions } from './crds.js';
export { EnvtestError, isEnvtestError } from './errors.js';
export type { EnvtestErrorReason } from './errors.js';
export { DEFAULT_ETCD_VERSION, DEFAULT_KUBERNETES_VERSION } from './versions.js';
export { installWebhooks } from './webhooks.js';
export type { InstalledWebhooks, WebhookConfigurationLike, WebhookConfigurationSource, WebhookInstallOptions } from './webhooks.js';
export { startApiProxy } from './proxy.js';
export type { ApiProxy, ApiProxyOptions, RecordedRequest } from './proxy.js';
