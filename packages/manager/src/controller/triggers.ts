/**
 * Trigger attribution: what enqueued a key since its last reconcile. Each
 * waiting key keeps a bounded set of triggers (the same source, event and
 * object fold into one entry with a count; past the bound only an overflow
 * count grows), taken when a worker hands the key to the reconciler
 * (`ctx.triggers`). Delayed requeues (backoff, `requeueAfter`) are noted
 * with their deadline and join the set of the reconcile they start.
 */

/** Where a trigger came from. */
export type TriggerSource =
  /** An event of the `for` kind. */
  | 'for'
  /** An event of an owned kind, mapped to its controller owner. */
  | 'owns'
  /** An event of a `watches` kind, through its handler. */
  | 'watches'
  /** A custom source (an Observable, a fleet's inbox). */
  | 'source'
  /** The controller itself: a requeue, a retry, the periodic resync, a shard handoff, the pause annotation's removal. */
  | 'controller'
  /** `Controller.enqueue` by hand. */
  | 'manual';

/**
 * What happened. Informer events: `add`, `update`, `delete`;
 * `initial-list` (an object of the informer's first list),
 * `leadership-start` (the first list of a controller that starts cold when
 * this replica becomes leader), `crd-established` (the first list of a kind
 * whose CRD was missing when the controller started), `informer-resync` (an
 * update that changed nothing). Requeues: `error-backoff` (the reconcile
 * failed), `requeue` (`Result.requeue`), `requeue-after`
 * (`Result.requeueAfter`), `periodic-resync` (`syncPeriodMs`),
 * `shard-handoff` (a shard bucket started here), `pause-lifted` (the pause
 * annotation was removed), `enqueue` (a custom source or by hand).
 */
export type TriggerEvent =
  | 'add'
  | 'update'
  | 'delete'
  | 'initial-list'
  | 'leadership-start'
  | 'crd-established'
  | 'informer-resync'
  | 'error-backoff'
  | 'requeue'
  | 'requeue-after'
  | 'periodic-resync'
  | 'shard-handoff'
  | 'pause-lifted'
  | 'enqueue';

/** One reason a key was enqueued, as a source reports it. */
export interface TriggerInput {
  readonly source: TriggerSource;
  readonly event: TriggerEvent;
  /** The kind of the object seen (`ConfigMap`); absent for requeues. */
  readonly kind?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** The resourceVersion of the object seen. */
  readonly resourceVersion?: string;
  /** A handler's map function gave the key (`owns`, `enqueueOwner`, `enqueueMapped`): the object seen is not the one reconciled. */
  readonly mapped?: boolean;
  /** The event is only the echo of a write this controller made (the resourceVersion its write returned). */
  readonly ownWrite?: boolean;
  /**
   * The W3C trace context the write that made this event recorded on the
   * object (`kubeloop.dev/traceparent`, set with `tracing.linkWrites`): the
   * reconcile's span links to it. Only with `tracing.linkWrites` on, for an
   * add or an update that changed the annotation.
   */
  readonly traceparent?: string;
}

/** One entry of `ctx.triggers`: a trigger, folded with its repeats since the last reconcile. */
export interface Trigger extends TriggerInput {
  /** How many times it came (same source, event, kind, object) since the last reconcile; `resourceVersion` is the last one's. */
  readonly count: number;
  /** When it came first and last, ms since the epoch. */
  readonly firstAt: number;
  readonly lastAt: number;
}

/** The triggers of one reconcile. */
export interface TriggerSet {
  readonly triggers: readonly Trigger[];
  /** Triggers that came beyond the bound (not folded into an entry): counted, not kept. */
  readonly overflow: number;
}

