/**
 * What a webhook request's span says about the review it served: the kind,
 * operation, object and uid of an AdmissionReview, the desired version of a
 * ConversionReview, and whether the answer allowed it. Only called while
 * tracing is on. The review came from the API server (or whoever reached
 * the port): every field is read defensively, and only short strings kept.
 */
import type { SpanAttributes } from '@kubeloop/client/internal';
import type { WebhookLogger } from '../logger.js';
import type { WebhookAnswer } from '../webhook.js';

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function short(v: unknown): string | undefined {
  return typeof v === 'string' && v.length <= 253 ? v : undefined;
}

/** Attributes of the review in a request body. */
export function reviewAttributes(body: unknown): SpanAttributes {
  const review = record(body);
  const request = record(review?.['request']);
  if (!request) return {};
  if (review?.['kind'] === 'ConversionReview') {
    const objects = request['objects'];
    return { 'kubeloop.webhook.review': 'ConversionReview', 'kubeloop.webhook.uid': short(request['uid']), 'kubeloop.conversion.desired_api_version': short(request['desiredAPIVersion']), 'kubeloop.conversion.objects': Array.isArray(objects) ? objects.length : undefined };
  }
  const kind = record(request['kind']);
  return {
    'kubeloop.webhook.review': short(review?.['kind']),
    'kubeloop.webhook.uid': short(request['uid']),
    'kubeloop.admission.operation': short(request['operation']),
    'kubeloop.admission.kind': short(kind?.['kind']),
    'k8s.namespace.name': short(request['namespace']) || undefined,
    'kubeloop.object.name': short(request['name']) || undefined,
    'kubeloop.admission.dry_run': typeof request['dryRun'] === 'boolean' ? request['dryRun'] : undefined,
  };
}

/** Attributes of an answer: whether an admission was allowed, why a request failed. */
export function answerAttributes(answer: WebhookAnswer): SpanAttributes {
  const response = record(record(answer.body)?.['response']);
  const allowed = response?.['allowed'];
  return { 'kubeloop.admission.allowed': typeof allowed === 'boolean' ? allowed : undefined, 'kubeloop.webhook.problem': answer.problem };
}

/** `log` with `fields` on every line (the span's trace and span IDs). */
export function withFields(log: WebhookLogger, fields: Record<string, unknown>): WebhookLogger {
  return {
    debug: (f, m) => log.debug({ ...fields, ...f }, m),
    info: (f, m) => log.info({ ...fields, ...f }, m),
    warn: (f, m) => log.warn({ ...fields, ...f }, m),
    error: (f, m) => log.error({ ...fields, ...f }, m),
  };
}
