/**
 * Own writes: what this process wrote, and which controller's reconcile
 * wrote it, so that an informer event that is only the echo of that write
 * (the same object at the resourceVersion the write returned) can be told
 * apart from a change someone else made. The client reports each write
 * (`ClientOptions.onWrite`); a reconcile runs in an async scope naming its
 * controller; sources ask {@link OwnWrites.isEcho} per event.
 */
import type { KindRef, ObjectKey } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import type { Predicate } from './predicates.js';

const { AsyncLocalStorage } = process.getBuiltinModule('node:async_hooks');

/** The controller whose reconcile is running, through awaits (a fresh store per process, shared by copies of this module). */
const SCOPE_KEY = Symbol.for('kubeloop.manager.reconcileScope');
type Scope = InstanceType<typeof AsyncLocalStorage<string>>;
const scope: Scope = ((globalThis as Record<symbol, unknown>)[SCOPE_KEY] ??= new AsyncLocalStorage<string>()) as Scope;

/** Run `fn` as a reconcile of `controller`: the writes it makes are that controller's. */
export function inReconcileOf<T>(controller: string, fn: () => T): T {
  return scope.run(controller, fn);
}

/** The controller whose reconcile is running here, if any. */
export function currentController(): string | undefined {
  return scope.getStore();
}

/** apiVersion and kind of a kind reference, as one string (the metadata-only and the full form alike). */
export function kindIdOf(kind: KindRef | { apiVersion?: string; kind?: string }): string {
  const ref = isMetadataRef(kind) ? (kind as { of: { apiVersion: string; kind: string } }).of : (kind as { apiVersion?: string; kind?: string });
  return `${ref.apiVersion ?? ''}\u0000${ref.kind ?? ''}`;
}

/**
 * The writes this process made through one client: per object, the last
 * resourceVersion a write returned and the controller whose reconcile made
 * it. Bounded (the oldest writes are forgotten first), so memory does not
 * grow with the number of objects written.
 */
export class OwnWrites {
  readonly #writes = new Map<string, { readonly resourceVersion: string; readonly controller: string | undefined }>();

  constructor(private readonly max = 4096) {}

  /** Remember a write's answer (the client's `onWrite`). */
  wrote(kind: KindRef, key: ObjectKey, answer: unknown): void {
    const rv = (answer as { metadata?: { resourceVersion?: unknown } } | null | undefined)?.metadata?.resourceVersion;
    if (typeof rv !== 'string' || rv === '') return;
    const id = `${kindIdOf(kind)}\u0000${key.namespace ?? ''}/${key.name}`;
    this.#writes.delete(id);
    if (this.#writes.size >= this.max) {
      const oldest = this.#writes.keys().next().value;
      if (oldest !== undefined) this.#writes.delete(oldest);
    }
    this.#writes.set(id, { resourceVersion: rv, controller: currentController() });
  }

  /**
   * Whether `object` (of the kind `kindId` names, see {@link kindIdOf}), as
   * an informer delivered it, is exactly what `controller`'s last write of
   * it returned.
   */
  isEcho(kindId: string, object: KubeObject, controller: string): boolean {
    const m = object.metadata;
    if (m?.resourceVersion === undefined || m.name === undefined) return false;
    return this.wroteAt(kindId, m.namespace, m.name, m.resourceVersion, controller);
  }

  /** Whether `controller`'s last write of the object returned `resourceVersion`. */
  wroteAt(kindId: string, namespace: string | undefined, name: string, resourceVersion: string, controller: string): boolean {
    const w = this.#writes.get(`${kindId}\u0000${namespace ?? ''}/${name}`);
    return w !== undefined && w.resourceVersion === resourceVersion && w.controller === controller;
  }

  /** Writes remembered. */
  get size(): number {
    return this.#writes.size;
  }
}

/** Marks the predicate {@link ignoreOwnWrites} makes, so a kind source can count what it drops. */
export const OWN_WRITES_PREDICATE = Symbol.for('kubeloop.manager.ignoreOwnWrites');

/**
 * A predicate that drops events that are only the echo of the controller's
 * own write: an add or update whose object is at the resourceVersion this
 * controller's last write of it returned (Java Operator SDK's own-write
 * filtering). A reconciler that writes its status every time then is not
 * woken by that write; a change anyone else makes (or a later one) still
 * passes. Events of kinds the controller did not write pass. Give it in a
 * predicate list (`for`, `owns`, `watches`, or `withEventFilter`): the
 * controller's kind sources recognise it there (an echo that arrives before
 * the write's answer has been read is dropped when the reconcile would
 * start, with trigger attribution on). Inside `and()`, `or()` or `not()` it
 * has no effect (it passes every event).
 *
 * @example
 * ```ts
 * manager.controller().for(HardDisk, { predicates: [ignoreOwnWrites()] }).complete(reconciler);
 * ```
 */
export function ignoreOwnWrites(): Predicate {
  const p: Predicate = () => true;
  return Object.assign(p, { [OWN_WRITES_PREDICATE]: true });
}

/** Whether a predicate is {@link ignoreOwnWrites}'s. */
export function isIgnoreOwnWrites(p: Predicate): boolean {
  return (p as unknown as Record<symbol, unknown>)[OWN_WRITES_PREDICATE] === true;
}
