/**
 * Read-your-writes for cached reads. Every write through the cached client
 * that returns an object leaves an expectation (kind, key, resourceVersion,
 * the object; for a delete answered with a Status, "gone", by UID). A cached
 * read that covers such an object waits, up to a bound, until the cache has
 * seen that resourceVersion (or no longer holds the deleted object), then
 * reads from the cache. So once a write returns resourceVersion r, no cached
 * get or list in the process returns an older copy. Expectations the cache
 * has met are dropped.
 *
 * The bound is paid once per stream, not once per read: when it passes, the
 * list+watch (kind and namespace) is known to be behind until it reaches the
 * resourceVersions that were waited for, and meanwhile reads of what the
 * cache has not seen do not wait. A get is answered from the object the
 * write returned (as the cache would hold it: transformed, frozen, in the
 * read's form), or NotFound for a delete; a list from the cache with the
 * written objects laid over it (the older copies taken out, the written
 * ones the list's selectors match put in, the deleted ones left out). No
 * request is sent, so a stuck watch or an unreachable server costs nothing
 * more than the one bound.
 */
import { ClientError, isNotFound } from './errors.js';
import { isMetadataRef } from './kinds.js';
import type { KindRef, ObjectKey } from './kinds.js';
import type { ListOptions } from './options.js';
import { compareResourceVersions } from './resource-version.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from './selectors.js';

/**
 * What a cache offers the router for read-your-writes; `@kubeloop/cache`'s
 * informer cache implements it. A cache without it is read without waiting.
 */
export interface ResourceVersionTracker {
  /**
   * The newest resourceVersion the cache has seen for `kind` in `namespace`
   * (all namespaces when undefined; its copy holds every change up to it),
   * or undefined when it does not cache the kind (or that namespace) yet:
   * its first read will list it afresh, writes included.
   */
  observedResourceVersion(kind: KindRef, namespace: string | undefined): string | undefined;
  /** Resolves at the cache's next change to `kind`, or when `signal` aborts. */
  nextChange(kind: KindRef, signal: AbortSignal): Promise<void>;
  /**
   * Whether the cache would hold `object` as written (its namespaces,
   * selectors and shard admit it); undefined when it cannot tell. A written
   * object the cache would not hold is waited for only while the cache still
   * holds an older copy (the watch removes it at the write's resourceVersion).
   */
  admits?(kind: KindRef, object: { metadata?: { namespace?: string; labels?: Record<string, string> } }): boolean | undefined;
  /**
   * A copy of `object` (a write's answer, left untouched) as the cache would
   * hand it out for a read of `kind`: its transform applied, in the read's
   * form (metadata-only), frozen. Undefined when it cannot make one (no
   * informer for the kind, a metadata-only answer for a full read, a
   * transform that throws). Without it, a read the cache is behind on reads live.
   */
  asCached?(kind: KindRef, object: unknown): unknown;
}

/** How a read that had a write to wait for was served. */
export type ReadYourWritesOutcome =
  /** The cache had caught up, at once or within the bound. */
  | 'cache'
  /**
   * The cache was behind (the bound passed, now or earlier on its stream): a
   * get answered with the object the write returned (or NotFound for a
   * delete), a list from the cache with the written objects laid over it;
   * no request sent.
   */
  | 'written'
  /**
   * Read from the API server: the cache was behind and the written objects
   * could not answer (a list page with `limit` or a shard selector, an
   * object the cache could not copy), or resourceVersions could not be compared.
   */
  | 'live';

/** What {@link ReadYourWritesOptions.onRead} is told of a read. */
export interface ReadYourWritesRead {
  /** The kind read, as `Kind.group/version`. */
  readonly kind: string;
  /** Where the answer came from. */
  readonly outcome: ReadYourWritesOutcome;
  /** Whether the read waited for the cache (false: it had caught up already, or its stream was known to be behind). */
  readonly waited: boolean;
  /** How long the read waited for the cache, ms (0 when it did not). */
  readonly waitedMs: number;
  /** The read: a get or a list. */
  readonly op: 'get' | 'list';
}