/** Options of trigger attribution (`ControllerOptions.triggers`). */
export interface TriggerOptions {
  /** Distinct triggers kept per waiting key; more are only counted (`overflow`). Default: 8. */
  readonly maxPerKey?: number;
  /**
   * Reconciles in a row caused by nothing but the controller's own writes
   * (each trigger an echo of a write it made) after which the key is
   * reported as self-triggering: a warning log line, a `SelfTriggering`
   * Warning Event on the object, `kubeloop_reconcile_self_triggered_total`.
   * Default: 3.
   */
  readonly selfTriggerThreshold?: number;
  /** Finished reconciles remembered per controller for the inspect endpoint (a ring). Default: 128. */
  readonly historySize?: number;
}

/**
 * What a kind source adds to a trigger for the ledger: the kind's identity
 * (to look its object up in the own writes again when the reconcile
 * starts: the echo of a write can arrive before the write's answer), and
 * whether the source drops own-write echoes (`ignoreOwnWrites()`).
 */
export interface SourceTrigger extends TriggerInput {
  readonly kindId?: string;
  readonly dropsOwnWrites?: boolean;
}

/** Whether the object at `resourceVersion` is what this controller's last write of it returned. */
export type EchoCheck = (kindId: string, namespace: string | undefined, name: string, resourceVersion: string) => boolean;

interface Held {
  source: TriggerSource;
  kindId: string | undefined;
  dropsOwnWrites: boolean;
  /** Events folded here not known as own writes when they came (their write's answer may not have been read yet): how many, and the last one's resourceVersion. */
  unresolved: number;
  unresolvedRv: string | undefined;
  event: TriggerEvent;
  kind: string | undefined;
  namespace: string | undefined;
  name: string | undefined;
  resourceVersion: string | undefined;
  mapped: boolean;
  ownWrite: boolean;
  traceparent: string | undefined;
  count: number;
  firstAt: number;
  lastAt: number;
}

interface Waiting {
  readonly held: Held[];
  overflow: number;
}

/** The triggers a reconcile starts with; `drop` when every one was an own-write echo of a source that drops them (`ignoreOwnWrites()`): nothing to reconcile. */
export interface TakenTriggers extends TriggerSet {
  readonly drop: boolean;
  /** Own-write echoes dropped at the start of the reconcile. */
  readonly dropped: number;
}

const EMPTY: TriggerSet = Object.freeze({ triggers: Object.freeze([]), overflow: 0 });

/** The triggers of a reconcile nothing was recorded for (attribution off, or a key enqueued some other way). */
export const NO_TRIGGERS: TakenTriggers = Object.freeze({ ...EMPTY, drop: false, dropped: 0 });
const NOT_DROPPED = NO_TRIGGERS;

function same(h: Held, t: TriggerInput): boolean {
  return h.source === t.source && h.event === t.event && h.name === t.name && h.namespace === t.namespace && h.kind === t.kind && h.mapped === (t.mapped === true);
}

function toTrigger(h: Held, ownWrite: boolean): Trigger {
  // Assigned field by field (no spreads): one of these is made per trigger at each reconcile's start.
  const t: { -readonly [K in keyof Trigger]: Trigger[K] } = { source: h.source, event: h.event, count: h.count, firstAt: h.firstAt, lastAt: h.lastAt };
  if (h.kind !== undefined) t.kind = h.kind;
  if (h.namespace !== undefined) t.namespace = h.namespace;
  if (h.name !== undefined) t.name = h.name;
  if (h.resourceVersion !== undefined) t.resourceVersion = h.resourceVersion;
  if (h.mapped) t.mapped = true;
  if (ownWrite) t.ownWrite = true;
  if (h.traceparent !== undefined) t.traceparent = h.traceparent;
  return t;
}

/**
 * The triggers of one queue's waiting keys. `record` is on the event path:
 * one Map lookup, a scan of at most `maxPerKey` entries, and one small
 * record per distinct trigger; nothing else is allocated.
 */
export class TriggerLedger {
  readonly #waiting = new Map<string, Waiting>();
  /** Delayed requeues: the trigger and when the queue adds the key (performance.now()). */
  readonly #delayed = new Map<string, { readonly trigger: TriggerInput; readonly readyAt: number }>();

