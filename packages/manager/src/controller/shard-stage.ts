/**
 * Sharding as a stage around a controller's reconciles (`ControllerOptions.shard`):
 * a key is reconciled only while the shard ring's bucket of its object is
 * active on this replica, under that bucket's write fence; the ring waits
 * for the reconciles in flight on a bucket before it hands the bucket on;
 * and a source enqueues a bucket's keys when the bucket starts here.
 *
 * The bucket of a key is found once, when a source enqueues it, from the
 * event's object (its uid, or the uid of the controller owner an `owns`
 * event names), and kept per key (sharded by namespace, per namespace): an update of
 * the same object hashes nothing, and a reconcile reads nothing. Only a key
 * no event explained (enqueued by hand, by a map function) has its `for`
 * object read at reconcile, through the reconcile's one cache read. The
 * bucket of a deleted object's key is kept, marked, until its final
 * reconcile has run here (a list of the cache would not find it).
 */
import { shardHash } from '@kubeloop/cache';
import type { InformerEvent } from '@kubeloop/cache';
import { runFenced } from '@kubeloop/client';
import type { KindRef } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { ShardRing } from '@kubeloop/leaderelection';
import type { KubeObject } from '@kubeloop/scheme';
import { shardKeyMetrics } from '../metrics/shard-metrics.js';
import type { ShardKeyMetrics } from '../metrics/shard-metrics.js';
import { requestKey, requestOf } from './reconcile.js';
import type { Request } from './reconcile.js';
import type { Source, SourceContext } from './source.js';
import { PASSED } from './stage.js';
import type { ReconcileStage, StageDeps, StageItem, StageNext } from './stage.js';
import type { TriggerInput } from './triggers.js';

/** How a controller's keys map to a shard ring. */
export interface ControllerShard {
  readonly ring: ShardRing;
  /**
   * What the `for` object is hashed by: its `uid`, or its `namespace` (every
   * object of a namespace on one replica). Default: `uid`.
   */
  readonly by?: 'uid' | 'namespace';
}

/** Namespaces whose bucket is kept (sharded by namespace) before the memo starts again. */
const NAMESPACES_KEPT = 10_000;

const HANDOFF: TriggerInput = Object.freeze({ source: 'controller', event: 'shard-handoff' });

/** The shard stage of a controller with the `shard` option. */
export function shardStage(shard: ControllerShard, deps: StageDeps): ReconcileStage {
  return new ShardStage(shard.ring, shard.by === 'namespace', deps);
}

/** The group of an apiVersion (`''` for the core group). */
function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf('/');
  return i < 0 ? '' : apiVersion.slice(0, i);
}

class ShardStage implements ReconcileStage {
  readonly needLeaderElection = false;
  readonly source: Source;
  /**
   * Each key's bucket, from the last object seen for it; `~bucket` (< 0)
   * once that object was deleted and its final reconcile is still due.
   */
  private readonly buckets = new Map<string, number>();
  /**
   * The bucket of each namespace seen (sharded by namespace): a key's bucket
   * is its namespace's, which never changes, so no key is remembered and
   * a namespace is hashed once. Cleared past {@link NAMESPACES_KEPT}.
   */
  private readonly namespaces = new Map<string, number>();
  /** The keys of `buckets` by bucket: a bucket's are forgotten without looking at every key. */
  private readonly keysOf = new Map<number, Set<string>>();
  /**
   * Keys that came up while their bucket was assigned here but not yet
   * started (its previous owner still draining it): the start enqueues them,
   * a deleted object's included.
   */
  private readonly waiting = new Map<number, Set<string>>();
  /** Reconciles in flight per bucket. */
  private readonly inFlight = new Map<number, number>();
  private readonly drained = new Set<() => void>();
  /** The key counters, looked up once when the source first starts. */
  private keys: ShardKeyMetrics | undefined;
  /** Kind and group of the `for` kind, to recognise an `owns` event's controller owner. */
  private readonly forKind: { readonly kind: string; readonly group: string } | undefined;

  constructor(
    private readonly ring: ShardRing,
    private readonly byNamespace: boolean,
    private readonly deps: StageDeps,
  ) {
    const ref = deps.forKind && (isMetadataRef(deps.forKind) ? deps.forKind.of : deps.forKind);
    this.forKind = ref && { kind: ref.kind, group: groupOf(ref.apiVersion) };
    this.source = { description: `shard ring ${ring.name}`, start: (context) => this.start(context) };
  }

  /** A value's (uid or namespace) bucket; the hash is the one the cache's shard stage made on admitting the object, when it did. */
  private bucketOfValue(value: string): number {
    return this.ring.bucketOf(shardHash(value));
  }

