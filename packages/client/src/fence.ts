/**
 * Write fencing: the writes made inside a fenced scope are refused once the
 * fence is revoked, and the ones in flight then are cut. A shard ring fences
 * each reconcile with its bucket, a leader election its leader-only work, so
 * a replica that lost its share (or was paused past its lease) cannot write
 * beside the new owner, whatever its code does with its AbortSignal.
 *
 * The scope is an async context (`AsyncLocalStorage`): every request sent by
 * code that runs inside `runFenced`, through any client of this package, in
 * the same call chain or in timers and promises it starts, carries the fence.
 * Only writes (POST, PUT, PATCH, DELETE) are fenced; reads are not (an
 * informer started by a fenced reconcile lists and watches as usual).
 */
import { ClientError } from './errors.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { AsyncLocalStorage } = process.getBuiltinModule('node:async_hooks');

/**
 * What a fenced scope's writes check. A shard ring's bucket or a leadership
 * term implements it; so can a user's own lock.
 *
 * @example
 * ```ts
 * const stop = new AbortController();
 * const fence: WriteFence = { signal: stop.signal, revoked: () => (stop.signal.aborted ? 'the lock was lost' : undefined) };
 * ```
 */
export interface WriteFence {
  /**
   * Why writes are refused now, or undefined while they may be sent. Called
   * synchronously right before each write's bytes are handed to its socket
   * (and again before each retry): cheap, and must not throw. Once it has
   * returned a reason it must keep returning one.
   */
  revoked(): string | undefined;
  /** Aborts when the fence is revoked: writes in flight then are aborted and their sockets destroyed. */
  readonly signal: AbortSignal;
}

/** One store per process, even with two copies of this package in node_modules. */
const STORE_KEY = Symbol.for('@kubeloop/client/write-fence');
type FenceStore = InstanceType<typeof AsyncLocalStorage<WriteFence | undefined>>;
const store: FenceStore = ((globalThis as Record<symbol, unknown>)[STORE_KEY] ??= new AsyncLocalStorage<WriteFence | undefined>()) as FenceStore;

/**
 * Run `fn` with its writes fenced by `fence`: every write sent from inside it
 * (through any client of this package, in any async work it starts) is
 * refused with ClientError `Fenced` once `fence.revoked()` says why, and a
 * write in flight when `fence.signal` aborts is aborted with that error
 * (its socket destroyed). A nested `runFenced` replaces the outer fence.
 *
 * @example
 * ```ts
 * const lock = new AbortController(); // aborted when this replica loses its lock
 * const fence: WriteFence = { signal: lock.signal, revoked: () => (lock.signal.aborted ? 'the lock was lost' : undefined) };
 * await runFenced(fence, async () => {
 *   await client.patch(ConfigMap, { namespace: 'default', name: 'report' }, mergePatch({ data: { at: new Date().toISOString() } }));
 * });
 * ```
 */
export function runFenced<T>(fence: WriteFence, fn: () => T): T {
  return store.run(fence, fn);
}

/**
 * Run `fn` with no fence, for background work a fenced scope starts that must
 * outlive it (an event recorder's writer, say).
 *
 * @example
 * ```ts
 * // A heartbeat the fenced scope starts, written whatever becomes of the scope's fence.
 * outsideFence(() => setInterval(() => void client.patch(ConfigMap, { namespace: 'default', name: 'heartbeat' }, mergePatch({ data: { at: new Date().toISOString() } })), 10_000));
 * ```
 */
export function outsideFence<T>(fn: () => T): T {
  return store.run(undefined, fn);
}

/**
 * The fence of the current async context, if any: what a write sent from
 * here would be checked against.
 *
 * @example
 * ```ts
 * if (currentFence()?.revoked() !== undefined) return; // this work's writes would be refused: stop early
 * ```
 */
export function currentFence(): WriteFence | undefined {
  return store.getStore();
}

/**
 * The error a write gets when its fence is revoked (`reason` `Fenced`).
 * @internal
 */
export function fencedError(what: string, why: string): ClientError {
  return new ClientError('Fenced', `${what}: not sent: ${why}`);
}
