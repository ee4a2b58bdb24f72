/**
 * Webhook metrics: a small interface the server reports to, and a
 * Prometheus implementation with controller-runtime's names, so existing
 * dashboards work:
 * `controller_runtime_webhook_requests_total{webhook,code}`,
 * `controller_runtime_webhook_latency_seconds{webhook}`,
 * `controller_runtime_webhook_requests_in_flight{webhook}`; plus
 * `kubeloop_webhook_failures_total{webhook,reason}`, which controller-runtime
 * lacks: admission failures are answered with HTTP 200 (a denial the API
 * server shows), so the code label alone cannot tell them apart.
 */
import { Counter, Gauge, Histogram } from './prom.js';
import type { Registry } from 'prom-client';
import type { WebhookProblemReason } from './webhook.js';

/** What the webhook server reports; `webhook` is the path (`/validate-...`), as in controller-runtime. */
export interface WebhookMetrics {
  /** A request to a registered webhook is being handled. */
  requestStarted(webhook: string): void;
  /** That request was answered with HTTP `code` after `seconds`. */
  requestFinished(webhook: string, code: number, seconds: number): void;
  /** That request was answered with a failure (malformed, too large, handler error, timeout, conversion failure). */
  requestFailed(webhook: string, reason: WebhookProblemReason): void;
}

/**
 * Metrics that go nowhere: the server's default.
 *
 * @example
 * ```ts
 * createWebhookServer({ certificates, metrics: noWebhookMetrics }); // same as leaving metrics out
 * ```
 */
export const noWebhookMetrics: WebhookMetrics = Object.freeze({
  requestStarted: () => undefined,
  requestFinished: () => undefined,
  requestFailed: () => undefined,
});

function once<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

/**
 * Webhook metrics in a prom-client `Registry` (the manager's, so they appear
 * on its `/metrics`). Calling it twice on one registry reuses the metrics.
 *
 * @example
 * ```ts
 * import { Registry } from 'prom-client';
 * import { createWebhookServer, prometheusWebhookMetrics } from '@kubeloop/webhook';
 *
 * const registry = new Registry();
 * const server = createWebhookServer({ certificates, metrics: prometheusWebhookMetrics(registry) });
 * // later: await registry.metrics() has controller_runtime_webhook_requests_total{webhook="/validate-...",code="200"}
 * ```
 */
export function prometheusWebhookMetrics(registry: Registry): WebhookMetrics {
  const registers = [registry];
  const total = once(registry, 'controller_runtime_webhook_requests_total', () => new Counter({
    name: 'controller_runtime_webhook_requests_total',
    help: 'Total number of admission requests by HTTP status code.',
    labelNames: ['webhook', 'code'],
    registers,
  }));
  // prom-client's default buckets are Prometheus' DefBuckets, which controller-runtime uses.
  const latency = once(registry, 'controller_runtime_webhook_latency_seconds', () => new Histogram({
    name: 'controller_runtime_webhook_latency_seconds',
    help: 'Histogram of the latency of processing admission requests',
    labelNames: ['webhook'],
    registers,
  }));
  const inFlight = once(registry, 'controller_runtime_webhook_requests_in_flight', () => new Gauge({
    name: 'controller_runtime_webhook_requests_in_flight',
    help: 'Current number of active requests being served.',
    labelNames: ['webhook'],
    registers,
  }));
  const failures = once(registry, 'kubeloop_webhook_failures_total', () => new Counter({
    name: 'kubeloop_webhook_failures_total',
    help: 'Webhook requests answered with a failure (malformed or too large body, handler error or timeout, failed conversion), by reason.',
    labelNames: ['webhook', 'reason'],
    registers,
  }));
  return {
    requestStarted(webhook) {
      inFlight.inc({ webhook });
    },
    requestFinished(webhook, code, seconds) {
      inFlight.dec({ webhook });
      total.inc({ webhook, code: String(code) });
      latency.observe({ webhook }, seconds);
    },
    requestFailed(webhook, reason) {
      failures.inc({ webhook, reason });
    },
  };
}