  /** A namespace's bucket, hashed once. */
  private namespaceBucket(namespace: string): number {
    let bucket = this.namespaces.get(namespace);
    if (bucket === undefined) {
      if (this.namespaces.size >= NAMESPACES_KEPT) this.namespaces.clear();
      bucket = this.bucketOfValue(namespace);
      this.namespaces.set(namespace, bucket);
    }
    return bucket;
  }

  enqueued(key: string, request: Request, event: InformerEvent<KubeObject> | undefined, ofForKind: boolean): void {
    // By namespace, a key's bucket follows from the key itself: nothing to learn from the event.
    if (this.byNamespace || event === undefined) return;
    const known = this.buckets.get(key);
    const m = event.object.metadata;
    if (ofForKind && m?.name === request.name && (m.namespace ?? '') === (request.namespace ?? '')) {
      const uid = m.uid;
      if (uid === undefined) return;
      if (event.type === 'update') {
        // The same object as before (the common case): its bucket is known, nothing to hash.
        if (known !== undefined && known >= 0 && event.old.metadata?.uid === uid) return;
        this.remember(key, this.bucketOfValue(uid));
      } else if (event.type === 'add') {
        this.remember(key, this.bucketOfValue(uid));
      } else {
        // Deleted: its bucket marked, so its final reconcile runs where the object was.
        const bucket = known === undefined ? this.bucketOfValue(uid) : known < 0 ? ~known : known;
        this.remember(key, ~bucket);
      }
      return;
    }
    // Another object naming this key (an owned object's event): the uid of its controller owner, if it is this key's object.
    if (known !== undefined || this.forKind === undefined) return;
    const uid = this.ownerUid(event.object, request) ?? (event.type === 'update' ? this.ownerUid(event.old, request) : undefined);
    if (uid !== undefined) this.remember(key, this.bucketOfValue(uid));
  }

  /** The uid of `object`'s controller owner when that owner is `request`'s object. */
  private ownerUid(object: KubeObject, request: Request): string | undefined {
    const forKind = this.forKind!;
    for (const ref of object.metadata?.ownerReferences ?? []) {
      if (ref.controller === true && ref.name === request.name && ref.kind === forKind.kind && groupOf(ref.apiVersion) === forKind.group) return ref.uid;
    }
    return undefined;
  }

  private remember(key: string, bucket: number): void {
    const was = this.buckets.get(key);
    if (was === bucket) return;
    if (was !== undefined) this.unindex(key, was < 0 ? ~was : was);
    const b = bucket < 0 ? ~bucket : bucket;
    const keys = this.keysOf.get(b);
    if (keys) keys.add(key);
    else this.keysOf.set(b, new Set([key]));
    this.buckets.set(key, bucket);
  }

  private forget(key: string): void {
    const was = this.buckets.get(key);
    if (was === undefined) return;
    this.buckets.delete(key);
    this.unindex(key, was < 0 ? ~was : was);
  }

  private unindex(key: string, bucket: number): void {
    const keys = this.keysOf.get(bucket);
    keys?.delete(key);
    if (keys?.size === 0) this.keysOf.delete(bucket);
  }

  /**
   * A key's bucket as remembered (negative: its object deleted), else from
   * its cached `for` object (the reconcile's one read); undefined when
   * neither knows it (not cached here: another shard's).
   */
  private async bucketOf(item: StageItem): Promise<number | undefined> {
    if (this.byNamespace) return this.namespaceBucket(item.request.namespace ?? '');
    const known = this.buckets.get(item.key);
    if (known !== undefined) return known;
    const uid = (await item.object())?.metadata?.uid;
    if (uid === undefined) return undefined;
    // A reconcile of the same key in flight may have learnt it meanwhile.
    const now = this.buckets.get(item.key);
    if (now !== undefined) return now;
    const bucket = this.bucketOfValue(uid);
    this.remember(item.key, bucket);
    return bucket;
  }

  async around(item: StageItem, next: StageNext): Promise<boolean | typeof PASSED> {
    const known = await this.bucketOf(item);
    // Not ours (or not cached here): its owner reconciles it, and enqueues it when the bucket starts there.
    if (known === undefined) return this.skip();
    const bucket = known < 0 ? ~known : known;
    const ring = this.ring;
    if (!ring.active().has(bucket)) {
      // Ours once its previous owner has drained it: the start enqueues the key again.
      if (ring.assigned().has(bucket)) {
        const keys = this.waiting.get(bucket);
        if (keys) keys.add(item.key);
        else this.waiting.set(bucket, new Set([item.key]));
      }
      return this.skip();
    }
    // The bucket's write fence: the reconcile's writes are refused, and its signal aborts, once the bucket is handed on
    // or this member is past its renew deadline, whatever the reconciler does with its signal.
    const fence = ring.fence(bucket);
    if (!fence) return this.skip();
    this.inFlight.set(bucket, (this.inFlight.get(bucket) ?? 0) + 1);
    try {
      const done = await runFenced(fence, () => next(AbortSignal.any([item.signal, fence.signal])));
      // A deleted object's final reconcile done with (and not re-created meanwhile): nothing left to route by its uid.
      if (done === true && known < 0 && this.buckets.get(item.key) === known) this.forget(item.key);
      return done;
    } finally {
      const left = (this.inFlight.get(bucket) ?? 1) - 1;
      if (left > 0) this.inFlight.set(bucket, left);
      else this.inFlight.delete(bucket);
      for (const check of [...this.drained]) check();
    }
  }

