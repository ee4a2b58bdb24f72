/**
 * A shard ring without a coordinator: each replica holds a Lease of its own
 * (named for the ring and its identity, labelled with the ring's name) and
 * renews it; the ring is the set of live Leases; the hash space's buckets
 * are split over the live members by `assignBuckets`, which every member
 * computes alike from the same Leases.
 *
 * Handoff without overlap is fenced through the Leases. Each member's Lease
 * records the buckets it holds (`kubeloop.dev/shard-held`). A member:
 * - stops taking a bucket it should no longer have at once, waits until its
 *   in-flight work there has drained (its drainers resolve), and only then
 *   removes the bucket from its Lease;
 * - claims a bucket it should have only while no live member's Lease holds
 *   it: it writes the claim, reads every Lease again, and starts the bucket
 *   only if no other live member holds it. Two members that claim one bucket
 *   at once each write before they read, so at least one sees the other and
 *   backs off (both may; they try again a few periods later).
 * A new member announces itself (writes its Lease) one round before it claims
 * anything, so replicas started together see each other and split the
 * buckets at once, rather than the first one taking every bucket and handing
 * most of them on.
 * A member is live while its Lease keeps changing: one not renewed for its
 * `leaseDurationSeconds`, as observed on this replica's clock (never the
 * holder's timestamps), is dead, and its buckets are claimed; the member
 * that takes them over deletes its Lease (only if unchanged since). A Lease
 * seen for the first time is aged by its `renewTime` less one lease
 * duration of tolerated clock skew: one renewed more than two durations ago
 * is dead at once (a joiner does not wait out a Lease left behind).
 *
 * Fencing (docs/sharding.md states the guarantee): each bucket worked on
 * here has a write fence (`fence(bucket)`, a `LeaseFence`), revoked when the
 * bucket is handed on and, by the clock, once this member has not renewed
 * within `renewDeadlineMs` (< the lease duration): a sharded reconcile's
 * writes go through it. A member past its renew deadline stops all its
 * buckets and drops them from its Lease before it writes the Lease again,
 * and then claims as a newcomer (a process resumed after a pause).
 */
import { performance } from 'node:perf_hooks';
import { fnv1a64, isAlreadyExists, isConflict, isNotFound } from '@kubeloop/client';
import type { Client, ShardRange, WriteFence } from '@kubeloop/client';
import { currentTracer, traced } from '@kubeloop/client/internal';
import { Lease } from '@kubeloop/scheme';
import { sleep } from '@kubeloop/workqueue';
import { LeaderElectionError } from './errors.js';
import { LeaseFence } from './lease-fence.js';
import { formatMicroTime, resolveLeaseTimings } from './leader-elector.js';
import { assignBuckets, bucketOf, bucketsToRanges, checkBuckets, DEFAULT_RING_BUCKETS } from './ring-assignment.js';

/** The label naming a member Lease's ring. */
export const SHARD_RING_LABEL = 'kubeloop.dev/shard-ring';
/** The annotation listing the buckets a member holds (`0-3,7,9-12`). */
export const SHARD_HELD_ANNOTATION = 'kubeloop.dev/shard-held';
/** The annotation with the ring's bucket count (members must agree). */
export const SHARD_BUCKETS_ANNOTATION = 'kubeloop.dev/shard-buckets';

/** Options of {@link createShardRing}. */
export interface ShardRingOptions {
  /** Leases are read and written through it (live calls, never a cache). */
  readonly client: Client;
  /** Namespace of the member Leases. */
  readonly namespace: string;
  /** The ring's name (a DNS label, ≤ 63 characters): the label value of its Leases. */
  readonly name: string;
  /** This member's identity, unique in the ring. Default: `${hostname}_${random UUID}`. */
  readonly identity?: string;
  /** A member not renewed for this long (as observed) is dead. Default: 15 000. */
  readonly leaseDurationMs?: number;
  /** A member that cannot renew for this long stops all its buckets. Less than `leaseDurationMs`. Default: 10 000. */
  readonly renewDeadlineMs?: number;
  /** Time between two rounds (read the ring, renew, release, claim). Default: 2 000. */
  readonly retryPeriodMs?: number;
  /**
   * How long a bucket being handed on waits for its work in flight to return
   * (its drainers) before it is handed on anyway. Its writes are fenced from
   * the start of the handoff, so work that ignores its signal cannot write
   * beside the new owner. Default: `leaseDurationMs`.
   */
  readonly handoffTimeoutMs?: number;
  /** Buckets the hash space is cut into; every member must use the same. A power of two. Default: 128. */
  readonly buckets?: number;
  /** Told of every error that was retried. Default: none. */
  readonly onError?: (err: unknown) => void;
}

