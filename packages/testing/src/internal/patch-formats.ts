/**
 * The three patch formats the API server takes besides apply: JSON merge
 * patch (RFC 7386), JSON patch (RFC 6902, applied by fast-json-patch) and
 * strategic merge patch (merge keys from the kind's shape, with the
 * `$patch`, `$deleteFromPrimitiveList`, `$setElementOrder` and `$retainKeys`
 * directives).
 */
import fastJsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import type { Shape } from './schema.js';
import { goFormat } from './go-format.js';
import { isObject, sameJson } from './json.js';
import type { Json } from './json.js';
import { ApiError, badRequest, statusOf } from './status.js';

/** RFC 7386. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Json = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** The value at a JSON pointer, or `undefined` when the path does not lead anywhere. */
function at(doc: unknown, pointer: string): unknown {
  let here: unknown = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(here)) here = /^(0|[1-9]\d*)$/.test(key) ? here[Number(key)] : undefined;
    else if (isObject(here)) here = Object.hasOwn(here, key) ? here[key] : undefined;
    else return undefined;
  }
  return here;
}

/**
 * An operation as the API server's JSON patch library (evanphx/json-patch
 * v4) reads it where it departs from RFC 6902: `replace` of a key a map
 * does not have adds it, `test` of such a key with the value `null`
 * passes (found by the differential fuzzer), and a path that does not
 * start with `/` loses its first segment; an operation without its `value`
 * has the value `null`.
 */
function asServerReads(doc: unknown, given: unknown): Operation {
  if (!isObject(given) || typeof given['path'] !== 'string' || given['path'] === '') return given as Operation;
  // the library skips what comes before the first '/' (`data/x` is `/x`)
  const op = { ...given };
  // an add, replace or test without a value has the value null (`add /metadata/labels` removes them; measured on
  // kube-apiserver v1.37.2)
  if ((op['op'] === 'add' || op['op'] === 'replace' || op['op'] === 'test') && !Object.hasOwn(op, 'value')) op['value'] = null;
  for (const f of ['path', 'from'] as const) {
    const p = op[f];
    if (typeof p === 'string' && !p.startsWith('/') && p.includes('/')) op[f] = p.slice(p.indexOf('/'));
  }
  const path = op['path'] as string;
  const parent = at(doc, path.slice(0, path.lastIndexOf('/')));
  const key = path.slice(path.lastIndexOf('/') + 1).replaceAll('~1', '/').replaceAll('~0', '~');
  const missingKey = isObject(parent) && !Array.isArray(parent) && !Object.hasOwn(parent, key);
  if (missingKey && op['op'] === 'replace') return { ...op, op: 'add' } as unknown as Operation;
  if (missingKey && op['op'] === 'test' && op['value'] === null) return { op: 'test', path: '', value: doc } as Operation;
  return op as unknown as Operation;
}

/** RFC 6902, as the API server applies it; a failed operation is the API server's 422. */
export function jsonPatch(target: Json, ops: unknown): Json {
  if (!Array.isArray(ops)) throw badRequest(`error decoding patch: json: cannot unmarshal ${ops === null ? 'null' : typeof ops === 'object' ? 'object' : typeof ops} into Go value of type []handlers.jsonPatchOp`);
  try {
    let doc: unknown = structuredClone(target);
    for (const [i, op] of ops.entries()) doc = fastJsonPatch.applyOperation(doc, asServerReads(doc, op), true, true, false, i).newDocument;
    return doc as Json;
  } catch {
    // malformed or not applicable: the API server answers 422 with no details (found by the differential fuzzer)
    throw new ApiError(statusOf(422, 'Invalid', 'the server rejected our request due to an error in our request', {}));
  }
}

function keyOf(item: unknown, key: string): unknown {
  return isObject(item) ? item[key] : undefined;
}

/** Strategic merge patch of `patch` onto `target`, at `path` (field names from the root). */
export function strategicMerge(target: unknown, patch: unknown, shape: Shape, path: readonly string[] = []): unknown {
  if (!isObject(patch)) return patch;
  const directive = patch['$patch'];
  if (directive === 'delete') return undefined;
  if (directive === 'replace') {
    const { $patch: _p, ...rest } = patch;
    return rest;
  }
  // the server's 500, naming the map it found the directive in as Go prints it (measured on kube-apiserver v1.37.2)
  if (directive !== undefined && directive !== 'merge') throw new ApiError(statusOf(500, undefined, `unknown patch type: ${goFormat(directive)} in map: ${goFormat(patch)}`));
  if (shape.patchReplace(path) && path.length > 0) {
    const { $patch: _p, ...rest } = patch;
    return rest;
  }
  const out: Json = isObject(target) ? { ...target } : {};
  const retain = patch['$retainKeys'];
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const remove = Array.isArray(v) ? v : [];
      if (Array.isArray(out[field])) out[field] = (out[field] as unknown[]).filter((x) => !remove.some((r) => sameJson(r, x)));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const childPath = [...path, k];
    if (Array.isArray(v)) {
      out[k] = mergeList(out[k], v, shape, childPath);
      const order = patch[`$setElementOrder/${k}`];
      if (Array.isArray(order) && Array.isArray(out[k])) out[k] = reorder(out[k] as unknown[], order, shape, childPath);
      continue;
    }
    const merged = strategicMerge(out[k], v, shape, childPath);
    if (merged === undefined) delete out[k];
    else out[k] = merged;
  }
  if (Array.isArray(retain)) {
    for (const k of Object.keys(out)) if (!retain.includes(k) && !Object.hasOwn(patch, k)) delete out[k];
  }
  return out;
}