/** Options of read-your-writes (`ClientOptions.readYourWrites`). */
export interface ReadYourWritesOptions {
  /**
   * How long a cached read waits for the cache to see this client's writes,
   * ms. Past it the cache's stream (kind and namespace) counts as behind
   * until it reaches what was waited for: meanwhile reads of what it has not
   * seen are answered at once from the written objects (a list: the cache
   * with them laid over it), sending nothing.
   * Default: 2000 (a watch event arrives within milliseconds on a healthy
   * API server; past this the cache is behind). 0: never wait.
   */
  readonly timeoutMs?: number;
  /** Told of every cached read that had one of this client's writes to wait for (for metrics). */
  readonly onRead?: (info: ReadYourWritesRead) => void;
}

interface Expectation {
  readonly namespace: string | undefined;
  readonly name: string;
  /** The resourceVersion the write returned, or undefined for a delete answered with a Status. */
  readonly resourceVersion: string | undefined;
  /** For such a delete: the deleted object's UID (gone once the cache holds no object of that UID under the name). */
  readonly goneUid: string | undefined;
  /** The written object is outside the cache's namespaces, selectors or shard: met once the cache holds no copy of it. */
  readonly outside: boolean;
  /** The write's answer, to answer a get with while the cache is behind (never handed out itself: the cache copies it). */
  readonly object: unknown;
}

/** A stream the bound passed on: behind until it has seen `until` (or, with none, anything past `at`). */
interface Behind {
  readonly at: string | undefined;
  readonly until: string | undefined;
}

/** How a wait ended: the cache met it, it is behind (`waited`: the bound passed now), or it cannot tell. */
type Settled = { readonly state: 'met' | 'incomparable'; readonly waited: boolean } | { readonly state: 'behind'; readonly waited: boolean };

function kindId(kind: KindRef): string {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  // The metadata-only and the full form are served by different informers, but a write changes both.
  return `${ref.apiVersion}\u0000${ref.kind}`;
}

function label(kind: KindRef): string {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  return `${ref.kind}.${ref.apiVersion}`;
}

function maxVersion(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return compareResourceVersions(a, b) >= 0 ? a : b;
}

/** Remembers this client's writes and makes cached reads wait for them. */
export class WriteTracker {
  private readonly byKind = new Map<string, Map<string, Expectation>>();
  /** Streams (kind and namespace) the bound passed on, until they catch up. */
  private readonly behind = new Map<string, Behind>();
  private readonly timeoutMs: number;
  private sweepAt = 1024;

  /**
   * @param peek reads the cache's copy of one object (its UID), null when the
   *   cache has none: how a delete answered with a Status is checked.
   */
  constructor(
    private readonly cache: ResourceVersionTracker,
    private readonly peek: (kind: KindRef, key: ObjectKey) => Promise<{ uid?: string } | null>,
    private readonly options: ReadYourWritesOptions = {},
  ) {
    const t = options.timeoutMs ?? 2000;
    if (!Number.isFinite(t) || t < 0) throw new ClientError('InvalidOptions', `readYourWrites.timeoutMs must be a number of ms >= 0 (got ${String(t)})`);
    this.timeoutMs = t;
  }

