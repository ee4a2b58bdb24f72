/**
 * What a reconcile's span says once the reconcile is over: its result, the
 * requeue it asked for, the retries of a failed key, and what triggered it
 * when the reconcile context carries triggers (trigger attribution, issue
 * 38: `ctx.triggers`, read here if present, whatever its elements).
 */
import type { SpanAttributes } from '@kubeloop/client/internal';
import type { ReconcileContext } from '../controller/reconcile.js';
import { ownWritesOnly } from '../controller/triggers.js';
import type { TriggerSet } from '../controller/triggers.js';

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

/** At most this many links on a reconcile span (a key's triggers are bounded already: `triggers.maxPerKey`). */
const MAX_LINKS = 8;

/**
 * The trace contexts a reconcile's span links to: those of the writes that
 * triggered it (`Trigger.traceparent`, with `tracing.linkWrites`), each
 * once, at most {@link MAX_LINKS}; undefined when none.
 */
export function reconcileLinks(set: TriggerSet): string[] | undefined {
  let out: string[] | undefined;
  for (const t of set.triggers) {
    const tp = t.traceparent;
    if (tp === undefined || out?.includes(tp) === true) continue;
    (out ??= []).push(tp);
    if (out.length >= MAX_LINKS) break;
  }
  return out;
}

/**
 * Whether a reconcile's writes record its trace context (with
 * `tracing.linkWrites`): not when trigger attribution is off, nor when it
 * was woken by nothing but the echoes of its own writes. Such a reconcile
 * starts no new chain, and a write it repeats without comparing (a blind
 * merge patch) must stay the no-op it was: a new trace context each time
 * would make it a write whose echo wakes it again, forever.
 */
export function reconcileStampsWrites(attribution: boolean, set: TriggerSet): boolean {
  return attribution && !ownWritesOnly(set);
}
