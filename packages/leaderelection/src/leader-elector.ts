/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's
 * algorithm (tools/leaderelection with its LeaseLock).
 *
 * Candidates never trust the holder's timestamps: each remembers the lease
 * record it last saw and *when, by its own clock,* it saw that record change.
 * A lease held by another identity may be taken only once the record has not
 * changed for its `leaseDurationSeconds` as observed locally. So clocks may be
 * skewed arbitrarily between candidates; only their rates must roughly agree
 * (lease duration / renew deadline is the skew-rate tolerance).
 *
 * Writes use the Lease's resourceVersion (optimistic concurrency): when two
 * candidates race, the API server accepts exactly one update and the other
 * gets a conflict, re-reads, and sees the winner.
 *
 * A leader that loses the lease stops at once (its `onStartedLeading` signal
 * aborts the moment the renew deadline passes), and `leaseDuration >
 * renewDeadline` leaves the margin in which the old leader has stopped before
 * a new one can start. Beyond client-go, the term is fenced: a leader past its
 * renew deadline (a process resumed after a pause) steps down before it
 * writes the Lease again and is not `isLeader()` any more, whatever its
 * timers have run yet; and the term's write fence (`onStartedLeading`'s
 * second argument, a `LeaseFence`) refuses the writes of leader-only work run
 * under it (`runFenced`) from that deadline on, and from a loss.
 */
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { isAlreadyExists, isConflict, isNotFound } from '@kubeloop/client';
import type { Client, WriteFence } from '@kubeloop/client';
import { Lease } from '@kubeloop/scheme';
import { sleep } from '@kubeloop/workqueue';
import { LeaderElectionError } from './errors.js';
import { LeaseFence } from './lease-fence.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { randomUUID } = process.getBuiltinModule('node:crypto');

/** client-go's `JitterFactor`: acquire retries wait `retryPeriod × [1, 2.2)`; `renewDeadline` must exceed `retryPeriod × 1.2`. */
export const LEADER_ELECTION_JITTER_FACTOR = 1.2;

/** Defaults of {@link LeaderElectorOptions}, as client-go's core clients and controller-runtime use them. */
export const LEADER_ELECTION_DEFAULTS = Object.freeze({
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  releaseOnCancel: false,
});

/**
 * What an elector reports, for client-go's `leader_election_master_status`
 * gauge (`@kubeloop/manager` implements it over prom-client).
 *
 * @example
 * ```ts
 * const metrics: LeaderElectionMetrics = { leading: (name, on) => console.log(name, on ? 'leading' : 'standing by') };
 * ```
 */
export interface LeaderElectionMetrics {
  /** The elector of lease `name` is now leading (`true`) or not (`false`); called once with `false` at creation. Must not throw. */
  leading(name: string, leading: boolean): void;
}

