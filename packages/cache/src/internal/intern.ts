/**
 * One copy of the metadata strings many cached objects repeat. `JSON.parse`
 * shares property names (label and annotation keys) but gives every object
 * its own copy of each string value: the namespace, label values, owner
 * references' apiVersion and kind, finalizers, creationTimestamp (objects
 * made in the same second share it). Replacing each by the copy already
 * seen cut heap per cached ConfigMap by about 15 % (888 to 756 bytes for a
 * ConfigMap with labels, an owner and a managedFields entry:
 * `pnpm bench:probes intern`, docs/benchmarks.md, Memory, Per object).
 *
 * The pool is shared by every informer of the process and bounded: when it
 * holds {@link POOL_LIMIT} strings it starts afresh (already cached objects
 * keep their copies; nothing is wrong, only less is shared), so a stream of
 * distinct values cannot grow it without end. Strings longer than
 * {@link MAX_LENGTH} are left alone (they are rarely repeated).
 */

/** Most strings the pool holds before it starts afresh. */
export const POOL_LIMIT = 4096;
/** Longest string interned (label values are at most 63 characters, names 253). */
export const MAX_LENGTH = 253;

const pool = new Map<string, string>();

function intern(value: unknown): unknown {
  if (typeof value !== 'string' || value.length > MAX_LENGTH) return value;
  const seen = pool.get(value);
  if (seen !== undefined) return seen;
  if (pool.size >= POOL_LIMIT) pool.clear();
  pool.set(value, value);
  return value;
}

function internValues(record: unknown): void {
  if (record === null || typeof record !== 'object' || Object.isFrozen(record)) return;
  const r = record as Record<string, unknown>;
  for (const key in r) r[key] = intern(r[key]);
}

/**
 * Replace the repeated metadata strings of `obj` by their pooled copies, in
 * place; the object's content is unchanged. Frozen parts are skipped.
 */
export function internMetadata(obj: object): void {
  const metadata = (obj as { metadata?: unknown }).metadata;
  if (metadata === null || typeof metadata !== 'object' || Object.isFrozen(metadata)) return;
  const m = metadata as Record<string, unknown>;
  for (const field of ['namespace', 'creationTimestamp', 'generateName'] as const) if (typeof m[field] === 'string') m[field] = intern(m[field]);
  internValues(m['labels']);
  if (Array.isArray(m['finalizers']) && !Object.isFrozen(m['finalizers'])) {
    const finalizers = m['finalizers'] as unknown[];
    for (let i = 0; i < finalizers.length; i++) finalizers[i] = intern(finalizers[i]);
  }
  if (Array.isArray(m['ownerReferences'])) {
    for (const ref of m['ownerReferences'] as unknown[]) {
      if (ref === null || typeof ref !== 'object' || Object.isFrozen(ref)) continue;
      const r = ref as Record<string, unknown>;
      r['apiVersion'] = intern(r['apiVersion']);
      r['kind'] = intern(r['kind']);
    }
  }
}

/** How many strings the pool holds now (for tests). */
export function poolSize(): number {
  return pool.size;
}
