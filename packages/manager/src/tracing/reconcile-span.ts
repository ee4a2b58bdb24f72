/**
 * What a reconcile's span says once the reconcile is over: its result, the
 * requeue it asked for, the retries of a failed key, and what triggered it
 * when the reconcile context carries triggers (trigger attribution, issue
 * 38: `ctx.triggers`, read here if present, whatever its elements).
 */
import type { SpanAttributes } from '@kubeloop/client/internal';
import type { ReconcileContext } from '../controller/reconcile.js';

/** At most this many triggers are written on a span, each at most this many characters. */
const MAX_TRIGGERS = 16;
const MAX_TRIGGER_CHARS = 256;

function describeTrigger(trigger: unknown): string {
  let text: string;
  if (typeof trigger === 'string') text = trigger;
  else {
    try {
      text = JSON.stringify(trigger) ?? String(trigger);
    } catch {
      text = String(trigger);
    }
  }
  return text.length > MAX_TRIGGER_CHARS ? `${text.slice(0, MAX_TRIGGER_CHARS - 1)}…` : text;
}

/**
 * The attributes set on a reconcile span when it ends. `triggers`: the
 * context's `triggers` when it is an array (`kubeloop.reconcile.triggers`,
 * one string each: a string as it is, anything else as JSON; the first
 * {@link MAX_TRIGGERS}, with `kubeloop.reconcile.trigger_count` the whole count).
 */
export function reconcileSpanAttributes(context: ReconcileContext, result: string, requeueAfterMs: number | undefined, retries: number | undefined): SpanAttributes {
  const out: Record<string, SpanAttributes[string]> = {
    'kubeloop.reconcile.result': result,
    'kubeloop.reconcile.requeue': result === 'requeue' || result === 'requeue_after' || (result === 'error' && retries !== undefined),
    'kubeloop.reconcile.requeue_after_ms': requeueAfterMs,
    'kubeloop.reconcile.retries': retries,
  };
  const triggers = (context as { readonly triggers?: unknown }).triggers;
  if (Array.isArray(triggers)) {
    out['kubeloop.reconcile.trigger_count'] = triggers.length;
    out['kubeloop.reconcile.triggers'] = (triggers as unknown[]).slice(0, MAX_TRIGGERS).map(describeTrigger);
  }
  return out;
}
