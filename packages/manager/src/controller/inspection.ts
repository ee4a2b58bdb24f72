/**
 * What a controller shows of itself to the inspect endpoint: its queue
 * (depth by priority, oldest wait), the keys in flight and in backoff, the
 * keys suspected of triggering themselves, and a bounded ring of its last
 * reconciles. Errors are shown as log lines show them (redacted).
 */
import { describeError } from '../errors.js';
import { redactLine } from '../log/redact.js';
import type { Trigger } from './triggers.js';

/** Longest error text kept per record. */
const MAX_ERROR_CHARS = 1024;

/**
 * An error as the inspect endpoint shows it: its message (with its causes),
 * redacted as log lines are (Secret payloads, tokens and bearer
 * credentials cut), at most 1,024 characters.
 */
export function redactError(err: unknown): string {
  let text = describeError(err);
  try {
    const parsed = JSON.parse(redactLine(JSON.stringify({ error: text }))) as { error?: unknown };
    text = typeof parsed.error === 'string' ? parsed.error : '[withheld]';
  } catch {
    text = '[withheld]';
  }
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}…` : text;
}

/** One finished reconcile, as the inspect endpoint lists it. */
export interface ReconcileRecord {
  /** `namespace/name` (or `name`). */
  readonly key: string;
  readonly reconcileID: string;
  /** When it started, ms since the epoch. */
  readonly startedAt: number;
  readonly durationMs: number;
  readonly result: 'success' | 'requeue' | 'requeue_after' | 'error';
  /** The error, redacted as logs are (see {@link redactError}), when `result` is `error`. */
  readonly error?: string;
  /** What enqueued it. */
  readonly triggers: readonly Trigger[];
  readonly triggersOverflow: number;
}

/** The last `size` reconciles of a controller, oldest first when read. */
export class ReconcileHistory {
  readonly #ring: (ReconcileRecord | undefined)[];
  #next = 0;

  constructor(readonly size: number) {
    this.#ring = new Array<ReconcileRecord | undefined>(size);
  }

  push(record: ReconcileRecord): void {
    if (this.size === 0) return;
    this.#ring[this.#next] = record;
    this.#next = (this.#next + 1) % this.size;
  }

  /** The records kept, oldest first; only those of `key` when given. */
  list(key?: string): ReconcileRecord[] {
    const out: ReconcileRecord[] = [];
    for (let i = 0; i < this.size; i++) {
      const r = this.#ring[(this.#next + i) % this.size];
      if (r !== undefined && (key === undefined || r.key === key)) out.push(r);
    }
    return out;
  }
}

/** A key a worker holds now. */
export interface InFlightKey {
  readonly key: string;
  readonly reconcileID: string;
  readonly startedAt: number;
  readonly elapsedMs: number;
}

/** A key waiting out its failure backoff. */
export interface BackoffKey {
  readonly key: string;
  /** Failures since its last success (the rate limiter's count). */
  readonly failures: number;
  /** When it is retried, ms since the epoch. */
  readonly nextRetryAt: number;
  /** The last error, redacted. */
  readonly lastError: string;
  readonly lastErrorAt: number;
}

/** A key reconciled over and over by nothing but its own writes. */
export interface SelfTriggerSuspect {
  readonly key: string;
  /** Reconciles in a row caused only by the controller's own writes. */
  readonly streak: number;
  readonly since: number;
  readonly lastAt: number;
}

/** One controller, as the inspect endpoint shows it. */
export interface ControllerInspection {
  readonly name: string;
  /** The fleet cluster, when the controller runs for a member cluster. */
  readonly cluster?: string;
  readonly started: boolean;
  readonly paused: boolean;
  readonly synced: boolean;
  /** The kinds (`Kind.group/version`) whose CRD it waits for: not served by the API server now, their sources stopped until it is back (`ControllerStatus.waitingForCRD`). */
  readonly waitingForCRD: readonly string[];
  /** Whether its `for` kind is among them: its workers take no keys until the CRD is back. */
  readonly forKindMissing: boolean;
  /** Whether triggers are attributed (`ControllerOptions.triggers` is not false). */
  readonly triggers: boolean;
  /** Keys waiting, in all; and per priority (`high`, `0`, `low` as the metrics' labels, or the number). */
  readonly depth: number;
  readonly depthByPriority: Readonly<Record<string, number>>;
  /** Per priority, how long its longest-waiting key has waited, ms. */
  readonly oldestWaitMs: Readonly<Record<string, number>>;
  readonly inFlight: readonly InFlightKey[];
  readonly backoff: readonly BackoffKey[];
  readonly selfTriggering: readonly SelfTriggerSuspect[];
  /** The size of the reconcile history ring, and how many records it holds. */
  readonly historySize: number;
  readonly recentReconciles: number;
}

/** One key of a controller, as the inspect endpoint shows it. */
export interface KeyInspection {
  readonly controller: string;
  readonly key: string;
  /** Whether it waits in the queue now. */
  readonly waiting: boolean;
  /** What enqueued it since its last reconcile (taken when it starts). */
  readonly pendingTriggers: readonly Trigger[];
  readonly pendingTriggersOverflow: number;
  readonly inFlight?: InFlightKey;
  readonly backoff?: BackoffKey;
  /** Its reconciles in a row caused only by its own writes. */
  readonly selfTriggerStreak: number;
  /** Its reconciles still in the controller's history ring, oldest first. */
  readonly reconciles: readonly ReconcileRecord[];
}