/** Options for {@link createLeaderElector}. */
export interface LeaderElectorOptions {
  /** The client the Lease is read and written through (live reads: `client.apiReader` is used, never a cache). */
  readonly client: Client;
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Name of the Lease (created when missing). Also the `name` label of the status gauge. */
  readonly name: string;
  /** This candidate's identity, unique among candidates. Default: `${hostname}_${random UUID}`. */
  readonly identity?: string;
  /**
   * How long other candidates wait, from the last change of the lease they
   * observed, before they may take it over. Written to the Lease as
   * `leaseDurationSeconds`, rounded up to whole seconds (at least 1).
   * Default: 15 000.
   */
  readonly leaseDurationMs?: number;
  /**
   * How long the leader keeps retrying a failed renewal, from its last
   * successful one, before it gives up leadership. Must be less than
   * `leaseDurationMs`. Default: 10 000.
   */
  readonly renewDeadlineMs?: number;
  /**
   * Time between attempts: renewals while leading; acquire attempts (with
   * jitter, × [1, 2.2)) while not. `renewDeadlineMs` must exceed
   * `retryPeriodMs × 1.2`. Default: 2 000.
   */
  readonly retryPeriodMs?: number;
  /**
   * Give the lease up when `run`'s signal aborts while leading, once
   * `onStoppedLeading` has resolved: holder cleared, `leaseDurationSeconds`
   * 1, so another candidate takes over at once instead of waiting out the
   * lease. Only a lease still held is released: never after a loss (it is
   * someone else's, or the server cannot be reached), and the attempt is
   * bounded like a renewal (max(renewDeadline / 2, 1 s)). Default: false.
   */
  readonly releaseOnCancel?: boolean;
  /**
   * Called when this candidate becomes leader. `signal` aborts the moment
   * leadership ends (lost, or `run` cancelled): stop all leader-only work then.
   * `fence` is the term's write fence: run leader-only work under it
   * (`runFenced` of `@kubeloop/client`) and its writes are refused once the
   * lease is lost or has not been renewed within the renew deadline (a
   * cancelled run's fence holds while it drains and renews, and is revoked
   * when the run ends). Not awaited; a rejection or throw goes to `onError`.
   */
  readonly onStartedLeading?: (signal: AbortSignal, fence: WriteFence) => void | Promise<void>;
  /**
   * Called once leadership has ended (after `onStartedLeading`'s signal
   * aborted). Never called if this candidate never led. A returned promise is
   * awaited (a rejection goes to `onError`) before the lease is released
   * (`releaseOnCancel`) and before `run` resolves: resolve it once leader-only
   * work has drained. After a cancel the lease is still renewed while it
   * runs (until the renew deadline fails), so no other candidate starts
   * while this one still works; after a loss nothing is renewed: resolve at
   * once, the new leader may start `leaseDuration - renewDeadline` later.
   */
  readonly onStoppedLeading?: () => void | Promise<void>;
  /** Called when the observed holder changes to a new non-empty identity, this candidate's included. */
  readonly onNewLeader?: (identity: string) => void;
  /** Errors that were retried (API errors other than the expected NotFound / Conflict / AlreadyExists) and errors thrown by callbacks. Default: ignored. */
  readonly onError?: (err: unknown) => void;
  /**
   * Wall clock, ms since the epoch (fractions allowed). Used for the times
   * written to the Lease and for observation times (lease expiry as seen by
   * this candidate). Timers (retry period, renew deadline) use real time.
   * Default: `Date.now`.
   */
  readonly now?: () => number;
  /** Receives leadership changes (for the `leader_election_master_status{name}` gauge). Default: none. */
  readonly metrics?: LeaderElectionMetrics;
}

/** How {@link LeaderElector.run} ended: leadership `lost` (renew deadline passed, or another holder observed), or `cancelled` by its signal. */
export type LeaderElectionEnd = 'lost' | 'cancelled';

/** A candidate in a leader election. */
export interface LeaderElector {
  /** This candidate's identity. */
  readonly identity: string;
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Name of the Lease. */
  readonly name: string;
  /**
   * Campaign: try to acquire the lease every retry period until it is ours,
   * then lead (call `onStartedLeading`) and renew until leadership is lost or
   * `signal` aborts. Resolves `'lost'` when leadership was lost (the caller
   * decides what that means; the manager exits with a `LeaderElectionLost`
   * error), `'cancelled'` when `signal` aborted (before or while leading).
   * Never rejects for API errors (they are retried and reported to
   * `onError`). One run at a time; the elector may run again after a run ends.
   */
  run(signal?: AbortSignal): Promise<LeaderElectionEnd>;
  /**
   * True from acquiring the lease until leadership ends (`onStartedLeading`'s
   * signal aborts at the same moment this turns false), and only while the
   * lease was renewed within the renew deadline (by the monotonic clock: a
   * process resumed after a pause is not leader before it renews again).
   */
  isLeader(): boolean;
  /** The holder of the lease as last observed (possibly this candidate), or undefined if none was observed. */
  getLeader(): string | undefined;
  /**
   * A health check like client-go's `Check`, and more: while leading, a
   * `Lost` error if the lease was last renewed longer ago than
   * `leaseDurationMs + maxTolerableExpiredMs` (the renew loop should have
   * given up by then: it is stuck); while running and not leading, an
   * `Unavailable` error when no attempt has reached the Lease for that long
   * (refused, forbidden, timed out: this candidate could never lead), saying
   * why. Undefined when healthy or not running.
   */
  check(maxTolerableExpiredMs?: number): LeaderElectionError | undefined;
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The leader-election fields of a Lease spec. */
interface LeaseRecord {
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime: string | undefined;
  readonly renewTime: string | undefined;
  readonly leaseTransitions: number;
}

/** A Lease as read from or written to the API server. */
type StoredLease = Lease;

/**
 * A Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional digits
 * (`2026-12-02T15:04:05.123456Z`).
 */
export function formatMicroTime(epochMs: number): string {
  const wholeMs = Math.floor(epochMs);
  const micros = Math.min(999_999, (wholeMs % 1000) * 1000 + Math.floor((epochMs - wholeMs) * 1000));
  const seconds = new Date(wholeMs - (wholeMs % 1000)).toISOString().slice(0, 19);
  return `${seconds}.${String(micros).padStart(6, '0')}Z`;
}

function positive(value: number, what: string, who: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new LeaderElectionError('InvalidOptions', `${who}: ${what} must be a positive number of milliseconds, got ${String(value)}`);
  }
  return value;
}