/** One member as this replica sees it. */
export interface RingMember {
  readonly identity: string;
  /** The member's Lease name. */
  readonly lease: string;
  /** Renewed within its lease duration (as observed here). */
  readonly live: boolean;
  /** Buckets its Lease says it holds. */
  readonly held: readonly number[];
  /** Buckets the split gives it (live members only). */
  readonly assigned: readonly number[];
}

/** What changed in a round: buckets started and stopped here. */
export interface RingChange {
  readonly started: readonly number[];
  readonly stopped: readonly number[];
  /** Set when this member was cut off (its Lease not renewed within the renew deadline) and stopped every bucket: why. */
  readonly lost?: string;
}

/** Counters of a ring member, for metrics. */
export interface RingStats {
  /** Buckets started here after the first claim (handoffs and takeovers). */
  acquired: number;
  /** Buckets drained and handed on. */
  released: number;
  /** Claims withdrawn because another member held or claimed the bucket. */
  conflicts: number;
  /** Rounds that failed (read or renew). */
  errors: number;
}

/**
 * A member of a shard ring. `run` keeps its membership; `owns` says whether
 * a hash is in a bucket this replica works on now.
 *
 * @example
 * ```ts
 * const ring = createShardRing({ client, namespace: 'ops', name: 'harddisks' });
 * const inFlight = new Map<string, Promise<void>>(); // reconciles running, by uid
 * ring.addDrainer(async (buckets) => {
 *   await Promise.all([...inFlight].filter(([uid]) => buckets.has(ring.bucketOf(fnv1a64(uid)))).map(([, done]) => done));
 * });
 * void ring.run(signal);
 * if (ring.owns(fnv1a64(disk.metadata?.uid ?? ''))) console.log('mine to reconcile');
 * ```
 */
export interface ShardRing {
  readonly identity: string;
  readonly name: string;
  readonly namespace: string;
  /** The member Lease's name. */
  readonly leaseName: string;
  readonly buckets: number;
  /**
   * Keep the membership until `signal` aborts: then stop every bucket,
   * drain, and delete the Lease. Rejects only with LeaderElectionError
   * `AlreadyRunning` when a run of this member is in progress (one member,
   * one loop; a manager whose leadership is `ringLeadership(ring)` runs it).
   */
  run(signal: AbortSignal): Promise<void>;
  /** Buckets worked on here now (none once this member is past its renew deadline). */
  active(): ReadonlySet<number>;
  /** Buckets stopped here whose in-flight work is still draining (not yet handed on). */
  draining(): ReadonlySet<number>;
  /** Buckets the split gives this member now (worked on, or to be claimed once free). */
  assigned(): ReadonlySet<number>;
  /** Whether a hash falls in a bucket worked on here now. */
  owns(hash: bigint): boolean;
  /**
   * The write fence of a bucket worked on here now (undefined otherwise):
   * run the bucket's work under it (`runFenced` of `@kubeloop/client`) and
   * its writes are refused once the bucket is handed on or this member has
   * not renewed within its renew deadline; its `signal` aborts then. A
   * sharded controller does this for every reconcile.
   */
  fence(bucket: number): WriteFence | undefined;
  /** The bucket of a hash. */
  bucketOf(hash: bigint): number;
  /**
   * The hash ranges to cache: buckets worked on, being drained, or assigned
   * and about to start (so the cache is warm when they do).
   */
  cacheRanges(): ShardRange[];
  /** Told after every round that changed what is worked on or cached. */
  subscribe(listener: (change: RingChange) => void): () => void;
  /** Called with buckets being handed on; the ring releases them when every drainer has resolved. */
  addDrainer(drain: (buckets: ReadonlySet<number>) => Promise<void>): () => void;
  /** The members as last observed. */
  members(): readonly RingMember[];
  /** Whether this member has renewed its Lease within the renew deadline. */
  isMember(): boolean;
  /** Why the ring cannot work right now (its Lease cannot be renewed), for readiness. */
  check(): Error | undefined;
  readonly stats: Readonly<RingStats>;
}