function mergeList(target: unknown, patch: unknown[], shape: Shape, path: readonly string[]): unknown[] {
  const rule = shape.patchList(path);
  const current = Array.isArray(target) ? [...(target as unknown[])] : [];
  if (patch.some((item) => isObject(item) && item['$patch'] === 'replace' && Object.keys(item).length === 1)) {
    return patch.filter((item) => !(isObject(item) && item['$patch'] === 'replace'));
  }
  if (rule.type === 'atomic') return patch;
  if (rule.type === 'set') {
    const fromPatch: unknown[] = [];
    for (const item of patch) if (!fromPatch.some((c) => sameJson(c, item))) fromPatch.push(item);
    const serverOnly = current.filter((c) => !fromPatch.some((x) => sameJson(c, x)));
    return mergeSorted(serverOnly, fromPatch, current, (a, b) => sameJson(a, b));
  }
  const key = rule.patchKey;
  const fromPatch: unknown[] = [];
  const deleted: unknown[] = [];
  for (const item of patch) {
    const k = keyOf(item, key);
    if (k === undefined) throw badRequest(`map: ${JSON.stringify(item)} does not contain declared merge key: ${key}`);
    if (isObject(item) && item['$patch'] === 'delete') {
      deleted.push(k);
      continue;
    }
    const index = fromPatch.findIndex((c) => sameJson(keyOf(c, key), k));
    if (index !== -1) {
      fromPatch[index] = strategicMerge(fromPatch[index], item, shape, path);
      continue;
    }
    const live = current.find((c) => sameJson(keyOf(c, key), k));
    fromPatch.push(strategicMerge(live, item, shape, path));
  }
  const kept = fromPatch.filter((x) => !deleted.some((k) => sameJson(keyOf(x, key), k)));
  const serverOnly = current.filter((c) => !fromPatch.some((x) => sameJson(keyOf(x, key), keyOf(c, key))) && !deleted.some((k) => sameJson(keyOf(c, key), k)));
  return mergeSorted(serverOnly, kept, current, (a, b) => sameJson(keyOf(a, key), keyOf(b, key)));
}

/**
 * The order strategic merge patch gives a merged list (apimachinery's
 * mergeSortedSlice): the patch's items in patch order, the live list's
 * other items inserted before the first patch item they precede in the
 * live list; a patch item the live list does not have comes first (so an
 * added container goes before the others, as on the server).
 */
function mergeSorted(serverOnly: readonly unknown[], fromPatch: readonly unknown[], live: readonly unknown[], same: (a: unknown, b: unknown) => boolean): unknown[] {
  const index = (x: unknown): number => live.findIndex((l) => same(l, x));
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < serverOnly.length || j < fromPatch.length) {
    if (j >= fromPatch.length) out.push(serverOnly[i++]);
    else if (i >= serverOnly.length) out.push(fromPatch[j++]);
    else {
      const li = index(serverOnly[i]);
      const ri = index(fromPatch[j]);
      if (li >= 0 && ri >= 0 && li < ri) out.push(serverOnly[i++]);
      else out.push(fromPatch[j++]);
    }
  }
  return out;
}

function reorder(items: unknown[], order: unknown[], shape: Shape, path: readonly string[]): unknown[] {
  const rule = shape.patchList(path);
  const id = (x: unknown): string => JSON.stringify(rule.type === 'map' ? keyOf(x, rule.patchKey) : isObject(x) ? undefined : x);
  const rank = new Map(order.map((o, i) => [JSON.stringify(rule.type === 'map' ? keyOf(o, rule.patchKey) : o), i]));
  const ranked = items.filter((x) => rank.has(id(x))).sort((a, b) => rank.get(id(a))! - rank.get(id(b))!);
  const rest = items.filter((x) => !rank.has(id(x)));
  return [...ranked, ...rest];
}