/** A Lease holder's identity and timings, checked: what an elector and a ring member share. */
export interface LeaseTimings {
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/**
 * Resolve and check a Lease holder's identity (default `${hostname}_${random UUID}`)
 * and timings (client-go's defaults): each positive, lease duration >
 * renew deadline > retry period × `retryFactor` (the largest jittered
 * wait between attempts). `who` starts each message ("leader election",
 * "shard ring").
 *
 * @throws LeaderElectionError `InvalidOptions`
 */
export function resolveLeaseTimings(
  options: { readonly identity?: string | undefined; readonly leaseDurationMs?: number | undefined; readonly renewDeadlineMs?: number | undefined; readonly retryPeriodMs?: number | undefined },
  who: string,
  retryFactor: number,
): LeaseTimings {
  const identity = options.identity === undefined ? `${hostname()}_${randomUUID()}` : nonEmpty(options.identity, 'identity', who);
  const leaseDurationMs = positive(options.leaseDurationMs ?? LEADER_ELECTION_DEFAULTS.leaseDurationMs, 'leaseDurationMs', who);
  const renewDeadlineMs = positive(options.renewDeadlineMs ?? LEADER_ELECTION_DEFAULTS.renewDeadlineMs, 'renewDeadlineMs', who);
  const retryPeriodMs = positive(options.retryPeriodMs ?? LEADER_ELECTION_DEFAULTS.retryPeriodMs, 'retryPeriodMs', who);
  if (leaseDurationMs <= renewDeadlineMs) {
    throw new LeaderElectionError('InvalidOptions', `${who}: leaseDurationMs (${leaseDurationMs}) must be greater than renewDeadlineMs (${renewDeadlineMs})`);
  }
  if (renewDeadlineMs <= retryPeriodMs * retryFactor) {
    const bound = retryFactor === 1 ? `retryPeriodMs (${retryPeriodMs})` : `retryPeriodMs × ${retryFactor} (${retryPeriodMs * retryFactor})`;
    throw new LeaderElectionError('InvalidOptions', `${who}: renewDeadlineMs (${renewDeadlineMs}) must be greater than ${bound}`);
  }
  return { identity, leaseDurationMs, renewDeadlineMs, retryPeriodMs };
}

function nonEmpty(value: unknown, what: string, who = 'leader election'): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new LeaderElectionError('InvalidOptions', `${who}: ${what} must be a non-empty string`);
  }
  return value;
}

function recordOf(lease: StoredLease): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? '',
    leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
    acquireTime: spec.acquireTime === undefined ? undefined : String(spec.acquireTime),
    renewTime: spec.renewTime === undefined ? undefined : String(spec.renewTime),
    leaseTransitions: spec.leaseTransitions ?? 0,
  };
}

/** A record's identity for change detection (client-go compares the raw record bytes). */
function recordKey(r: LeaseRecord): string {
  return JSON.stringify([r.holderIdentity, r.leaseDurationSeconds, r.acquireTime ?? null, r.renewTime ?? null, r.leaseTransitions]);
}

function specOf(r: LeaseRecord): NonNullable<Lease['spec']> {
  const spec: NonNullable<Lease['spec']> = {
    holderIdentity: r.holderIdentity,
    leaseDurationSeconds: r.leaseDurationSeconds,
    leaseTransitions: r.leaseTransitions,
  };
  if (r.acquireTime !== undefined) spec.acquireTime = r.acquireTime;
  if (r.renewTime !== undefined) spec.renewTime = r.renewTime;
  return spec;
}