  /**
   * Remember what a write answered (an object with a resourceVersion, or a
   * delete's Status). `deleted`: the answer is a delete's, so an object
   * without a deletionTimestamp is the one just deleted (a Service's storage
   * answers with it), at its resourceVersion before the deletion.
   */
  wrote(kind: KindRef, key: ObjectKey, answer: unknown, deleted = false): void {
    if (answer === null || typeof answer !== 'object') return;
    const a = answer as {
      kind?: unknown;
      metadata?: { resourceVersion?: unknown; name?: unknown; uid?: unknown; deletionTimestamp?: unknown; finalizers?: unknown };
      details?: { uid?: unknown };
    };
    let exp: Expectation;
    const m0 = a.metadata;
    // A write that took the last finalizer off a deleting object deleted it, and so did a delete answered
    // with the object not marked deleting: the server answers with the object at the resourceVersion
    // before the deletion (the deletion itself comes later), so it is waited for as a delete, by UID.
    const unfinalized = !Array.isArray(m0?.finalizers) || m0.finalizers.length === 0;
    const goneNow = m0?.deletionTimestamp ? unfinalized : deleted;
    if (a.kind !== 'Status' && goneNow && typeof m0?.uid === 'string' && m0.uid) {
      exp = { namespace: key.namespace || undefined, name: key.name, resourceVersion: undefined, goneUid: m0.uid, outside: false, object: undefined };
    } else if (a.kind === 'Status') {
      const uid = a.details?.uid;
      if (typeof uid !== 'string' || uid === '') return;
      exp = { namespace: key.namespace || undefined, name: key.name, resourceVersion: undefined, goneUid: uid, outside: false, object: undefined };
    } else {
      const rv = a.metadata?.resourceVersion;
      // An answer that is not the object (an eviction's Status, a scale) says nothing about the object's version.
      if (typeof rv !== 'string' || rv === '' || (typeof a.metadata?.name === 'string' && a.metadata.name !== key.name)) return;
      const outside = this.cache.admits?.(kind, answer) === false;
      exp = { namespace: key.namespace || undefined, name: key.name, resourceVersion: rv, goneUid: undefined, outside, object: answer };
    }
    const id = kindId(kind);
    let m = this.byKind.get(id);
    if (!m) this.byKind.set(id, (m = new Map<string, Expectation>()));
    const k = `${exp.namespace ?? ''}/${exp.name}`;
    const prev = m.get(k);
    // Keep the newest expectation of a key (two writes can answer out of order).
    if (prev?.resourceVersion !== undefined && exp.resourceVersion !== undefined && compareResourceVersions(prev.resourceVersion, exp.resourceVersion) > 0) return;
    m.set(k, exp);
    this.trim(kind, m);
    if (m.size >= this.sweepAt) this.sweep(kind, m);
  }

  /**
   * At each write, look at the two oldest expectations of the kind: drop
   * them if the cache has met them, else move them to the back. Expectations
   * hold the written objects, so ones never read again must not wait for a
   * full sweep to go; two per write keep pace with the writes.
   */
  private trim(kind: KindRef, m: Map<string, Expectation>): void {
    let n = 0;
    for (const [k, exp] of m) {
      if (n++ === 2 || m.size <= 1) break;
      if (exp.resourceVersion !== undefined && this.met(kind, exp) === true) {
        m.delete(k);
      } else {
        m.delete(k);
        m.set(k, exp);
      }
    }
  }

  /** Drop what the cache has met, so writes never read again do not pile up. */
  private sweep(kind: KindRef, m: Map<string, Expectation>): void {
    for (const [k, exp] of m) if (exp.resourceVersion !== undefined && this.met(kind, exp) === true) m.delete(k);
    // Deletes answered with a Status are checked by reading the cache: keep at most the newest 1024 of them.
    const gone = [...m].filter(([, e]) => e.resourceVersion === undefined);
    for (const [k] of gone.slice(0, Math.max(0, gone.length - 1024))) m.delete(k);
    this.sweepAt = Math.max(1024, m.size * 2);
  }

  /** Whether the cache has seen an expectation: true, false, or undefined when it cannot tell (not comparable). */
  private met(kind: KindRef, exp: Expectation, cached?: { uid?: string } | null): boolean | undefined {
    if (exp.resourceVersion === undefined) return cached !== undefined && (cached === null || cached.uid !== exp.goneUid);
    // Never to be held: nothing to wait for once no older copy is held either.
    if (exp.outside && cached === null) return true;
    const observed = this.cache.observedResourceVersion(kind, exp.namespace);
    if (observed === undefined) return true;
    const c = compareResourceVersions(observed, exp.resourceVersion);
    return Number.isNaN(c) ? undefined : c >= 0;
  }