  /** A key not reconciled here (another member's, or its bucket not started here). */
  private skip(): typeof PASSED {
    this.keys?.skipped.inc({ controller: this.deps.name });
    return PASSED;
  }

  /** The stage's source: for one run of the controller's sources, the ring's drains and starts. */
  private start({ enqueue, signal }: SourceContext): Promise<void> {
    const ring = this.ring;
    if (!this.keys) {
      this.keys = shardKeyMetrics(this.deps.registry);
      this.keys.moved.inc({ controller: this.deps.name }, 0);
      this.keys.skipped.inc({ controller: this.deps.name }, 0);
    }
    const offDrain = ring.addDrainer((buckets) => this.drain(buckets));
    const offStart = ring.subscribe(({ started, lost }) => {
      if (lost) this.deps.log.warn({ ring: ring.name }, `this replica lost its share of the shard ring: ${lost}`);
      this.forgetElsewhere();
      void this.enqueueStarted(started, enqueue, signal);
    });
    signal.addEventListener('abort', () => (offDrain(), offStart()), { once: true });
    void this.enqueueStarted([...ring.active()], enqueue, signal);
    return Promise.resolve();
  }

  /** Resolves once no reconcile of these buckets is in flight (the ring hands them on then). */
  private drain(buckets: ReadonlySet<number>): Promise<void> {
    // Buckets leaving here: their new owner has their keys (no key of a bucket still active here waits for it).
    this.forgetBuckets(buckets);
    const busy = (): boolean => [...buckets].some((b) => (this.inFlight.get(b) ?? 0) > 0);
    if (!busy()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (): void => {
        if (busy()) return;
        this.drained.delete(check);
        resolve();
      };
      this.drained.add(check);
    });
  }

  /**
   * Forget what is remembered of keys in these buckets, another member's
   * now: their buckets (deleted objects' included: their new owner gives the
   * final reconcile) and keys waiting for the bucket to start here. The one
   * place both are dropped; O(keys in the buckets).
   */
  private forgetBuckets(buckets: Iterable<number>): void {
    for (const b of buckets) {
      this.waiting.delete(b);
      for (const key of this.keysOf.get(b) ?? []) this.buckets.delete(key);
      this.keysOf.delete(b);
    }
  }

  /** At a ring change: forget the buckets no longer worked on, drained or assigned here (another member has them). */
  private forgetElsewhere(): void {
    const ring = this.ring;
    const here = (b: number): boolean => ring.active().has(b) || ring.draining().has(b) || ring.assigned().has(b);
    this.forgetBuckets([...new Set([...this.waiting.keys(), ...this.keysOf.keys()])].filter((b) => !here(b)));
  }

  /** Enqueue the keys of buckets that just started here: those that waited for the start, and every cached `for` object in them. */
  private async enqueueStarted(started: readonly number[], enqueue: SourceContext['enqueue'], signal: AbortSignal): Promise<void> {
    if (started.length === 0) return;
    const moved = (): void => this.keys?.moved.inc({ controller: this.deps.name });
    for (const b of started) {
      for (const key of this.waiting.get(b) ?? []) {
        enqueue(requestOf(key), 0, HANDOFF);
        moved();
      }
      this.waiting.delete(b);
    }
    const kind: KindRef | undefined = this.deps.forKind;
    if (!kind) return;
    const set = new Set(started);
    try {
      const list = await this.deps.cache.list(kind, { signal });
      for (const obj of list.items) {
        const m = obj.metadata;
        if (!m?.name) continue;
        const request: Request = m.namespace ? { namespace: m.namespace, name: m.name } : { name: m.name };
        let known: number | undefined;
        if (this.byNamespace) known = this.namespaceBucket(m.namespace ?? '');
        else {
          const key = requestKey(request);
          known = this.buckets.get(key);
          // Cached, so not deleted: a bucket marked deleted belongs to an object of this name seen before.
          if (known === undefined || known < 0) {
            known = this.bucketOfValue(m.uid ?? '');
            this.remember(key, known);
          }
        }
        if (!set.has(known)) continue;
        enqueue(request, 0, HANDOFF);
        moved();
      }
    } catch (err) {
      if (!signal.aborted) this.deps.log.warn({ err }, 'could not enqueue the objects of shard buckets that started here');
    }
  }
}
