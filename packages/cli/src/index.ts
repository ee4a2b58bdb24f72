/**
 * `@kubeloop/cli` is the `kubeloop` command and its library form. It sits at
 * the top of the import graph (it reads kinds through @kubeloop/scheme and
 * clusters through @kubeloop/client) and nothing imports it.
 *
 * - `kubeloop generate crds` writes the CRDs of a project's schema-first
 *   kinds (`defineKind({ ..., schema })`), refusing schemas the API server
 *   would refuse with their paths; `--check` fails with a diff when the
 *   committed YAML is stale.
 * - `kubeloop generate types` writes typed kinds from CRD manifests, the CRDs
 *   of a cluster, or kube-apiserver's OpenAPI v3 documents.
 *
 * - `kubeloop generate rbac` writes the ClusterRole (and namespaced Roles)
 *   the manager needs, from what the controllers the project's setup
 *   function registers watch and declare (`permissions`), plus events,
 *   leader election and secure metrics; `--check` as above.
 *
 * - `kubeloop generate webhooks` writes config/webhook/manifests.yaml (the
 *   validating and mutating webhook configurations calling the operator's
 *   Service, and the roles its self-managed certificates need) from the
 *   webhooks the project's webhook setup function registers; `--check` as above.
 *
 * - `kubeloop generate helm` writes a Helm chart (dist/chart) from what
 *   `kubeloop deploy` applies, with values for the image, replicas,
 *   resources, leader election, sharding and the optional parts.
 *
 * - `kubeloop create webhook` adds a validating and/or defaulting webhook
 *   class for a kind and wires it (src/webhooks, main, the manifests).
 *
 * - `kubeloop create api` adds a kind, its controller, test and sample to a
 *   scaffolded project; `kubeloop deploy` applies config/default with the
 *   image set at deploy time; `kubeloop dev` runs the inner loop (a cluster,
 *   the CRDs, tsc --watch, the operator restarted after each clean build).
 *
 * Where the kinds are: `--module dist/apis/index.js` (repeatable), or the
 * project's package.json:
 *
 * ```json
 * "kubeloop": { "crds": { "modules": ["dist/apis/index.js"], "outDir": "config/crd" } }
 * ```
 *
 * @example
 * ```ts
 * import { runCli } from '@kubeloop/cli';
 * process.exitCode = await runCli(['generate', 'crds', '--check']);
 * ```
 *
 * @packageDocumentation
 */
export { COMMANDS, runCli } from './cli.js';
export type { CliIO, Command, CommandContext } from './cli.js';
export { readConfig } from './config.js';
export type { KubeloopConfig } from './config.js';
export { CRD_MARKER, generateCrds, renderCrd } from './generate-crds.js';
export type { GenerateCrdsOptions, GenerateCrdsResult } from './generate-crds.js';
export { RBAC_MARKER, generateRbac, renderRoles } from './generate-rbac.js';
export type { GenerateRbacOptions, GenerateRbacResult } from './generate-rbac.js';
export { WEBHOOKS_MARKER, generateWebhooks, renderWebhookManifests, webhookManifests, webhookNames } from './generate-webhooks.js';
export type { GenerateWebhooksOptions, GenerateWebhooksResult } from './generate-webhooks.js';
export { HELM_MARKER, generateHelm } from './generate-helm.js';
export type { GenerateHelmOptions, GenerateHelmResult } from './generate-helm.js';
export { TYPES_MARKER, crdToTypeScript, generateTypes, openApiToTypeScript } from './generate-types.js';
export type { GenerateTypesOptions, GenerateTypesResult, GeneratedKind, Json } from './generate-types.js';
export type { FileReport, GeneratedFile } from './internal/files.js';
export { createApi, pluralOf } from './create-api.js';
export { createWebhook } from './create-webhook.js';
export type { CreateWebhookOptions, CreateWebhookResult } from './create-webhook.js';
export type { CreateApiOptions, CreateApiResult } from './create-api.js';
export { deploy, imageOverride } from './deploy.js';
export type { DeployOptions, ImageOverride } from './deploy.js';
export { dev } from './dev.js';
export type { DevOptions } from './dev.js';
export { describeShards, renderShards } from './shards.js';
export { fetchInspection, inspectPath, renderInspection } from './inspect.js';
export type { Inspection, InspectOptions } from './inspect.js';
export type { ShardMemberView, ShardRingView, ShardsOptions } from './shards.js';
export { fetchProfile } from './profile.js';
export type { FetchProfileOptions, ProfileKind } from './profile.js';
export { CliError, isCliError } from './errors.js';
export type { CliErrorReason } from './errors.js';