  /**
   * Before a cached get: wait until the cache has seen this client's last
   * write of the key. Resolves 'cache' to read from the cache, 'live' to
   * read from the API server, or `{ written }`: the answer itself (the
   * cache being behind); rejects with NotFound for a delete the cache has
   * not seen yet.
   */
  async beforeGet(kind: KindRef, key: ObjectKey, signal?: AbortSignal): Promise<'cache' | 'live' | { readonly written: unknown }> {
    const m = this.byKind.get(kindId(kind));
    const k = `${key.namespace || ''}/${key.name}`;
    const exp = m?.get(k);
    if (!exp) return 'cache';
    const started = performance.now();
    const settled = await this.settle(kind, [[k, exp]], m!, signal);
    if (settled.state === 'met') return this.told(kind, 'get', 'cache', settled.waited, started);
    if (settled.state === 'behind') {
      if (exp.goneUid !== undefined) {
        this.told(kind, 'get', 'written', settled.waited, started);
        const ref = isMetadataRef(kind) ? kind.of : kind;
        throw new ClientError('NotFound', `${label(kind)} ${exp.namespace ? `${exp.namespace}/` : ''}${exp.name} not found (this client deleted it; the cache has not seen that yet)`, {
          code: 404,
          status: { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404, details: { name: exp.name, kind: ref.kind } },
        });
      }
      // A written object the cache would never hold is read live (the cache's answer, once caught up, is NotFound).
      const copy = exp.outside ? undefined : this.cache.asCached?.(kind, exp.object);
      if (copy !== undefined && copy !== null) {
        this.told(kind, 'get', 'written', settled.waited, started);
        return { written: copy };
      }
    }
    return this.told(kind, 'get', 'live', settled.waited, started);
  }

  /**
   * Before a cached list: wait for every write of the kind the list covers
   * (its namespace, or all). Resolves 'cache', 'live', or `{ overlay }`:
   * the cache is behind, and its list with `overlay` laid over it
   * ({@link overlayList}) is the answer.
   */
  async beforeList(kind: KindRef, options: ListOptions | undefined, signal?: AbortSignal): Promise<'cache' | 'live' | { readonly overlay: readonly Overlaid[] }> {
    const m = this.byKind.get(kindId(kind));
    if (!m || m.size === 0) return 'cache';
    const namespace = options?.namespace;
    const pending = [...m].filter(([, e]) => !namespace || e.namespace === namespace);
    if (pending.length === 0) return 'cache';
    const started = performance.now();
    const settled = await this.settle(kind, pending, m, signal);
    if (settled.state === 'met') return this.told(kind, 'list', 'cache', settled.waited, started);
    // A page (limit, continue) or a shard of the list is not the cache's whole answer to lay objects over.
    if (settled.state === 'behind' && options?.limit === undefined && !options?.continue && !options?.shardSelector) {
      const overlay: Overlaid[] = [];
      for (const [, exp] of pending) {
        // Deleted, or never to be held: the list leaves it out.
        if (exp.goneUid !== undefined || exp.outside) {
          overlay.push({ namespace: exp.namespace, name: exp.name, object: undefined });
          continue;
        }
        const copy = this.cache.asCached?.(kind, exp.object);
        if (copy === undefined || copy === null) return this.told(kind, 'list', 'live', settled.waited, started);
        overlay.push({ namespace: exp.namespace, name: exp.name, object: copy });
      }
      this.told(kind, 'list', 'written', settled.waited, started);
      return { overlay };
    }
    return this.told(kind, 'list', 'live', settled.waited, started);
  }

  private told<O extends ReadYourWritesOutcome>(kind: KindRef, op: 'get' | 'list', outcome: O, waited: boolean, started: number): O {
    this.options.onRead?.({ kind: label(kind), outcome, waited, waitedMs: performance.now() - started, op });
    return outcome;
  }

  private streamKey(kind: KindRef, namespace: string | undefined): string {
    return `${kindId(kind)}\u0000${namespace ?? ''}`;
  }

  /** Whether the stream of an expectation is known to be behind (forgetting it once it has caught up). */
  private isBehind(kind: KindRef, exp: Expectation): boolean {
    const sk = this.streamKey(kind, exp.namespace);
    const b = this.behind.get(sk);
    if (!b) return false;
    const observed = this.cache.observedResourceVersion(kind, exp.namespace);
    let caughtUp: boolean;
    if (observed === undefined) caughtUp = true;
    else {
      const c = b.until !== undefined ? compareResourceVersions(observed, b.until) : b.at !== undefined ? compareResourceVersions(observed, b.at) : 1;
      caughtUp = Number.isNaN(c) || (b.until !== undefined ? c >= 0 : c > 0);
    }
    if (caughtUp) this.behind.delete(sk);
    return !caughtUp;
  }

  /** The bound passed with these unmet: their streams are behind until they have seen them. */
  private markBehind(kind: KindRef, unmet: readonly Expectation[]): void {
    for (const exp of unmet) {
      const sk = this.streamKey(kind, exp.namespace);
      const prev = this.behind.get(sk);
      this.behind.set(sk, {
        at: prev?.at ?? this.cache.observedResourceVersion(kind, exp.namespace),
        until: maxVersion(prev?.until, exp.resourceVersion),
      });
    }
  }