/**
 * Create a leader-election candidate. Validates the options like client-go's
 * `NewLeaderElector` and throws a `ManagerError` with reason `InvalidOptions`
 * when they cannot work: a missing client, empty namespace / name / identity,
 * non-positive durations, `leaseDurationMs <= renewDeadlineMs`,
 * `renewDeadlineMs <= retryPeriodMs × 1.2`.
 *
 * @example
 * ```ts
 * const elector = createLeaderElector({
 *   client, namespace: 'kube-system', name: 'harddisk-operator',
 *   onStartedLeading: (signal) => void runControllers(signal),
 *   metrics: { leading: (name, on) => console.log(name, on ? 'leading' : 'not leading') },
 * });
 * const end = await elector.run(shutdown.signal); // 'lost' | 'cancelled'
 * if (end === 'lost') process.exitCode = 1;
 * ```
 */
export function createLeaderElector(options: LeaderElectorOptions): LeaderElector {
  if (typeof options !== 'object' || options === null) throw new LeaderElectionError('InvalidOptions', 'leader election: options are required');
  if (typeof options.client !== 'object' || options.client === null) throw new LeaderElectionError('InvalidOptions', 'leader election: a client is required');
  const namespace = nonEmpty(options.namespace, 'namespace');
  const name = nonEmpty(options.name, 'name (of the Lease)');
  const { identity, leaseDurationMs, renewDeadlineMs, retryPeriodMs } = resolveLeaseTimings(options, 'leader election', LEADER_ELECTION_JITTER_FACTOR);
  return new Elector(options, namespace, name, identity, leaseDurationMs, renewDeadlineMs, retryPeriodMs);
}

class Elector implements LeaderElector {
  private readonly client: Client;
  private readonly now: () => number;
  private readonly leaseDurationSeconds: number;
  private readonly releaseOnCancel: boolean;
  private readonly metrics: LeaderElectionMetrics | undefined;
  /** Each acquire or renew attempt is cut off after this long: max(renewDeadline / 2, 1 s), as controller-runtime. */
  private readonly attemptTimeoutMs: number;

  /** The record last observed (read, or written by us), and when by our clock. */
  private observed: LeaseRecord | undefined;
  private observedKey = '';
  private observedTime = 0;
  /** The Lease object last read or written: the base of the next update (its resourceVersion). */
  private lease: StoredLease | undefined;
  private reportedLeader = '';

  /** performance.now() at the start of the last successful acquire or renew: the renew deadline counts from it. */
  private lastSuccessStart = 0;
  private running = false;
  private leading = false;
  /** performance.now() when the API server last answered an attempt as expected (a run's start before any). */
  private lastAnswer = 0;
  /** Why the attempts since `lastAnswer` failed (the last one's error). */
  private lastFailure: unknown;

  constructor(
    private readonly options: LeaderElectorOptions,
    readonly namespace: string,
    readonly name: string,
    readonly identity: string,
    private readonly leaseDurationMs: number,
    private readonly renewDeadlineMs: number,
    private readonly retryPeriodMs: number,
  ) {
    this.client = options.client;
    this.now = options.now ?? Date.now;
    this.leaseDurationSeconds = Math.max(1, Math.ceil(leaseDurationMs / 1000));
    this.releaseOnCancel = options.releaseOnCancel ?? LEADER_ELECTION_DEFAULTS.releaseOnCancel;
    this.attemptTimeoutMs = Math.max(renewDeadlineMs / 2, 1_000);
    this.metrics = options.metrics;
    this.metrics?.leading(name, false);
  }

  isLeader(): boolean {
    return this.leading && performance.now() - this.lastSuccessStart < this.renewDeadlineMs;
  }

  getLeader(): string | undefined {
    const holder = this.observed?.holderIdentity;
    return holder ? holder : undefined;
  }

  check(maxTolerableExpiredMs = 0): LeaderElectionError | undefined {
    if (this.leading) {
      if (this.now() - this.observedTime > this.leaseDurationMs + maxTolerableExpiredMs) {
        return new LeaderElectionError('Lost', `leader election: failed to renew lease ${this.namespace}/${this.name} (stuck renewing)`);
      }
      return undefined;
    }
    if (!this.running) return undefined;
    const silentMs = performance.now() - this.lastAnswer;
    if (silentMs <= this.leaseDurationMs + maxTolerableExpiredMs) return undefined;
    const why = this.lastFailure === undefined ? 'no answer' : describe(this.lastFailure);
    return new LeaderElectionError(
      'Unavailable',
      `leader election: lease ${this.namespace}/${this.name} could not be read or written for ${Math.round(silentMs / 1000)} s (${why}); this candidate cannot lead until it can (check the network and that its role grants get, create and update on leases in ${this.namespace})`,
      { cause: this.lastFailure },
    );
  }

