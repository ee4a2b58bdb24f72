/**
 * `@kubeloop/webhook` serves admission and conversion webhooks, as
 * controller-runtime's `pkg/webhook`, `pkg/webhook/admission`,
 * `pkg/webhook/conversion` and `pkg/certwatcher` do:
 *
 * - a hardened HTTPS server (`createWebhookServer`) that a manager runs as a
 *   runnable on every replica, with a readiness check;
 * - typed validators and defaulters per kind (`validatingWebhook`,
 *   `mutatingWebhook`), AdmissionReview v1, controller-runtime's paths,
 *   field errors as the API server shows them (`fieldError`);
 * - hub-and-spoke conversion (`defineConversion`, `spoke`,
 *   `conversionWebhook`) at `/convert`;
 * - serving certificates that change without a restart: provided files
 *   (`watchCertificateFiles`) or managed ones (`managedCertificates`: a CA
 *   and serving certificate in a Secret shared by replicas, renewed before
 *   expiry, the caBundle injected into webhook configurations and CRDs);
 * - webhook metrics with controller-runtime's names (`prometheusWebhookMetrics`);
 * - bearer-token authorization by TokenReview + SubjectAccessReview
 *   (`createTokenAuthorizer`), the building block of a secure metrics endpoint.
 *
 * It sits above `@kubeloop/client` and below the manager, which it does not
 * import: a `WebhookServer` is a `Runnable` by shape.
 *
 * @example
 * ```ts
 * import { createWebhookServer, fieldError, mutatingWebhook, validatingWebhook, watchCertificateFiles } from '@kubeloop/webhook';
 *
 * const server = createWebhookServer({ certificates: watchCertificateFiles({ certFile: '/certs/tls.crt', keyFile: '/certs/tls.key' }) });
 * server.register(validatingWebhook(HardDisk, {
 *   validateCreate: (disk) => (disk.spec?.size ? undefined : [fieldError.required('spec.size')]),
 * }));
 * server.register(mutatingWebhook(HardDisk, (disk) => {
 *   if (disk.spec) disk.spec.storageClass ??= 'standard';
 * }));
 * await server.start(signal);
 * ```
 *
 * @packageDocumentation
 */
export { createWebhookServer } from './server.js';
export type { WebhookServer, WebhookServerAddress, WebhookServerOptions } from './server.js';
export type { Webhook, WebhookAnswer, WebhookCallContext, WebhookProblem, WebhookProblemReason } from './webhook.js';
export { Admission, invalidStatus, mutatePath, mutatingWebhook, validatePath, validatingWebhook } from './admission.js';
export { schemaValidator } from './schema-validator.js';
export type {
  AdmissionContext,
  AdmissionOperation,
  AdmissionRequest,
  AdmissionResponse,
  AdmissionReview,
  AdmissionStatus,
  AdmissionVerdict,
  AdmissionWebhookOptions,
  Defaulter,
  DefaulterFn,
  ValidationResult,
  Validator,
} from './admission.js';
export { fieldError, fieldPath, formatFieldError, formatFieldErrorBody } from './field-errors.js';
export type { FieldError, FieldErrorType, FieldPathKey } from './field-errors.js';
export { conversionWebhook, defineConversion, refuseConversion, spoke } from './conversion.js';
export type { ConversionRequest, ConversionResponse, ConversionReview, ConversionWebhookOptions, KindConversion, Spoke } from './conversion.js';
export { checkServingCertificate, selfSignedCertificate, staticCertificate } from './certificates.js';
export type { CertificateSource, SelfSignedCertificateOptions, ServingCertificate } from './certificates.js';
export { watchCertificateFiles } from './cert-watcher.js';
export type { CertificateFiles, CertificateFilesOptions } from './cert-watcher.js';
export { managedCertificates } from './managed-certificates.js';
export type { ManagedCertificates, ManagedCertificatesOptions } from './managed-certificates.js';
export { noWebhookMetrics, prometheusWebhookMetrics } from './metrics.js';
export type { WebhookMetrics } from './metrics.js';
export { createTokenAuthorizer } from './token-authorizer.js';
export type { TokenAuthorizationDecision, TokenAuthorizationRequest, TokenAuthorizer, TokenAuthorizerOptions } from './token-authorizer.js';
export { silentLogger } from './logger.js';
export type { LogFn, WebhookLogger } from './logger.js';
export { WebhookError, isWebhookError } from './errors.js';
export type { WebhookErrorReason } from './errors.js';
