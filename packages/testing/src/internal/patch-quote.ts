/**
 * A patched object as kube-apiserver quotes it when the kind's Go type
 * cannot hold the result (`patch: Invalid value: "{...}"`). Its patch
 * library (evanphx/json-patch) decodes only what a patch goes into: the top
 * level and every member a patch descends into are encoded again with
 * their keys sorted (Go sorts map keys), a value a JSON patch sets keeps
 * the patch's own bytes, and a member the patch did not touch keeps the
 * bytes the object was encoded with, in its Go type's field order. Found by
 * the differential fuzzer; the field orders known here are the metadata
 * types every object has (other structs' members are written sorted).
 */
import { canonical, isObject } from './json.js';
import type { Json } from './json.js';
import { stringifyJson } from '@kubeloop/scheme';

/** Go field orders of the metadata structs (apimachinery meta/v1 types.go). */
const STRUCT_ORDER: Readonly<Record<string, readonly string[]>> = {
  ObjectMeta: ['name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers', 'managedFields'],
  OwnerReference: ['apiVersion', 'kind', 'name', 'uid', 'controller', 'blockOwnerDeletion'],
  ManagedFieldsEntry: ['manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'fieldsV1', 'subresource'],
};

/** The Go type of `key` inside a value of `type` (undefined: one whose order is not known here). `[]X` for lists. */
function childType(type: string | undefined, key: string): string | undefined {
  if (type === 'root') return key === 'metadata' ? 'ObjectMeta' : undefined;
  if (type === 'ObjectMeta') return key === 'ownerReferences' ? '[]OwnerReference' : key === 'managedFields' ? '[]ManagedFieldsEntry' : undefined;
  if (type === 'ManagedFieldsEntry' && key === 'fieldsV1') return 'raw';
  return undefined;
}

/** `value` as the server encoded the stored object: known structs in field order, the rest sorted. */
function stored(value: unknown, type: string | undefined): string {
  if (type === 'raw') return stringifyJson(value) ?? 'null'; // FieldsV1: raw bytes, written as the server built them
  if (type?.startsWith('[]') === true && Array.isArray(value)) return `[${value.map((v) => stored(v, type.slice(2))).join(',')}]`;
  const order = type === undefined ? undefined : STRUCT_ORDER[type];
  if (order && isObject(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined);
    const known = order.filter((k) => keys.includes(k));
    const rest = keys.filter((k) => !order.includes(k)).sort();
    return `{${[...known, ...rest].map((k) => `${JSON.stringify(k)}:${stored(value[k], childType(type, k))}`).join(',')}}`;
  }
  return canonical(value);
}

function members(value: Json, write: (key: string) => string): string {
  const keys = Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${write(k)}`).join(',')}}`;
}

/** A merge patch's result: members both hold as objects are merged (decoded, sorted), members it set are its (sorted), the rest stored. */
function quoteMerge(patched: Json, original: Json, patch: Json, type: string | undefined): string {
  return members(patched, (k) => {
    if (!(k in patch)) return stored(patched[k], childType(type, k));
    const p = patch[k];
    const o = original[k];
    const n = patched[k];
    return isObject(p) && isObject(o) && isObject(n) ? quoteMerge(n, o, p, childType(type, k)) : canonical(n);
  });
}

const SEP = '\u0001';

/** A JSON pointer's reference tokens. */
function tokens(pointer: unknown): string[] | undefined {
  if (typeof pointer !== 'string' || (pointer !== '' && !pointer.startsWith('/'))) return undefined;
  return pointer === '' ? [] : pointer.slice(1).split('/').map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** A JSON patch's result: containers on an operation's path decoded (sorted), values it set in its own bytes, the rest stored. */
function quoteJsonPatch(value: unknown, path: string[], containers: ReadonlySet<string>, set: ReadonlySet<string>, type: string | undefined): string {
  const key = path.join(SEP);
  if (path.length > 0 && set.has(key)) return stringifyJson(value) ?? 'null';
  if (!containers.has(key)) return stored(value, type);
  if (Array.isArray(value)) {
    const item = type?.startsWith('[]') === true ? type.slice(2) : undefined;
    return `[${value.map((v, i) => quoteJsonPatch(v, [...path, String(i)], containers, set, item)).join(',')}]`;
  }
  if (isObject(value)) return members(value, (k) => quoteJsonPatch(value[k], [...path, k], containers, set, childType(type, k)));
  return stored(value, type);
}

/**
 * The patched object `patched` (the result of `patch`, of `contentType`,
 * over `original`) as the server quotes it.
 *
 * @example
 * ```ts
 * const current = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'n', name: 'a' }, data: {} };
 * const patched = { ...current, data: { x: 1 } };
 * quotePatchedObject(patched, current, { data: { x: 1 } }, 'application/merge-patch+json');
 * // '{"apiVersion":"v1","data":{"x":1},"kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}'
 * ```
 */
export function quotePatchedObject(patched: Json, original: Json, patch: unknown, contentType: string): string {
  if (contentType === 'application/merge-patch+json' && isObject(patch)) return quoteMerge(patched, original, patch, 'root');
  if (contentType === 'application/json-patch+json' && Array.isArray(patch)) {
    const containers = new Set<string>(['']);
    const set = new Set<string>();
    for (const op of patch) {
      if (!isObject(op)) continue;
      for (const pointer of [op['path'], op['from']]) {
        const t = tokens(pointer);
        if (t === undefined) continue;
        // evanphx/json-patch decodes every container on the way to the member an operation names
        for (let i = 0; i < t.length; i++) containers.add(t.slice(0, i).join(SEP));
      }
      const target = tokens(op['path']);
      if (target && target.length > 0 && (op['op'] === 'add' || op['op'] === 'replace')) set.add(target.join(SEP));
    }
    return quoteJsonPatch(patched, [], containers, set, 'root');
  }
  return canonical(patched);
}
