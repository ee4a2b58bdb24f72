/**
 * Patches: the four kinds the API server accepts (JSON merge, JSON patch,
 * strategic merge, server-side apply), constructors for each, and
 * `mergeFrom`, which computes a JSON merge patch from a before/after pair,
 * optionally locked to the resourceVersion the change was based on.
 */
import { stringifyJson } from '@kubeloop/scheme';
import { ClientError } from './errors.js';

/**
 * The kind of a patch:
 * - `merge`: JSON merge patch (RFC 7386): objects merge, `null` deletes, arrays are replaced whole.
 * - `json`: JSON patch (RFC 6902): a list of operations.
 * - `strategic`: strategic merge patch: like `merge`, but lists of built-in kinds merge by key
 *   (containers by `name`, ...). Built-in kinds only; custom resources answer 415.
 * - `apply`: server-side apply: the fields this field manager owns, as a full intent.
 *
 * @example
 * ```ts
 * const type: PatchType = 'strategic';
 * const contentType = patchContentType(type); // 'application/strategic-merge-patch+json'
 * ```
 */
export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';

/**
 * A patch body and its kind, ready to send with `PATCH` and
 * {@link patchContentType}.
 *
 * @example
 * ```ts
 * const patch: Patch = mergePatch({ metadata: { labels: { tier: 'web' } } });
 * await transport.request({ method: 'PATCH', path, contentType: patchContentType(patch.type), body: patch.data });
 * ```
 */
export interface Patch {
  readonly type: PatchType;
  /** The serialised body (JSON; for `apply`, JSON is valid YAML). */
  readonly data: string;
}

const CONTENT_TYPES: Readonly<Record<PatchType, string>> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

/**
 * The `Content-Type` the API server expects for a patch type.
 *
 * @example
 * ```ts
 * patchContentType('merge'); // 'application/merge-patch+json'
 * patchContentType('apply'); // 'application/apply-patch+yaml'
 * ```
 */
export function patchContentType(type: PatchType): string {
  const contentType = CONTENT_TYPES[type] as string | undefined;
  if (contentType === undefined) throw new ClientError('InvalidRequest', `unknown patch type ${JSON.stringify(type)}`);
  return contentType;
}

/**
 * One JSON patch operation (RFC 6902). `path` and `from` are JSON pointers
 * (RFC 6901); build them with {@link jsonPointer} when a segment may hold `/`
 * or `~` (label keys such as `app.kubernetes.io/name` do).
 *
 * @example
 * ```ts
 * const ops: JsonPatchOperation[] = [
 *   { op: 'test', path: '/metadata/resourceVersion', value: '42' },
 *   { op: 'replace', path: '/data/mode', value: 'on' },
 * ];
 * ```
 */
export type JsonPatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown }
  | { readonly op: 'move'; readonly from: string; readonly path: string }
  | { readonly op: 'copy'; readonly from: string; readonly path: string }
  | { readonly op: 'test'; readonly path: string; readonly value: unknown };

/**
 * A JSON pointer (RFC 6901) from path segments, escaping `~` and `/`.
 *
 * @example
 * ```ts
 * jsonPointer('metadata', 'labels', 'app.kubernetes.io/name'); // '/metadata/labels/app.kubernetes.io~1name'
 * jsonPointer('spec', 'containers', 0, 'image');               // '/spec/containers/0/image'
 * ```
 */
export function jsonPointer(...segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) out += `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`;
  return out;
}