  async run(signal?: AbortSignal): Promise<LeaderElectionEnd> {
    if (this.running) throw new LeaderElectionError('AlreadyRunning', `leader election: ${this.namespace}/${this.name} is already running for ${this.identity}`);
    this.running = true;
    this.lastAnswer = performance.now();
    this.lastFailure = undefined;
    const runSignal = signal ?? new AbortController().signal;
    try {
      if (!(await this.acquire(runSignal))) return 'cancelled';
      if (runSignal.aborted) {
        // Acquired in the very attempt the abort interrupted: never start leading.
        if (this.releaseOnCancel) await this.release();
        return 'cancelled';
      }
      return await this.lead(runSignal);
    } finally {
      this.running = false;
    }
  }

  // --- the two loops --------------------------------------------------------

  /** Attempt at once, then every retry period × [1, 2.2) until acquired (true) or cancelled (false). */
  private async acquire(runSignal: AbortSignal): Promise<boolean> {
    while (!runSignal.aborted) {
      // No attempt may hang on a dead network: each has its own timeout.
      const ok = await this.tryAcquireOrRenew(AbortSignal.any([runSignal, AbortSignal.timeout(this.attemptTimeoutMs)]));
      this.maybeReportTransition();
      if (ok) return true;
      await sleep(this.retryPeriodMs * (1 + Math.random() * LEADER_ELECTION_JITTER_FACTOR), runSignal);
    }
    return false;
  }

  /**
   * Lead: renew every retry period until the renew deadline passes without a
   * success, another holder is seen, or `runSignal` aborts.
   *
   * A lost lease ends the run at once: leader-only work is told to stop, and
   * nothing is released (the lease is either someone else's or unreachable;
   * it expires on its own, `leaseDuration - renewDeadline` after the loss at
   * the earliest, by the other candidates' clocks). A cancelled run keeps
   * renewing while `onStoppedLeading` drains leader-only work, so no other
   * candidate can start while that work still runs, then releases the lease
   * if it is still held (`releaseOnCancel`).
   */
  private async lead(runSignal: AbortSignal): Promise<LeaderElectionEnd> {
    const leadingController = new AbortController();
    /** Stops the renew loop: on a loss, or once a cancelled run has drained. */
    const renewing = new AbortController();
    let end: LeaderElectionEnd | undefined;
    /** False once the lease is not ours any more (renew deadline passed, or another holder seen). */
    let held = true;
    let ended!: () => void;
    const leadershipOver = new Promise<void>((resolve) => (ended = resolve));
    const stepDown = (why: LeaderElectionEnd, reason: unknown): void => {
      if (end !== undefined) return;
      end = why;
      this.leading = false;
      this.metrics?.leading(this.name, false);
      leadingController.abort(reason);
      ended();
    };
    const lose = (reason: LeaderElectionError): void => {
      fence.revoke(reason.message);
      held = false;
      renewing.abort(reason);
      stepDown('lost', reason);
    };
    let deadline: NodeJS.Timeout | undefined;
    const armDeadline = (from: number): void => {
      clearTimeout(deadline);
      deadline = setTimeout(
        () => lose(new LeaderElectionError('Lost', `leader election: lease ${this.namespace}/${this.name} not renewed within ${this.renewDeadlineMs} ms`)),
        Math.max(0, this.renewDeadlineMs - (performance.now() - from)),
      );
    };
    const onCancel = (): void => stepDown('cancelled', runSignal.reason);
    const fence = new LeaseFence({ renewedAt: () => this.lastSuccessStart }, this.renewDeadlineMs, `leadership of lease ${this.namespace}/${this.name}`);

    this.leading = true;
    this.metrics?.leading(this.name, true);
    armDeadline(this.lastSuccessStart);
    runSignal.addEventListener('abort', onCancel, { once: true });
    if (runSignal.aborted) onCancel();
    this.invoke(() => this.options.onStartedLeading?.(leadingController.signal, fence));

    const renewLoop = (async (): Promise<void> => {
      while (!renewing.signal.aborted) {
        await sleep(this.retryPeriodMs, renewing.signal);
        if (renewing.signal.aborted) break;
        if (performance.now() - this.lastSuccessStart >= this.renewDeadlineMs) {
          // Past the deadline (a pause, say) before its timer ran: stop leading before writing the Lease again.
          lose(new LeaderElectionError('Lost', `leader election: lease ${this.namespace}/${this.name} not renewed within ${this.renewDeadlineMs} ms`));
          break;
        }
        const started = performance.now();
        const renewedBefore = this.lastSuccessStart;
        const ok = await this.tryAcquireOrRenew(AbortSignal.any([renewing.signal, AbortSignal.timeout(this.attemptTimeoutMs)]));
        this.maybeReportTransition();
        if (renewing.signal.aborted) break;
        const lateBy = performance.now() - renewedBefore - this.renewDeadlineMs;
        if (ok && lateBy >= 0) {
          // Answered past the deadline (a pause while it was in flight; on resume Node runs the I/O that came in
          // before the timers that fell due): the term's fence may have refused a write meanwhile. client-go's renew
          // deadline fails such a renewal too: lost.
          lose(new LeaderElectionError('Lost', `leader election: lease ${this.namespace}/${this.name} not renewed within ${this.renewDeadlineMs} ms (its renewal was answered ${Math.round(lateBy)} ms past the deadline)`));
          break;
        }
        if (ok) {
          armDeadline(started);
          fence.arm();
        } else if (this.observed !== undefined && this.observed.holderIdentity !== this.identity) {
          // Someone else holds the lease now (they judged it expired): we lost it, whatever the deadline says.
          lose(new LeaderElectionError('Lost', `leader election: lease ${this.namespace}/${this.name} is held by ${this.observed.holderIdentity || '(nobody)'}`));
        }
      }
    })();

    try {
      await leadershipOver;
      // Leader-only work drains (a cancelled run goes on renewing meanwhile; a lost one has stopped).
      await this.invokeAwait(() => this.options.onStoppedLeading?.());
    } finally {
      renewing.abort(new LeaderElectionError('Lost', 'leader election: stopped renewing'));
      clearTimeout(deadline);
      runSignal.removeEventListener('abort', onCancel);
      await renewLoop;
      fence.revoke(`leadership of lease ${this.namespace}/${this.name} ended`);
    }
    if (end === 'cancelled' && held && this.releaseOnCancel) await this.release();
    return end ?? 'cancelled';
  }