  constructor(
    private readonly maxPerKey: number,
    private readonly counted: (t: TriggerInput) => void,
    private readonly isEcho?: EchoCheck,
  ) {}

  /** Keys with triggers waiting (a waiting or held-and-re-added key). */
  get size(): number {
    return this.#waiting.size;
  }

  /** Note that `t` enqueued `key`. */
  record(key: string, t: SourceTrigger): void {
    this.counted(t);
    // An add or update of a kind whose writes are tracked, not known as an own write now: looked up again at the reconcile.
    const unresolved = t.kindId !== undefined && t.ownWrite !== true && t.resourceVersion !== undefined && t.name !== undefined && (t.event === 'add' || t.event === 'update');
    const now = Date.now();
    const w = this.#waiting.get(key);
    if (w !== undefined) {
      for (const h of w.held) {
        if (!same(h, t)) continue;
        h.count++;
        h.lastAt = now;
        if (t.resourceVersion !== undefined) h.resourceVersion = t.resourceVersion;
        if (t.traceparent !== undefined) h.traceparent = t.traceparent;
        // A folded entry is an own write only if every event it folds was one.
        if (unresolved) {
          h.unresolved++;
          h.unresolvedRv = t.resourceVersion;
        } else h.ownWrite = h.ownWrite && t.ownWrite === true;
        return;
      }
      if (w.held.length >= this.maxPerKey) {
        w.overflow++;
        return;
      }
    }
    const h: Held = {
      source: t.source,
      kindId: t.kindId,
      dropsOwnWrites: t.dropsOwnWrites === true,
      unresolved: unresolved ? 1 : 0,
      unresolvedRv: unresolved ? t.resourceVersion : undefined,
      event: t.event,
      kind: t.kind,
      namespace: t.namespace,
      name: t.name,
      resourceVersion: t.resourceVersion,
      mapped: t.mapped === true,
      ownWrite: unresolved || t.ownWrite === true,
      traceparent: t.traceparent,
      count: 1,
      firstAt: now,
      lastAt: now,
    };
    // A new key's list starts with its one entry (an empty array's first push reserves 17 slots).
    if (w === undefined) this.#waiting.set(key, { held: [h], overflow: 0 });
    else w.held.push(h);
  }

  /** Note a requeue the queue adds after `delayMs`: it joins the set of the first reconcile taken once that time has come. */
  delayed(key: string, t: TriggerInput, delayMs: number): void {
    if (!(delayMs > 0)) {
      this.record(key, t);
      return;
    }
    const readyAt = performance.now() + delayMs;
    const prev = this.#delayed.get(key);
    // As the queue: the earlier deadline wins.
    if (prev !== undefined && prev.readyAt <= readyAt) return;
    this.#delayed.set(key, { trigger: t, readyAt });
  }

  /** When the delayed requeue of `key` is due (performance.now() clock), if one is pending. */
  delayedUntil(key: string): number | undefined {
    return this.#delayed.get(key)?.readyAt;
  }

