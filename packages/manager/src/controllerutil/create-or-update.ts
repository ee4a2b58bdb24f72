/**
 * Create-or-update and create-or-patch: make an object look the way a
 * mutate function says, writing only when something changed.
 */
import type { AnyClient } from '@kubeloop/client/internal';
import type { WithKind } from '@kubeloop/client';
import { isAlreadyExists, isConflict, isNotFound, mergeFrom, retryOn } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import { ManagerError } from '../errors.js';
import { jsonEqual } from '../internal/json-equal.js';

/** What createOrUpdate / createOrPatch did. */
export type OperationResult = 'created' | 'updated' | 'unchanged';

/**
 * Read `obj` (by its kind, namespace and name) through `client`; create it
 * after `mutate` if missing, else run `mutate` on a copy of the current
 * object and update it if that changed anything.
 *
 * The read goes through the client it is given, as controller-runtime's
 * `CreateOrUpdate` does: in a reconciler that is the manager's cached client,
 * so an unchanged object costs no request at all. A cache may lag behind a
 * write this process just made (read-after-write): then the update fails
 * with a Conflict (stale resourceVersion) or the create with AlreadyExists
 * (the cache has not seen it yet); both are retried here with client-go's
 * `DefaultRetry` (5 attempts, 10 ms apart, jittered), by which time the
 * watch has normally delivered the write. If the cache is still behind after
 * that, the error reaches the reconciler and the workqueue retries the key
 * with backoff. To read around the cache, pass `manager.apiReader` (a full
 * client without a cache) instead.
 *
 * @example
 * ```ts
 * const cm: WithKind<ConfigMap> = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } };
 * await createOrUpdate(client, cm, (c) => { c.data = { size: disk.spec.size }; setControllerReference(disk, c); });
 * ```
 */
export function createOrUpdate<T extends KubeObject>(client: AnyClient, obj: WithKind<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult>;
/**
 * Start from the kind and key alone, for kinds whose `spec` (or another
 * field) is required: name the type, and let `mutate` set what is missing.
 *
 * @example
 * ```ts
 * await createOrUpdate<Certificate>(client, { apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name, namespace } }, (c) => {
 *   c.spec = { secretName: `${name}-tls`, dnsNames: [host], issuerRef: { name: 'letsencrypt' } };
 * });
 * ```
 */
export function createOrUpdate<T extends KubeObject>(client: AnyClient, obj: StartingObject<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult>;
export function createOrUpdate<T extends KubeObject>(client: AnyClient, obj: StartingObject<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult> {
  return createOr('update', client, obj, mutate);
}

/** As {@link createOrUpdate}, but sends a merge patch of what `mutate` changed (status included via the status subresource). */
export function createOrPatch<T extends KubeObject>(client: AnyClient, obj: WithKind<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult>;
/** As {@link createOrUpdate}'s starting-object form, with a merge patch. */
export function createOrPatch<T extends KubeObject>(client: AnyClient, obj: StartingObject<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult>;
export function createOrPatch<T extends KubeObject>(client: AnyClient, obj: StartingObject<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult> {
  return createOr('patch', client, obj, mutate);
}

/**
 * What createOrUpdate may start from: the kind and the key, with any other
 * field of `T` known up front; `mutate` sets the rest (on a create it gets
 * this object, so it must set every field `T` requires).
 */
export type StartingObject<T extends KubeObject> = Partial<T> & { apiVersion: string; kind: string; metadata?: T['metadata'] };

async function createOr<T extends KubeObject>(how: 'update' | 'patch', client: AnyClient, start: StartingObject<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult> {
  // A create runs `mutate` on this; it sets what the starting object left out.
  const obj = start as WithKind<T>;
  const name = obj.metadata?.name;
  if (!name) throw new ManagerError('InvalidOptions', 'createOrUpdate needs metadata.name');
  const key = { name, ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}) };
  return retryOn((err) => isConflict(err) || isAlreadyExists(err), async () => {
    let existing: WithKind<T> | undefined;
    try {
      // A copy: reads from the cache are frozen and shared.
      // The scheme's descriptor when it knows the kind: a typed read, served from the cache (a bare
      // apiVersion/kind would be an unstructured read, which the cached client sends to the API server).
      const kind = client.scheme.recognize(obj) ?? { apiVersion: obj.apiVersion, kind: obj.kind };
      existing = structuredClone(await client.get(kind, key)) as unknown as WithKind<T>;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!existing) {
      const fresh = structuredClone(obj);
      mutate(fresh);
      await client.create(fresh);
      return 'created';
    }
    const before = structuredClone(existing);
    mutate(existing);
    if (jsonEqual(before, existing)) return 'unchanged';
    if (how === 'update') {
      await client.update(existing);
    } else {
      const { status: _s1, ...beforeMain } = before as KubeObject & { status?: unknown };
      const { status: _s2, ...afterMain } = existing as KubeObject & { status?: unknown };
      if (!jsonEqual(beforeMain, afterMain)) await client.patch(existing, mergeFrom(beforeMain, afterMain));
      if (!jsonEqual(_s1, _s2)) await client.status().patch(existing, mergeFrom({ status: _s1 }, { status: _s2 }));
    }
    return 'updated';
  });
}