  // --- one attempt (client-go's tryAcquireOrRenew) --------------------------

  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const started = performance.now();
    const now = this.now();
    const stamp = formatMicroTime(now);
    const desired = (base: Partial<LeaseRecord>): LeaseRecord => ({
      holderIdentity: this.identity,
      leaseDurationSeconds: this.leaseDurationSeconds,
      acquireTime: stamp,
      renewTime: stamp,
      leaseTransitions: 0,
      ...base,
    });

    // 1. Fast path: the leader updates the object it last wrote, assuming nobody else did.
    if (this.lease !== undefined && this.observed !== undefined && this.observedIsMe() && this.isLeaseValid(now)) {
      const record = desired({ acquireTime: this.observed.acquireTime, leaseTransitions: this.observed.leaseTransitions });
      if (await this.write(record, signal, started)) return true;
      if (signal.aborted) return false;
      // Fall back to reading what is there.
    }

    // 2. Read, or create when missing.
    let lease: StoredLease;
    try {
      lease = await this.client.apiReader.get(Lease, { namespace: this.namespace, name: this.name }, { signal });
      this.answered();
    } catch (err) {
      if (!isNotFound(err)) {
        this.attemptFailed(err, signal);
        return false;
      }
      this.answered();
      const record = desired({});
      try {
        this.lease = (await this.client.create(
          { apiVersion: Lease.apiVersion, kind: Lease.kind, metadata: { namespace: this.namespace, name: this.name }, spec: specOf(record) },
          { signal },
        )) as StoredLease;
      } catch (createErr) {
        // AlreadyExists: another candidate created it first; the next attempt reads it.
        if (isAlreadyExists(createErr)) this.answered();
        else this.attemptFailed(createErr, signal);
        return false;
      }
      this.setObserved(record);
      this.lastSuccessStart = started;
      return true;
    }
    this.lease = lease;

    // 3. Observe: a changed record restarts its expiry, by our clock.
    const seen = recordOf(lease);
    if (recordKey(seen) !== this.observedKey) this.setObserved(seen);
    if (seen.holderIdentity !== '' && this.isLeaseValid(now) && !this.observedIsMe()) return false;