  /** The triggers of `key` now waiting, without taking them. */
  peek(key: string): TriggerSet {
    const w = this.#waiting.get(key);
    return w === undefined ? EMPTY : { triggers: w.held.map((h) => this.#resolved(h)), overflow: w.overflow };
  }

  /**
   * Take the triggers of `key` as its reconcile starts (a due delayed
   * requeue among them); later ones wait for the next. Echoes of own
   * writes whose answer had not been read when the event came are
   * recognised now; those of a source that drops them are dropped.
   */
  take(key: string): TakenTriggers {
    if (this.#delayed.size > 0) {
      const d = this.#delayed.get(key);
      if (d !== undefined && d.readyAt <= performance.now() + 1) {
        this.#delayed.delete(key);
        this.record(key, d.trigger);
      }
    }
    const w = this.#waiting.get(key);
    if (w === undefined) return NOT_DROPPED;
    this.#waiting.delete(key);
    const triggers: Trigger[] = [];
    let dropped = 0;
    for (const h of w.held) {
      const t = this.#resolved(h);
      if (t.ownWrite === true && h.dropsOwnWrites) dropped += t.count;
      else triggers.push(t);
    }
    return { triggers, overflow: w.overflow, drop: triggers.length === 0 && w.overflow === 0 && dropped > 0, dropped };
  }

  /** An entry as a Trigger, its unresolved events looked up in the own writes once more. */
  #resolved(h: Held): Trigger {
    if (h.unresolved > 0) {
      const own = h.unresolved === 1 && this.isEcho !== undefined && h.kindId !== undefined && h.name !== undefined && h.unresolvedRv !== undefined && this.isEcho(h.kindId, h.namespace, h.name, h.unresolvedRv);
      return toTrigger(h, h.ownWrite && own);
    }
    return toTrigger(h, h.ownWrite);
  }

  /** Forget everything (the queue was shut down). */
  clear(): void {
    this.#waiting.clear();
    this.#delayed.clear();
  }
}

/** Whether a reconcile's triggers are nothing but echoes of the controller's own writes. */
export function ownWritesOnly(set: TriggerSet): boolean {
  return set.triggers.length > 0 && set.overflow === 0 && set.triggers.every((t) => t.ownWrite === true);
}

/**
 * One line per trigger, for logs and the CLI:
 * `for update default/disk-1 rv=42 own-write x3`.
 *
 * @example
 * ```ts
 * describeTrigger({ source: 'controller', event: 'error-backoff', count: 1, firstAt: 0, lastAt: 0 }); // 'controller error-backoff'
 * ```
 */
export function describeTrigger(t: Trigger | TriggerInput): string {
  const parts: string[] = [t.source, t.event];
  if (t.kind !== undefined) parts.push(t.kind);
  if (t.name !== undefined) parts.push(t.namespace ? `${t.namespace}/${t.name}` : t.name);
  if (t.resourceVersion !== undefined) parts.push(`rv=${t.resourceVersion}`);
  if (t.mapped === true) parts.push('mapped');
  if (t.ownWrite === true) parts.push('own-write');
  const count = (t as Partial<Trigger>).count;
  if (count !== undefined && count > 1) parts.push(`x${count}`);
  return parts.join(' ');
}

/**
 * Keys reconciled over and over by nothing but their own writes. A streak
 * grows by one for each such reconcile and ends at any other; at the
 * threshold the key is reported once per streak. Bounded: at most
 * `maxKeys` streaks are remembered (the oldest go first).
 */
export class SelfTriggerWatch {
  readonly #streaks = new Map<string, { count: number; since: number; lastAt: number }>();

  constructor(
    readonly threshold: number,
    private readonly maxKeys = 4096,
  ) {}

  /** Record a reconcile's triggers; true exactly when this reconcile makes the key's streak reach the threshold. */
  observe(key: string, set: TriggerSet): boolean {
    if (!ownWritesOnly(set)) {
      this.#streaks.delete(key);
      return false;
    }
    const now = Date.now();
    let s = this.#streaks.get(key);
    if (s === undefined) {
      s = { count: 0, since: now, lastAt: now };
      if (this.#streaks.size >= this.maxKeys) {
        const oldest = this.#streaks.keys().next().value;
        if (oldest !== undefined) this.#streaks.delete(oldest);
      }
      this.#streaks.set(key, s);
    }
    s.count++;
    s.lastAt = now;
    return s.count === this.threshold;
  }

  /** Keys whose streak is at or past the threshold: reconciled `count` times in a row by their own writes since `since`. */
  suspects(): { key: string; streak: number; since: number; lastAt: number }[] {
    const out: { key: string; streak: number; since: number; lastAt: number }[] = [];
    for (const [key, s] of this.#streaks) if (s.count >= this.threshold) out.push({ key, streak: s.count, since: s.since, lastAt: s.lastAt });
    return out;
  }

  /** The streak of one key (0 when none). */
  streakOf(key: string): number {
    return this.#streaks.get(key)?.count ?? 0;
  }
}