/** `0-3,7,9-12` for {0,1,2,3,7,9,10,11,12}. */
export function formatBuckets(set: Iterable<number>): string {
  const sorted = [...new Set(set)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** The inverse of {@link formatBuckets}; anything unreadable or out of range is left out. */
export function parseBuckets(text: string | undefined, buckets: number): number[] {
  const out = new Set<number>();
  for (const part of (text ?? '').split(',')) {
    const m = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(part);
    if (!m) continue;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    for (let x = a; x <= Math.min(b, buckets - 1); x++) out.add(x);
  }
  return [...out].sort((x, y) => x - y);
}

/** The Lease name of a member: `<ring>-<identity>`, made a valid name (lower case, `[a-z0-9-.]`, at most 253). */
export function memberLeaseName(ring: string, identity: string): string {
  const raw = `${ring}-${identity}`.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').replace(/^[-.]+|[-.]+$/g, '');
  return raw.length <= 253 ? raw : `${raw.slice(0, 236)}-${fnv1a64(raw).toString(16).padStart(16, '0')}`;
}


/**
 * Create a member of a shard ring (nothing happens until `run`). Throws
 * LeaderElectionError `InvalidOptions` for timings that cannot work, a ring
 * name that is not a DNS label, or a bucket count that is not a power of two.
 *
 * @example
 * ```ts
 * const ring = createShardRing({ client, namespace: 'harddisk-system', name: 'harddisk-operator', identity: process.env['POD_NAME'] ?? 'harddisk-operator-0' });
 * void ring.run(shutdown.signal);
 * ```
 */
export function createShardRing(options: ShardRingOptions): ShardRing {
  if (typeof options?.client !== 'object' || options.client === null) throw new LeaderElectionError('InvalidOptions', 'shard ring: a client is required');
  if (typeof options.namespace !== 'string' || options.namespace === '') throw new LeaderElectionError('InvalidOptions', 'shard ring: namespace must be a non-empty string');
  if (typeof options.name !== 'string' || !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(options.name)) {
    throw new LeaderElectionError('InvalidOptions', `shard ring: name ${JSON.stringify(options.name)} must be a DNS label (lower case letters, digits and '-', at most 63)`);
  }
  const { identity, leaseDurationMs, renewDeadlineMs, retryPeriodMs } = resolveLeaseTimings(options, 'shard ring', 1);
  const buckets = options.buckets ?? DEFAULT_RING_BUCKETS;
  checkBuckets(buckets);
  const handoffTimeoutMs = options.handoffTimeoutMs ?? leaseDurationMs;
  if (typeof handoffTimeoutMs !== 'number' || !Number.isFinite(handoffTimeoutMs) || handoffTimeoutMs <= 0) {
    throw new LeaderElectionError('InvalidOptions', `shard ring: handoffTimeoutMs must be a positive number of milliseconds, got ${String(handoffTimeoutMs)}`);
  }
  return new Ring(options, identity, leaseDurationMs, renewDeadlineMs, retryPeriodMs, buckets, handoffTimeoutMs);
}

interface Observed {
  identity: string;
  lease: string;
  rv: string;
  /** performance.now() when this replica saw the Lease change last. */
  seenAt: number;
  durationMs: number;
  held: number[];
}

class Ring implements ShardRing {
  readonly name: string;
  readonly namespace: string;
  readonly leaseName: string;
  readonly stats: RingStats = { acquired: 0, released: 0, conflicts: 0, errors: 0 };
  private readonly client: Client;
  private readonly observed = new Map<string, Observed>();
  /** Buckets in our Lease (claimed, active or draining). */
  private readonly held = new Set<number>();
  private readonly working = new Set<number>();
  private readonly handingOn = new Set<number>();
  private assignment = new Set<number>();
  private running = false;
  private readonly cooldown = new Map<number, number>();
  private readonly listeners = new Set<(change: RingChange) => void>();
  private readonly drainers = new Set<(buckets: ReadonlySet<number>) => Promise<void>>();
  private lastRenew = -Infinity;
  private lastError: unknown;
  private rounds = 0;
  private own: Lease | undefined;
  private cacheKey = '';
  /** A newcomer (first run, or cut off since): the next successful renewal only announces, it claims nothing. */
  private joining = true;
  /** The write fence of each bucket in `working`. */
  private readonly fences = new Map<number, LeaseFence>();
  private readonly clock = { renewedAt: (): number => this.lastRenew };
  private deadline: NodeJS.Timeout | undefined;
  private static readonly NONE: ReadonlySet<number> = new Set();

  constructor(
    private readonly options: ShardRingOptions,
    readonly identity: string,
    private readonly leaseDurationMs: number,
    private readonly renewDeadlineMs: number,
    private readonly retryPeriodMs: number,
    readonly buckets: number,
    private readonly handoffTimeoutMs: number,
  ) {
    this.client = options.client;
    this.name = options.name;
    this.namespace = options.namespace;
    this.leaseName = memberLeaseName(options.name, identity);
  }

  active(): ReadonlySet<number> {
    return this.isMember() ? this.working : Ring.NONE;
  }

  draining(): ReadonlySet<number> {
    return this.handingOn;
  }

  assigned(): ReadonlySet<number> {
    return this.assignment;
  }

  bucketOf(hash: bigint): number {
    return bucketOf(hash, this.buckets);
  }

  owns(hash: bigint): boolean {
    return this.isMember() && this.working.has(bucketOf(hash, this.buckets));
  }

  fence(bucket: number): WriteFence | undefined {
    const fence = this.fences.get(bucket);
    return fence && this.working.has(bucket) && this.isMember() && fence.revoked() === undefined ? fence : undefined;
  }

  cacheRanges(): ShardRange[] {
    return bucketsToRanges([...this.working, ...this.handingOn, ...(this.isMember() ? this.assignment : [])], this.buckets);
  }

  subscribe(listener: (change: RingChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  addDrainer(drain: (buckets: ReadonlySet<number>) => Promise<void>): () => void {
    this.drainers.add(drain);
    return () => this.drainers.delete(drain);
  }

  isMember(): boolean {
    return performance.now() - this.lastRenew < this.renewDeadlineMs;
  }

  check(): Error | undefined {
    if (this.rounds === 0 || this.isMember()) return undefined;
    const why = this.lastError instanceof Error ? this.lastError.message : 'no renewal yet';
    return new LeaderElectionError('Lost', `shard ring ${this.name}: lease ${this.namespace}/${this.leaseName} not renewed for ${this.renewDeadlineMs} ms (${why})`);
  }

  members(): readonly RingMember[] {
    const live = this.liveIdentities();
    const owners = assignBuckets(live, this.buckets);
    const out: RingMember[] = [];
    for (const o of this.observed.values()) {
      out.push({
        identity: o.identity,
        lease: o.lease,
        live: live.includes(o.identity),
        held: o.identity === this.identity ? [...this.held].sort((a, b) => a - b) : o.held,
        assigned: owners.flatMap((owner, b) => (owner === o.identity ? [b] : [])),
      });
    }
    return out.sort((a, b) => (a.identity < b.identity ? -1 : 1));
  }

  async run(signal: AbortSignal): Promise<void> {
    if (this.running) throw new LeaderElectionError('AlreadyRunning', `shard ring ${this.name}: member ${this.identity} is already running; run it once (a manager with leadership: ringLeadership(ring) runs it for you)`);
    this.running = true;
    try {
      while (!signal.aborted) {
        await this.round(signal);
        await sleep(this.retryPeriodMs, signal);
      }
      await this.leave();
    } finally {
      clearTimeout(this.deadline);
      this.running = false;
    }
  }

  private attemptSignal(signal: AbortSignal): AbortSignal {
    return AbortSignal.any([signal, AbortSignal.timeout(Math.max(this.renewDeadlineMs / 2, 1000))]);
  }

  private report(err: unknown): void {
    this.stats.errors++;
    this.lastError = err;
    try {
      this.options.onError?.(err);
    } catch {
      /* an observer that throws must not stop the ring */
    }
  }

  /** Read every Lease of the ring and note which changed. */
  private async observe(signal: AbortSignal): Promise<void> {
    const list = await this.client.apiReader.list(Lease, { namespace: this.namespace, labelSelector: { [SHARD_RING_LABEL]: this.name }, signal: this.attemptSignal(signal) });
    const now = performance.now();
    const seen = new Set<string>();
    for (const lease of list.items) {
      const name = lease.metadata?.name ?? '';
      const identity = lease.spec?.holderIdentity ?? '';
      seen.add(name);
      if (identity === '') {
        this.observed.delete(name);
        continue;
      }
      const rv = lease.metadata?.resourceVersion ?? '';
      const prev = this.observed.get(name);
      const durationMs = Math.max(1, lease.spec?.leaseDurationSeconds ?? 1) * 1000;
      let seenAt = prev && prev.rv === rv ? prev.seenAt : now;
      // First seen: aged by its renewTime on the wall clock, less one duration of clock skew tolerated (one
      // renewed more than two durations ago is dead at once; a joiner does not wait out a Lease left behind).
      const renewed = prev ? Number.NaN : Date.parse(String(lease.spec?.renewTime ?? ''));
      const age = Date.now() - renewed - durationMs;
      if (Number.isFinite(age) && age > 0) seenAt = now - Math.min(age, durationMs);
      const n = Number(lease.metadata?.annotations?.[SHARD_BUCKETS_ANNOTATION] ?? this.buckets);
      if (n !== this.buckets) this.report(new LeaderElectionError('InvalidOptions', `shard ring ${this.name}: member ${identity} uses ${n} buckets, this one ${this.buckets}; every member must use the same`));
      this.observed.set(name, {
        identity,
        lease: name,
        rv,
        seenAt,
        durationMs,
        held: parseBuckets(lease.metadata?.annotations?.[SHARD_HELD_ANNOTATION], this.buckets),
      });
    }
    for (const name of [...this.observed.keys()]) if (!seen.has(name)) this.observed.delete(name);
  }

  private liveIdentities(): string[] {
    const now = performance.now();
    const live: string[] = [];
    for (const o of this.observed.values()) {
      if (o.identity === this.identity) continue;
      if (now - o.seenAt < o.durationMs) live.push(o.identity);
    }
    if (this.isMember()) live.push(this.identity);
    return live;
  }

  private heldByLiveOther(bucket: number): boolean {
    const now = performance.now();
    for (const o of this.observed.values()) {
      if (o.identity === this.identity || now - o.seenAt >= o.durationMs) continue;
      if (o.held.includes(bucket)) return true;
    }
    return false;
  }

  /** Write our Lease: renewed now, holding `held`. Past the renew deadline, every bucket is stopped and dropped first. */
  private async writeOwn(signal: AbortSignal): Promise<boolean> {
    if (this.lastRenew !== -Infinity && !this.isMember()) this.cutOff();
    const renewedBefore = this.lastRenew;
    const spec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.leaseDurationMs / 1000)),
      renewTime: formatMicroTime(Date.now()),
    };
    const metadata = {
      name: this.leaseName,
      namespace: this.namespace,
      labels: { [SHARD_RING_LABEL]: this.name },
      annotations: { [SHARD_HELD_ANNOTATION]: formatBuckets(this.held), [SHARD_BUCKETS_ANNOTATION]: String(this.buckets) },
    };
    const started = performance.now();
    try {
      let written = false;
      if (!this.own) {
        try {
          written = true;
          this.own = (await this.client.create(
            { apiVersion: Lease.apiVersion, kind: Lease.kind, metadata, spec: { ...spec, acquireTime: spec.renewTime } },
            { signal: this.attemptSignal(signal) },
          )) as Lease;
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
          written = false;
          // Ours from an earlier run of this identity (that process is gone): take it over.
          this.own = await this.client.apiReader.get(Lease, { namespace: this.namespace, name: this.leaseName }, { signal: this.attemptSignal(signal) });
        }
      }
      if (!written) {
        const base = this.own;
        this.own = (await this.client.update(
          { ...base, apiVersion: Lease.apiVersion, kind: Lease.kind, metadata: { ...base.metadata, ...metadata }, spec: { ...base.spec, ...spec } },
          { signal: this.attemptSignal(signal) },
        )) as Lease;
      }
      // Answered past the renew deadline of the write before (a pause while it was in flight): whatever ran in
      // between saw no member (keys passed over, fences revoked by a write's check), as client-go's renew
      // deadline would fail the renewal. Stop everything and join again, as if the deadline's timer had run first
      // (on resume, Node runs the I/O that came in before the timers that fell due).
      const lateBy = renewedBefore === -Infinity ? -1 : performance.now() - renewedBefore - this.renewDeadlineMs;
      this.lastRenew = started;
      if (lateBy >= 0) this.cutOff(`its renewal was answered ${Math.round(lateBy)} ms past the renew deadline`);
      for (const fence of this.fences.values()) fence.arm();
      clearTimeout(this.deadline);
      // At the renew deadline without another renewal: stop everything then, not at the next round.
      this.deadline = setTimeout(() => {
        if (!this.isMember()) this.cutOff();
      }, Math.max(0, started + this.renewDeadlineMs - performance.now()));
      this.deadline.unref();
      return true;
    } catch (err) {
      // Conflict or gone: read it again next round.
      this.own = undefined;
      if (!signal.aborted) this.report(err);
      return false;
    }
  }

  private async round(signal: AbortSignal): Promise<void> {
    const before = new Set(this.working);
    const beforeCache = this.cacheKey;
    try {
      await this.observe(signal);
    } catch (err) {
      if (!signal.aborted) this.report(err);
    }
    if (signal.aborted) return;
    // Renew first: liveness decides what we may hold.
    await this.writeOwn(signal);
    if (this.joining && this.isMember()) {
      this.joining = false;
      // Announce before claiming: members started together (a Deployment's replicas) write their
      // Leases within moments of each other; a member that claimed in its first round would see
      // only itself, list and cache every object, then hand most of them off (and keep the memory
      // it grew). The first claim waits one retry period, by when the others' Leases are visible.
      this.assignment = new Set();
    } else if (!this.isMember()) {
      // Cut off: stop everything now (we stop before anyone may take over), drain, hold nothing.
      this.cutOff();
    } else {
      const owners = assignBuckets(this.liveIdentities(), this.buckets);
      this.assignment = new Set(owners.flatMap((o, b) => (o === this.identity ? [b] : [])));
      this.release([...this.working].filter((b) => !this.assignment.has(b)));
      for (const b of [...this.held]) if (!this.working.has(b) && !this.handingOn.has(b) && !this.assignment.has(b)) this.held.delete(b);
      let claimed = false;
      for (const b of this.assignment) {
        const wait = this.cooldown.get(b) ?? 0;
        if (wait > 0) {
          this.cooldown.set(b, wait - 1);
          continue;
        }
        if (this.held.has(b) || this.handingOn.has(b) || this.heldByLiveOther(b)) continue;
        this.held.add(b);
        claimed = true;
      }
      const pending = [...this.held].filter((b) => !this.working.has(b) && !this.handingOn.has(b));
      if (pending.length > 0 && (!claimed || (await this.writeOwn(signal)))) {
        // Our claim is written: read every Lease again; start what no other live member holds.
        try {
          await this.observe(signal);
          let conflict = false;
          for (const b of pending) {
            if (!this.held.has(b)) {
              // Cut off (and dropped) while the claim was written: a newcomer claims again.
            } else if (this.heldByLiveOther(b)) {
              this.held.delete(b);
              this.cooldown.set(b, 1 + Math.floor(Math.random() * 3));
              this.stats.conflicts++;
              conflict = true;
            } else if (this.isMember()) {
              this.working.add(b);
              this.fences.set(b, new LeaseFence(this.clock, this.renewDeadlineMs, `bucket ${b} of shard ring ${this.name}`));
              if (this.rounds > 1) this.stats.acquired++;
            }
          }
          if (conflict) await this.writeOwn(signal);
        } catch (err) {
          if (!signal.aborted) this.report(err);
        }
      }
    }
    if (this.isMember() && !signal.aborted) await this.removeDead(signal);
    this.rounds++;
    this.cacheKey = formatBuckets([...this.working, ...this.handingOn, ...(this.isMember() ? this.assignment : [])]);
    const started = [...this.working].filter((b) => !before.has(b));
    const stopped = [...before].filter((b) => !this.working.has(b));
    if (started.length || stopped.length || beforeCache !== this.cacheKey) this.notify({ started, stopped });
  }

  private notify(change: RingChange): void {
    // With tracing on, a change of the buckets held here is a span (a trace of its own); off, nothing.
    if ((change.started.length > 0 || change.stopped.length > 0) && currentTracer()) {
      void traced('shard ring change', {
        root: true,
        attributes: {
          'kubeloop.ring': this.name,
          'kubeloop.ring.member': this.identity,
          'kubeloop.ring.started': change.started.map(String),
          'kubeloop.ring.stopped': change.stopped.map(String),
          'kubeloop.ring.lost': change.lost,
        },
      }, () => Promise.resolve());
    }
    for (const l of [...this.listeners]) {
      try {
        l(change);
      } catch (err) {
        this.report(err);
      }
    }
  }

  /**
   * Past the renew deadline: revoke every fence, stop every bucket, hold
   * nothing (the next write of our Lease lists none), and claim again as a
   * newcomer, only buckets no live Lease holds.
   */
  private cutOff(detail?: string): void {
    if (this.joining && this.working.size === 0 && this.held.size === 0) return;
    const why = `shard ring ${this.name}: member ${this.identity} did not renew its Lease ${this.namespace}/${this.leaseName} within ${this.renewDeadlineMs} ms${detail ? ` (${detail})` : ''}; it stopped its ${this.working.size} buckets and joins again as a newcomer`;
    const stopped = [...this.working];
    this.release(stopped, why);
    this.held.clear();
    this.assignment = new Set();
    this.joining = true;
    this.notify({ started: [], stopped, lost: why });
  }

  /**
   * Stop working on buckets now (their fences revoked: writes refused, those
   * in flight cut); once drained, or after the handoff timeout, take them out
   * of our Lease (written next round).
   */
  private release(buckets: number[], why?: string): void {
    if (buckets.length === 0) return;
    const set = new Set(buckets);
    for (const b of set) {
      this.working.delete(b);
      this.handingOn.add(b);
      this.fences.get(b)?.revoke(why ?? `bucket ${b} of shard ring ${this.name} is handed on by ${this.identity}`);
      this.fences.delete(b);
    }
    this.notify({ started: [], stopped: [...set] });
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.handoffTimeoutMs)));
    void Promise.race([Promise.allSettled([...this.drainers].map((d) => d(set))), bound]).then((results) => {
      clearTimeout(timer);
      if (results === 'timeout') {
        this.report(new LeaderElectionError('Lost', `shard ring ${this.name}: buckets ${formatBuckets(set)} handed on after ${this.handoffTimeoutMs} ms with work still in flight (its writes are fenced)`));
      } else {
        for (const r of results) if (r.status === 'rejected') this.report(r.reason);
      }
      for (const b of set) {
        this.handingOn.delete(b);
        if (!this.working.has(b)) this.held.delete(b);
        this.stats.released++;
      }
    });
  }

  /**
   * Delete the Leases of dead members (not renewed for their duration, as
   * observed here) that held a bucket now worked on here, or held nothing
   * while this member works on bucket 0: only if unchanged since observed
   * (a resourceVersion precondition), so a member that renewed meanwhile
   * keeps its Lease.
   */
  private async removeDead(signal: AbortSignal): Promise<void> {
    const now = performance.now();
    for (const o of [...this.observed.values()]) {
      if (o.identity === this.identity || now - o.seenAt < o.durationMs) continue;
      const ours = o.held.length === 0 ? this.working.has(0) : o.held.some((b) => this.working.has(b));
      if (!ours) continue;
      try {
        await this.client.delete(Lease, { namespace: this.namespace, name: o.lease }, { preconditions: { resourceVersion: o.rv }, signal: this.attemptSignal(signal) });
        this.observed.delete(o.lease);
      } catch (err) {
        // Gone already, or renewed since (a conflict): nothing to do.
        if (isNotFound(err)) this.observed.delete(o.lease);
        else if (!isConflict(err) && !signal.aborted) this.report(err);
      }
    }
  }

  /** Leave the ring: stop and drain every bucket, then delete our Lease so the others take over at once. */
  private async leave(): Promise<void> {
    const all = new Set([...this.working, ...this.handingOn]);
    this.working.clear();
    if (all.size > 0) {
      this.notify({ started: [], stopped: [...all] });
      await Promise.allSettled([...this.drainers].map((d) => d(all)));
    }
    for (const fence of this.fences.values()) fence.revoke(`shard ring ${this.name}: member ${this.identity} left the ring`);
    this.fences.clear();
    this.handingOn.clear();
    this.held.clear();
    this.assignment = new Set();
    this.joining = true;
    try {
      await this.client.delete(Lease, { namespace: this.namespace, name: this.leaseName }, { timeoutMs: Math.max(this.renewDeadlineMs / 2, 1000) });
    } catch (err) {
      if (!isNotFound(err)) this.report(err);
    }
    this.lastRenew = -Infinity;
  }
}