    // 4. Take it (or renew it, if it is ours).
    const record = this.observedIsMe()
      ? desired({ acquireTime: seen.acquireTime, leaseTransitions: seen.leaseTransitions })
      : desired({ leaseTransitions: seen.leaseTransitions + 1 });
    return this.write(record, signal, started);
  }

  /** Update the Lease to `record` from the last object seen. Conflicts (someone else wrote) are expected and not reported. */
  private async write(record: LeaseRecord, signal: AbortSignal, started: number): Promise<boolean> {
    const base = this.lease;
    if (base === undefined) return false;
    try {
      this.lease = (await this.client.update({ ...base, apiVersion: Lease.apiVersion, kind: Lease.kind, spec: specOf(record) }, { signal })) as StoredLease;
    } catch (err) {
      if (isConflict(err)) this.answered();
      else this.attemptFailed(err, signal);
      return false;
    }
    this.answered();
    this.setObserved(record);
    this.lastSuccessStart = started;
    return true;
  }

  /**
   * Give the lease up if we still hold it (holder cleared, duration 1 s):
   * others may take it at once. Bounded like one renewal attempt
   * (max(renewDeadline / 2, 1 s)); when the server cannot be reached in that
   * time the lease simply expires.
   */
  private async release(): Promise<void> {
    if (!this.observedIsMe() || this.lease === undefined) return;
    const stamp = formatMicroTime(this.now());
    const released: LeaseRecord = {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: stamp,
      renewTime: stamp,
      leaseTransitions: this.observed?.leaseTransitions ?? 0,
    };
    const signal = AbortSignal.timeout(this.attemptTimeoutMs);
    if (await this.write(released, signal, performance.now())) return;
    if (signal.aborted) return;
    // Our last renewal may have landed unseen (aborted client-side): re-read, and release only if it is still ours.
    let lease: StoredLease;
    try {
      lease = await this.client.apiReader.get(Lease, { namespace: this.namespace, name: this.name }, { signal });
    } catch (err) {
      this.reportUnlessAborted(err, signal);
      return;
    }
    this.lease = lease;
    const seen = recordOf(lease);
    if (recordKey(seen) !== this.observedKey) this.setObserved(seen);
    if (seen.holderIdentity === this.identity) await this.write({ ...released, leaseTransitions: seen.leaseTransitions }, signal, performance.now());
  }

  // --- bookkeeping ------------------------------------------------------------

  private setObserved(record: LeaseRecord): void {
    this.observed = record;
    this.observedKey = recordKey(record);
    this.observedTime = this.now();
  }

  private observedIsMe(): boolean {
    return this.observed?.holderIdentity === this.identity;
  }

  /** The observed record has not outlived its duration since we observed it. */
  private isLeaseValid(now: number): boolean {
    return this.observed !== undefined && this.observedTime + this.observed.leaseDurationSeconds * 1000 > now;
  }

  private maybeReportTransition(): void {
    const holder = this.observed?.holderIdentity ?? '';
    if (holder === this.reportedLeader) return;
    this.reportedLeader = holder;
    if (holder !== '') this.invoke(() => this.options.onNewLeader?.(holder));
  }

  /** The API server answered an attempt as the algorithm expects (the Lease, NotFound, Conflict, AlreadyExists). */
  private answered(): void {
    this.lastAnswer = performance.now();
    this.lastFailure = undefined;
  }

  /** An attempt failed (refused, forbidden, timed out): remembered for {@link check}, reported unless the attempt was aborted. */
  private attemptFailed(err: unknown, signal: AbortSignal): void {
    this.lastFailure = signal.aborted ? new LeaderElectionError('Unavailable', `an attempt got no answer within ${this.attemptTimeoutMs} ms`, { cause: err }) : err;
    this.reportUnlessAborted(err, signal);
  }

  private reportUnlessAborted(err: unknown, signal: AbortSignal): void {
    if (!signal.aborted) this.report(err);
  }

  private report(err: unknown): void {
    try {
      this.options.onError?.(err);
    } catch {
      // An error handler that throws has nowhere left to report to.
    }
  }

  /** Run a user callback and wait for its promise, if any; a throw or rejection goes to `onError`. */
  private async invokeAwait(fn: () => unknown): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.report(err);
    }
  }

  /** Run a user callback: a throw or a rejected promise goes to `onError`, never out of the loop. */
  private invoke(fn: () => unknown): void {
    try {
      const result = fn();
      if (result instanceof Promise) result.catch((err: unknown) => this.report(err));
    } catch (err) {
      this.report(err);
    }
  }
}