  private async settle(kind: KindRef, pending: [string, Expectation][], m: Map<string, Expectation>, signal: AbortSignal | undefined): Promise<Settled> {
    // A delete answered with a Status is decided by the cached object's UID.
    const check = async (): Promise<boolean | undefined> => {
      let all: boolean | undefined = true;
      for (let i = pending.length - 1; i >= 0; i--) {
        const [k, exp] = pending[i]!;
        const cached =
          exp.resourceVersion === undefined || exp.outside ? await this.peek(kind, { name: exp.name, ...(exp.namespace ? { namespace: exp.namespace } : {}) }) : undefined;
        const ok = this.met(kind, exp, cached);
        if (ok === true) {
          pending.splice(i, 1);
          if (m.get(k) === exp) m.delete(k);
        } else if (ok === undefined) all = undefined;
        else if (all === true) all = false;
      }
      return all;
    };
    let ok = await check();
    if (ok === true) return { state: 'met', waited: false };
    if (ok === undefined) return { state: 'incomparable', waited: false };
    // The bound already passed on one of these streams and it has not caught up: no second wait.
    if (pending.some(([, exp]) => this.isBehind(kind, exp)) || this.timeoutMs === 0) return { state: 'behind', waited: false };
    const bound = new AbortController();
    const timer = setTimeout(() => bound.abort(), this.timeoutMs);
    const onAbort = (): void => bound.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      while (!bound.signal.aborted) {
        await this.cache.nextChange(kind, bound.signal);
        ok = await check();
        if (ok === true) return { state: 'met', waited: true };
        if (ok === undefined) return { state: 'incomparable', waited: true };
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    signal?.throwIfAborted();
    this.markBehind(
      kind,
      pending.map(([, exp]) => exp),
    );
    return { state: 'behind', waited: true };
  }
}

/** A written object to lay over a cached list (undefined: deleted, or never held: left out). */
export interface Overlaid {
  readonly namespace: string | undefined;
  readonly name: string;
  readonly object: unknown;
}

/**
 * A cached list with this client's writes laid over it: each overlaid
 * key's cached copy taken out, the written object put in (where the copy
 * was, else at the end) when the list's label and field selectors match it.
 */
export function overlayList<L extends { items: unknown[] }>(list: L, overlay: readonly Overlaid[], options: ListOptions | undefined): L {
  const labels = parseLabelSelector(options?.labelSelector);
  const fields = parseFieldSelector(options?.fieldSelector);
  const byKey = new Map(overlay.map((o) => [`${o.namespace ?? ''}/${o.name}`, o]));
  const placed = new Set<string>();
  const keep = (object: unknown): boolean => {
    const meta = (object as { metadata?: { labels?: Record<string, string> } }).metadata;
    return matchesLabels(labels, meta?.labels) && matchesFields(fields, object);
  };
  const items: unknown[] = [];
  for (const item of list.items) {
    const meta = (item as { metadata?: { namespace?: string; name?: string } }).metadata;
    const k = `${meta?.namespace ?? ''}/${meta?.name ?? ''}`;
    const o = byKey.get(k);
    if (!o) items.push(item);
    else {
      placed.add(k);
      if (o.object !== undefined && keep(o.object)) items.push(o.object);
    }
  }
  for (const [k, o] of byKey) if (!placed.has(k) && o.object !== undefined && keep(o.object)) items.push(o.object);
  return { ...list, items };
}

/** Whether a value offers {@link ResourceVersionTracker}. */
export function tracksResourceVersions(value: unknown): value is ResourceVersionTracker {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ResourceVersionTracker).observedResourceVersion === 'function' &&
    typeof (value as ResourceVersionTracker).nextChange === 'function'
  );
}

/** For a delete expectation's check: the cached object's UID, or null when the cache has none. */
export async function peekUid(read: () => Promise<{ metadata?: { uid?: string } }>): Promise<{ uid?: string } | null> {
  try {
    const obj = await read();
    return obj.metadata?.uid === undefined ? {} : { uid: obj.metadata.uid };
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}