function serialise(what: string, value: unknown): string {
  let data: string | undefined;
  try {
    data = stringifyJson(value);
  } catch (cause) {
    throw new ClientError('InvalidRequest', `${what}: the patch cannot be serialised to JSON: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  if (data === undefined) throw new ClientError('InvalidRequest', `${what}: the patch is not a JSON value`);
  return data;
}

function requireObject(what: string, value: unknown): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ClientError('InvalidRequest', `${what}: expected a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
  }
}

/**
 * A JSON merge patch (RFC 7386) from a partial object: objects merge, `null`
 * removes a field, arrays replace the whole array.
 *
 * @example
 * ```ts
 * const patch = mergePatch({ metadata: { labels: { tier: 'web', old: null } } });
 * ```
 */
export function mergePatch(obj: object): Patch {
  requireObject('mergePatch', obj);
  return { type: 'merge', data: serialise('mergePatch', obj) };
}

/**
 * A JSON patch (RFC 6902) from a list of operations.
 *
 * @example
 * ```ts
 * const patch = jsonPatch([
 *   { op: 'add', path: jsonPointer('metadata', 'labels', 'app.kubernetes.io/name'), value: 'web' },
 *   { op: 'remove', path: '/data/obsolete' },
 * ]);
 * ```
 */
export function jsonPatch(ops: readonly JsonPatchOperation[]): Patch {
  if (!Array.isArray(ops)) throw new ClientError('InvalidRequest', 'jsonPatch: expected an array of operations');
  for (const [i, op] of ops.entries()) {
    const o = op as Partial<Record<'op' | 'path' | 'from', unknown>> & { value?: unknown };
    const bad = (why: string): ClientError => new ClientError('InvalidRequest', `jsonPatch: operation ${i} ${why}: ${serialise('jsonPatch', op).slice(0, 200)}`);
    if (typeof o.path !== 'string' || (o.path !== '' && !o.path.startsWith('/'))) throw bad('needs a JSON pointer "path" ("" or starting with "/")');
    switch (o.op) {
      case 'add':
      case 'replace':
      case 'test':
        if (!('value' in o) || o.value === undefined) throw bad('needs a "value"');
        break;
      case 'move':
      case 'copy':
        if (typeof o.from !== 'string') throw bad('needs a JSON pointer "from"');
        break;
      case 'remove':
        break;
      default:
        throw bad('has an unknown "op"');
    }
  }
  return { type: 'json', data: serialise('jsonPatch', ops) };
}

/**
 * A strategic merge patch from a partial object. Like {@link mergePatch}, but
 * the server merges lists of built-in kinds by their merge key (containers,
 * volumes, env by `name`; ports by `containerPort`...) instead of replacing
 * them, and honours `$patch` / `$retainKeys` directives. Built-in kinds only.
 *
 * @example
 * ```ts
 * // bumps one container's image, leaves the Deployment's other containers alone
 * const patch = strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'app', image: 'app:v2' }] } } } });
 * ```
 */
export function strategicMergePatch(obj: object): Patch {
  requireObject('strategicMergePatch', obj);
  return { type: 'strategic', data: serialise('strategicMergePatch', obj) };
}

/**
 * A server-side apply body: the complete intent of one field manager
 * (`apiVersion`, `kind`, `metadata.name` and the fields it owns). Send it with
 * the `fieldManager` query parameter (required) and `force` as needed.
 *
 * @example
 * ```ts
 * const patch = applyPatch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'default' }, data: { mode: 'on' } });
 * ```
 */
export function applyPatch(obj: object): Patch {
  requireObject('applyPatch', obj);
  return { type: 'apply', data: serialise('applyPatch', obj) };
}

/**
 * Options for {@link mergeFrom}.
 *
 * @example
 * ```ts
 * const patch = mergeFrom(before, after, { optimisticLock: true } satisfies MergeFromOptions);
 * ```
 */
export interface MergeFromOptions {
  /**
   * Put `before`'s `metadata.resourceVersion` in the patch, so the server
   * rejects it with 409 Conflict if the object changed since `before` was
   * read (controller-runtime's `MergeFromWithOptimisticLock`). `before` must
   * have a resourceVersion. Default: false (last write wins).
   */
  readonly optimisticLock?: boolean;
}

type JsonObject = Record<string, unknown>;

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep equality of JSON values; `undefined` members count as absent. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as JsonObject;
  const bo = b as JsonObject;
  let count = 0;
  for (const key in ao) {
    if (!Object.hasOwn(ao, key) || ao[key] === undefined) continue;
    count++;
    if (!Object.hasOwn(bo, key) || !jsonEqual(ao[key], bo[key])) return false;
  }
  for (const key in bo) if (Object.hasOwn(bo, key) && bo[key] !== undefined) count--;
  return count === 0;
}

/** The RFC 7386 merge patch that turns `before` into `after`; undefined when there is no difference. */
function diff(before: JsonObject, after: JsonObject): JsonObject | undefined {
  let patch: JsonObject | undefined;
  for (const key in after) {
    if (!Object.hasOwn(after, key)) continue;
    const a = after[key];
    if (a === undefined) continue; // handled as a removal below
    const b = Object.hasOwn(before, key) ? before[key] : undefined;
    let change: unknown;
    if (b === undefined) change = a;
    else if (isPlainObject(a) && isPlainObject(b)) change = diff(b, a);
    else if (!jsonEqual(a, b)) change = a;
    if (change !== undefined) (patch ??= {})[key] = change;
  }
  for (const key in before) {
    if (!Object.hasOwn(before, key) || before[key] === undefined) continue;
    if (!Object.hasOwn(after, key) || after[key] === undefined) (patch ??= {})[key] = null;
  }
  return patch;
}

/**
 * Compute a JSON merge patch (RFC 7386) that turns `before` into `after`:
 * nested objects are compared field by field, a field missing from `after`
 * becomes `null` (removed), arrays that differ are sent whole, unchanged
 * fields are left out (no change at all gives `{}`). With `optimisticLock`
 * the patch also carries `before`'s `metadata.resourceVersion`, so a change
 * made by someone else in between fails with 409 Conflict instead of being
 * overwritten (pair it with `retryOnConflict`).
 *
 * RFC 7386 cannot set a field to `null`: a `null` in `after` reads as "remove".
 *
 * @example
 * ```ts
 * const before = structuredClone(deployment);
 * deployment.spec!.replicas = 3;
 * delete deployment.metadata!.labels!['canary'];
 * const patch = mergeFrom(before, deployment, { optimisticLock: true });
 * // {"metadata":{"labels":{"canary":null},"resourceVersion":"812"},"spec":{"replicas":3}}
 * ```
 */
export function mergeFrom(before: object, after: object, options: MergeFromOptions = {}): Patch {
  requireObject('mergeFrom (before)', before);
  requireObject('mergeFrom (after)', after);
  const patch = diff(before as JsonObject, after as JsonObject) ?? {};
  if (options.optimisticLock) {
    const meta = (before as { metadata?: { resourceVersion?: unknown } }).metadata;
    const resourceVersion = meta?.resourceVersion;
    if (typeof resourceVersion !== 'string' || resourceVersion === '') {
      throw new ClientError('InvalidRequest', 'mergeFrom: optimisticLock needs metadata.resourceVersion on the "before" object');
    }
    // a copy: the metadata part of the patch may be `after`'s own object
    const metaPatch = patch['metadata'];
    patch['metadata'] = { ...(isPlainObject(metaPatch) ? metaPatch : {}), resourceVersion };
  }
  return { type: 'merge', data: serialise('mergeFrom', patch) };
}
