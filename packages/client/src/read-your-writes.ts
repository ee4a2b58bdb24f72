/**
 * Read-your-writes for cached reads. Every write through the cached client
 * that returns an object leaves an expectation (kind, key, resourceVersion;
 * for a delete answered with a Status, "gone", by UID). A cached read that
 * covers such an object waits, up to a bound, until the cache has seen that
 * resourceVersion (or no longer holds the deleted object), then reads from
 * the cache; past the bound it reads live. So once a write returns
 * resourceVersion r, no cached get or list in the process returns an older
 * copy. Expectations the cache has met are dropped.
 */
import { ClientError, isNotFound } from './errors.js';
import { isMetadataRef } from './kinds.js';
import type { KindRef, ObjectKey } from './kinds.js';
import { compareResourceVersions } from './resource-version.js';

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
}

/** How a read that had a write to wait for was served. */
export type ReadYourWritesOutcome =
  /** The cache had caught up, at once or within the bound. */
  | 'cache'
  /** The bound passed, or resourceVersions could not be compared: read live. */
  | 'live';

/** Options of read-your-writes (`ClientOptions.readYourWrites`). */
export interface ReadYourWritesOptions {
  /**
   * How long a cached read waits for the cache to see this client's writes
   * before it reads live instead, ms. Default: 2000 (a watch event arrives
   * within milliseconds on a healthy API server; past this the cache is
   * behind and the live read is the cheaper answer).
   */
  readonly timeoutMs?: number;
  /** Told of every cached read that had one of this client's writes to wait for (for metrics). */
  readonly onRead?: (info: { readonly kind: string; readonly outcome: ReadYourWritesOutcome; readonly waitedMs: number; readonly op: 'get' | 'list' }) => void;
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
}

function kindId(kind: KindRef): string {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  // The metadata-only and the full form are served by different informers, but a write changes both.
  return `${ref.apiVersion}\u0000${ref.kind}`;
}

function label(kind: KindRef): string {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  return `${ref.kind}.${ref.apiVersion}`;
}

/** Remembers this client's writes and makes cached reads wait for them. */
export class WriteTracker {
  private readonly byKind = new Map<string, Map<string, Expectation>>();
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

  /** Remember what a write answered (an object with a resourceVersion, or a delete's Status). */
  wrote(kind: KindRef, key: ObjectKey, answer: unknown): void {
    if (answer === null || typeof answer !== 'object') return;
    const a = answer as {
      kind?: unknown;
      metadata?: { resourceVersion?: unknown; name?: unknown; uid?: unknown; deletionTimestamp?: unknown; finalizers?: unknown };
      details?: { uid?: unknown };
    };
    let exp: Expectation;
    const m0 = a.metadata;
    // A write that took the last finalizer off a deleting object deleted it: the server answers with the
    // object at the resourceVersion before the deletion (the deletion itself comes later), so it is
    // waited for as a delete, by UID.
    if (a.kind !== 'Status' && m0?.deletionTimestamp && (!Array.isArray(m0.finalizers) || m0.finalizers.length === 0) && typeof m0.uid === 'string' && m0.uid) {
      exp = { namespace: key.namespace || undefined, name: key.name, resourceVersion: undefined, goneUid: m0.uid, outside: false };
    } else if (a.kind === 'Status') {
      const uid = a.details?.uid;
      if (typeof uid !== 'string' || uid === '') return;
      exp = { namespace: key.namespace || undefined, name: key.name, resourceVersion: undefined, goneUid: uid, outside: false };
    } else {
      const rv = a.metadata?.resourceVersion;
      // An answer that is not the object (an eviction's Status, a scale) says nothing about the object's version.
      if (typeof rv !== 'string' || rv === '' || (typeof a.metadata?.name === 'string' && a.metadata.name !== key.name)) return;
      const outside = this.cache.admits?.(kind, answer) === false;
      exp = { namespace: key.namespace || undefined, name: key.name, resourceVersion: rv, goneUid: undefined, outside };
    }
    const id = kindId(kind);
    let m = this.byKind.get(id);
    if (!m) this.byKind.set(id, (m = new Map<string, Expectation>()));
    const k = `${exp.namespace ?? ''}/${exp.name}`;
    const prev = m.get(k);
    // Keep the newest expectation of a key (two writes can answer out of order).
    if (prev?.resourceVersion !== undefined && exp.resourceVersion !== undefined && compareResourceVersions(prev.resourceVersion, exp.resourceVersion) > 0) return;
    m.set(k, exp);
    if (m.size >= this.sweepAt) this.sweep(kind, m);
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
   * read from the API server.
   */
  async beforeGet(kind: KindRef, key: ObjectKey, signal?: AbortSignal): Promise<ReadYourWritesOutcome> {
    const m = this.byKind.get(kindId(kind));
    const k = `${key.namespace || ''}/${key.name}`;
    const exp = m?.get(k);
    if (!exp) return 'cache';
    return this.waitFor(kind, 'get', [[k, exp]], m!, signal);
  }

  /** Before a cached list: wait for every write of the kind the list covers (its namespace, or all). */
  async beforeList(kind: KindRef, namespace: string | undefined, signal?: AbortSignal): Promise<ReadYourWritesOutcome> {
    const m = this.byKind.get(kindId(kind));
    if (!m || m.size === 0) return 'cache';
    const pending = [...m].filter(([, e]) => !namespace || e.namespace === namespace);
    if (pending.length === 0) return 'cache';
    return this.waitFor(kind, 'list', pending, m, signal);
  }

  private async waitFor(
    kind: KindRef,
    op: 'get' | 'list',
    pending: [string, Expectation][],
    m: Map<string, Expectation>,
    signal: AbortSignal | undefined,
  ): Promise<ReadYourWritesOutcome> {
    const started = performance.now();
    const done = (outcome: ReadYourWritesOutcome): ReadYourWritesOutcome => {
      this.options.onRead?.({ kind: label(kind), outcome, waitedMs: performance.now() - started, op });
      return outcome;
    };
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
    if (ok === true) return done('cache');
    if (ok === undefined || this.timeoutMs === 0) return done('live');
    const bound = new AbortController();
    const timer = setTimeout(() => bound.abort(), this.timeoutMs);
    const onAbort = (): void => bound.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      while (!bound.signal.aborted) {
        await this.cache.nextChange(kind, bound.signal);
        ok = await check();
        if (ok === true) return done('cache');
        if (ok === undefined) break;
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    signal?.throwIfAborted();
    return done('live');
  }
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
