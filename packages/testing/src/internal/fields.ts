/**
 * Field ownership (`metadata.managedFields`, FieldsV1) and server-side
 * apply, for the common cases: maps merge field by field, lists merge by
 * their keys or as sets where the kind's shape says so (else whole), every
 * write records which manager set which fields, apply conflicts when it
 * would change a field another manager owns (unless forced), and a field an
 * applier stops applying is removed when no one else owns it.
 */
import { parseJson, stringifyJson } from '@kubeloop/scheme';
import { canonical, isObject, sameJson } from './json.js';
import type { Shape } from './schema.js';

type Json = Record<string, unknown>;

/** Path elements in FieldsV1 syntax (`f:name`, `k:{"name":"a"}`, `v:"x"`), joined. */
type PathKey = string;
/** Between the elements of a PathKey. */
export const SEP = '\u0001';

export interface ManagedEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  subresource: string | undefined;
  set: Set<PathKey>;
}

/** Which part of an object a write may touch. */
export type Scope = 'main' | 'status';

/**
 * Metadata fields that field ownership tracks: all but those the server's
 * field manager strips (name, namespace, uid, resourceVersion, generation,
 * creationTimestamp, selfLink, managedFields). A deletion time is among
 * them: an update that gives another owns it, though the server keeps the
 * stored one (found by the differential fuzzer).
 */
const TRACKED_METADATA = new Set(['labels', 'annotations', 'finalizers', 'ownerReferences', 'generateName', 'deletionTimestamp']);

function keyElement(item: unknown, keys: readonly string[], defaults: Readonly<Record<string, unknown>> = {}): string {
  const key: Json = {};
  for (const k of [...keys].sort()) {
    const value = isObject(item) ? (item[k] ?? defaults[k]) : undefined;
    if (value !== undefined) key[k] = value;
  }
  return `k:${stringifyJson(key)}`;
}

function walk(value: unknown, names: string[], pes: string[], shape: Shape, mapNodes: boolean, out: Set<PathKey>): void {
  const here = pes.join(SEP);
  if (Array.isArray(value)) {
    const rule = shape.list(names);
    if (rule.type === 'atomic') {
      out.add(here);
      return;
    }
    // an empty associative list (map or set) is owned by an update, but an apply owns nothing in it (found by the differential fuzzer)
    if (value.length === 0) {
      if (mapNodes) out.add(here);
      return;
    }
    if (mapNodes) out.add(here);
    // an atomic struct (an owner reference, a LocalObjectReference: x-kubernetes-map-type atomic) is owned whole by its item
    const atomicItems = rule.type !== 'set' && shape.atomicItems(names);
    // a key two items share (an update may store them; an apply is refused) is owned as the key alone, nothing below it
    // (structured-merge-diff's duplicates; measured on kube-apiserver v1.37.2: an env variable listed twice)
    const elements = rule.type === 'set' ? [] : value.map((item) => keyElement(item, rule.keys, rule.keyDefaults));
    const seen = new Set<string>();
    const repeated = new Set<string>();
    for (const pe of elements) (seen.has(pe) ? repeated : seen).add(pe);
    for (const [i, item] of value.entries()) {
      if (rule.type === 'set') {
        out.add([...pes, `v:${canonical(item)}`].join(SEP));
        continue;
      }
      const pe = elements[i]!;
      out.add([...pes, pe].join(SEP));
      if (repeated.has(pe)) continue;
      if (isObject(item) && !atomicItems) for (const [k, v] of Object.entries(item)) if (v !== undefined) walk(v, [...names, k], [...pes, pe, `f:${k}`], shape, mapNodes, out);
    }
    return;
  }
  if (isObject(value)) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0 || (names.length > 0 && shape.atomicMap(names))) {
      out.add(here);
      return;
    }
    if (mapNodes && pes.length > 0) out.add(here);
    for (const [k, v] of entries) walk(v, [...names, k], [...pes, `f:${k}`], shape, mapNodes, out);
    return;
  }
  out.add(here);
}

/**
 * The fields an object sets, restricted to what `scope` covers. `mapNodes`
 * also lists each non-empty map and list (what an update records); apply
 * records leaves and list items only.
 */
export function fieldsOf(obj: Json | undefined, shape: Shape, scope: Scope, hasStatus: boolean, mapNodes: boolean): Set<PathKey> {
  const out = new Set<PathKey>();
  if (!obj) return out;
  for (const [k, v] of Object.entries(obj)) {
    // a top-level null is Go's zero value written out (a core Event's times), never a field anyone set
    if (v === undefined || v === null || k === 'apiVersion' || k === 'kind') continue;
    if (hasStatus && k !== 'metadata' && (scope === 'status') !== (k === 'status')) continue;
    if (k === 'metadata') {
      // metadata is tracked in both scopes: a status write of a built-in kind keeps the metadata its strategy allows, owned by the writer
      if (!isObject(v)) continue;
      const meta = Object.entries(v).filter(([mk, mv]) => TRACKED_METADATA.has(mk) && mv !== undefined);
      if (meta.length === 0) continue;
      if (mapNodes) {
        // metadata itself is never a member; its tracked fields are
      }
      for (const [mk, mv] of meta) walk(mv, ['metadata', mk], ['f:metadata', `f:${mk}`], shape, mapNodes, out);
      continue;
    }
    walk(v, [k], [`f:${k}`], shape, mapNodes, out);
  }
  return out;
}

/** The value at a path, and whether it is there. */
export function valueAt(obj: unknown, key: PathKey, options: { readonly defaultedKeys?: boolean } = {}): { found: boolean; value: unknown } {
  let cur: unknown = obj;
  for (const pe of key.split(SEP)) {
    if (pe.startsWith('f:')) {
      if (!isObject(cur) || !Object.hasOwn(cur, pe.slice(2))) return { found: false, value: undefined };
      cur = cur[pe.slice(2)];
    } else if (pe.startsWith('k:')) {
      if (!Array.isArray(cur)) return { found: false, value: undefined };
      const want = parseJson(pe.slice(2)) as Json;
      const items = cur;
      cur = items.find((item) => hasKey(item, want));
      // defaultedKeys: an applied configuration, whose keys were made with the schema's defaults for key fields it
      // leaves out (a container port without `protocol` is keyed `protocol="TCP"`): such an item is the one keyed so
      if (cur === undefined && options.defaultedKeys) cur = items.find((item) => isObject(item) && Object.entries(want).every(([k, v]) => item[k] === undefined || sameJson(item[k], v)));
      if (cur === undefined) return { found: false, value: undefined };
    } else if (pe.startsWith('v:')) {
      if (!Array.isArray(cur)) return { found: false, value: undefined };
      const want = pe.slice(2);
      cur = cur.find((item) => canonical(item) === want);
      if (cur === undefined) return { found: false, value: undefined };
    } else return { found: false, value: undefined };
  }
  return { found: true, value: cur };
}

function removeAt(obj: Json, key: PathKey): void {
  const pes = key.split(SEP);
  let cur: unknown = obj;
  for (let i = 0; i < pes.length - 1; i++) {
    const at = valueAt(cur, pes[i]!);
    if (!at.found) return;
    cur = at.value;
  }
  const last = pes[pes.length - 1]!;
  if (last.startsWith('f:') && isObject(cur)) delete cur[last.slice(2)];
  else if (Array.isArray(cur)) {
    const target = valueAt(cur, last);
    if (target.found) cur.splice(cur.indexOf(target.value), 1);
  }
}

/** The field names along a path (list items' keys left out), as a shape is asked about them. */
function fieldNames(key: PathKey): string[] {
  return key.split(SEP).filter((pe) => pe.startsWith('f:')).map((pe) => pe.slice(2));
}

/** A readable path for conflict messages: `.spec.containers[name="app"].image`. */
export function describePath(key: PathKey): string {
  let out = '';
  for (const pe of key.split(SEP)) {
    if (pe.startsWith('f:')) out += `.${pe.slice(2)}`;
    else if (pe.startsWith('k:')) {
      const k = parseJson(pe.slice(2)) as Json;
      out += `[${Object.entries(k)
        .map(([n, v]) => `${n}=${stringifyJson(v)}`)
        .join(',')}]`;
    } else if (pe.startsWith('v:')) out += `[=${pe.slice(2)}]`;
  }
  return out;
}

/** Proper prefixes of the paths in `set` (nodes that contain other members). */
function prefixes(set: Set<PathKey>): Set<PathKey> {
  const out = new Set<PathKey>();
  for (const p of set) {
    let i = p.lastIndexOf(SEP);
    while (i > 0) {
      const prefix = p.slice(0, i);
      if (out.has(prefix)) break;
      out.add(prefix);
      i = prefix.lastIndexOf(SEP);
    }
  }
  return out;
}

// --- FieldsV1 <-> sets -------------------------------------------------------

export function toFieldsV1(set: Set<PathKey>): Json {
  interface Node {
    member: boolean;
    children: Map<string, Node>;
  }
  const root: Node = { member: false, children: new Map() };
  for (const p of set) {
    let node = root;
    for (const pe of p.split(SEP)) {
      let next = node.children.get(pe);
      if (!next) {
        next = { member: false, children: new Map() };
        node.children.set(pe, next);
      }
      node = next;
    }
    node.member = true;
  }
  const ser = (node: Node): Json => {
    const out: Json = {};
    if (node.member && node.children.size > 0) out['.'] = {};
    for (const [k, child] of [...node.children.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out[k] = ser(child);
    return out;
  };
  return ser(root);
}

export function fromFieldsV1(fields: unknown): Set<PathKey> {
  const out = new Set<PathKey>();
  const rec = (node: unknown, pes: string[]): void => {
    if (!isObject(node)) return;
    const keys = Object.keys(node);
    if (keys.length === 0 && pes.length > 0) {
      out.add(pes.join(SEP));
      return;
    }
    for (const k of keys) {
      if (k === '.') out.add(pes.join(SEP));
      else rec(node[k], [...pes, k]);
    }
  };
  rec(fields, []);
  return out;
}

export function parseManaged(list: unknown): ManagedEntry[] {
  if (!Array.isArray(list)) return [];
  return list.filter(isObject).map((e) => ({
    manager: typeof e['manager'] === 'string' ? e['manager'] : '',
    operation: e['operation'] === 'Apply' ? 'Apply' : 'Update',
    apiVersion: typeof e['apiVersion'] === 'string' ? e['apiVersion'] : '',
    time: typeof e['time'] === 'string' ? e['time'] : '',
    subresource: typeof e['subresource'] === 'string' && e['subresource'] !== '' ? e['subresource'] : undefined,
    set: fromFieldsV1(e['fieldsV1']),
  }));
}

/** Entries in the order the server keeps them: appliers first, then by time, manager, apiVersion, subresource (found by the differential fuzzer). */
function managedOrder(a: ManagedEntry, b: ManagedEntry): number {
  const keys = (e: ManagedEntry): string[] => [e.operation, e.time.slice(0, 19), e.manager, e.apiVersion, e.subresource ?? ''];
  const [x, y] = [keys(a), keys(b)];
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  return 0;
}

export function renderManaged(entries: readonly ManagedEntry[]): Json[] {
  return [...entries]
    .sort(managedOrder)
    .filter((e) => e.set.size > 0)
    .map((e) => ({
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
      ...(e.time === '' ? {} : { time: e.time }),
      fieldsType: 'FieldsV1',
      fieldsV1: toFieldsV1(e.set),
      ...(e.subresource ? { subresource: e.subresource } : {}),
    }));
}

// --- writes ------------------------------------------------------------------

export interface WriteContext {
  readonly manager: string;
  readonly apiVersion: string;
  readonly time: string;
  readonly scope: Scope;
  readonly hasStatus: boolean;
  readonly shape: Shape;
  /** The subresource a main-scope write came through (`scale`), recorded with its fields. */
  readonly subresource?: string;
}

function subresourceOf(ctx: WriteContext): string | undefined {
  if (ctx.subresource !== undefined) return ctx.subresource;
  return ctx.hasStatus && ctx.scope === 'status' ? 'status' : undefined;
}

function entryFor(entries: ManagedEntry[], ctx: WriteContext, operation: 'Apply' | 'Update'): ManagedEntry {
  const sub = subresourceOf(ctx);
  let entry = entries.find((e) => e.manager === ctx.manager && e.operation === operation && e.subresource === sub);
  if (!entry) {
    entry = { manager: ctx.manager, operation, apiVersion: ctx.apiVersion, time: ctx.time, subresource: sub, set: new Set() };
    entries.push(entry);
  }
  return entry;
}

/** Record a non-apply write (create, update, patch) by `ctx.manager`: it owns what it changed; others lose it. */
export function recordUpdate(entries: ManagedEntry[], old: Json | undefined, next: Json, ctx: WriteContext): ManagedEntry[] {
  const before = fieldsOf(old, ctx.shape, ctx.scope, ctx.hasStatus, true);
  const after = fieldsOf(next, ctx.shape, ctx.scope, ctx.hasStatus, true);
  const nodes = prefixes(after);
  const changed = new Set<PathKey>();
  for (const p of after) {
    if (!before.has(p)) changed.add(p);
    else if (!nodes.has(p) && !sameJson(valueAt(old, p).value, valueAt(next, p).value)) changed.add(p);
  }
  const removed = new Set<PathKey>();
  for (const p of before) if (!after.has(p)) removed.add(p);
  if (changed.size === 0 && removed.size === 0) return entries;
  const out = entries.map((e) => ({ ...e, set: new Set(e.set) }));
  for (const e of out) {
    for (const p of removed) e.set.delete(p);
    for (const p of changed) e.set.delete(p);
  }
  const mine = entryFor(out, ctx, 'Update');
  for (const p of changed) mine.set.add(p);
  mine.time = ctx.time;
  mine.apiVersion = ctx.apiVersion;
  return out.filter((e) => e.set.size > 0);
}

export interface ApplyConflict {
  readonly manager: string;
  readonly operation: 'Apply' | 'Update';
  readonly subresource: string | undefined;
  readonly apiVersion: string;
  readonly path: string;
  /** The path as a field set holds it (the order conflicts are listed in). */
  readonly key: PathKey;
}

export type ApplyResult = { readonly ok: true; readonly object: Json; readonly entries: ManagedEntry[] } | { readonly ok: false; readonly conflicts: readonly ApplyConflict[] };

/**
 * The order of a merged associative list, as structured-merge-diff's merge
 * walks it: items only the live list has stay where they were, items the
 * applied list has come in its order (shared ones where the applied list
 * puts them). Found by the differential fuzzer.
 */
export function mergedOrder(live: readonly string[], applied: readonly string[]): string[] {
  const inLive = new Set(live);
  const inApplied = new Set(applied);
  const shared = applied.filter((k) => inLive.has(k));
  let s = 0;
  let nextShared = shared[s++];
  const out: string[] = [];
  let l = 0;
  let r = 0;
  while (l < live.length || r < applied.length) {
    if (l < live.length && r < applied.length) {
      const k = live[l]!;
      if (k === applied[r]) {
        out.push(k);
        l++;
        r++;
        nextShared = shared[s++];
        continue;
      }
      if (inApplied.has(k) && nextShared !== undefined && nextShared !== k) {
        l++;
        continue;
      }
    }
    if (l < live.length && !inApplied.has(live[l]!)) {
      out.push(live[l++]!);
      continue;
    }
    if (r < applied.length) {
      const k = applied[r++]!;
      out.push(k);
      if (nextShared === k) nextShared = shared[s++];
      continue;
    }
    l++; // a shared item already taken from the applied list
  }
  return out;
}

function mergeApplied(live: unknown, config: unknown, names: string[], shape: Shape): unknown {
  if (config === null) return undefined;
  if (Array.isArray(config)) {
    const rule = shape.list(names);
    if (rule.type === 'atomic' || !Array.isArray(live)) return config;
    const keyOf = (item: unknown): string => (rule.type === 'set' ? canonical(item) : keyElement(item, rule.keys, rule.keyDefaults));
    const liveItems = new Map((live as unknown[]).map((x) => [keyOf(x), x] as const));
    const appliedItems = new Map((config as unknown[]).map((x) => [keyOf(x), x] as const));
    return mergedOrder([...liveItems.keys()], [...appliedItems.keys()]).map((k): unknown => {
      if (!appliedItems.has(k)) return liveItems.get(k);
      if (!liveItems.has(k) || rule.type === 'set') return appliedItems.get(k);
      // an atomic struct (an owner reference): the applied item replaces the live one whole (found by the differential fuzzer)
      if (shape.atomicItems(names)) return isObject(appliedItems.get(k)) ? stripNulls(appliedItems.get(k) as Json) : appliedItems.get(k);
      return mergeApplied(liveItems.get(k), appliedItems.get(k), names, shape);
    });
  }
  if (isObject(config)) {
    if (!isObject(live) || (names.length > 0 && shape.atomicMap(names))) return stripNulls(config);
    const out: Json = { ...live };
    for (const [k, v] of Object.entries(config)) {
      const merged = mergeApplied(out[k], v, [...names, k], shape);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    }
    return out;
  }
  return config;
}

function stripNulls(obj: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v === null) continue;
    out[k] = isObject(v) ? stripNulls(v) : v;
  }
  return out;
}

/**
 * Server-side apply of `config` over `live` (undefined: a create) by
 * `ctx.manager`. The caller has already dropped what the scope ignores
 * from `config` and checked names and kinds.
 */
export function apply(entries: readonly ManagedEntry[], live: Json | undefined, config: Json, ctx: WriteContext, force: boolean): ApplyResult {
  const configSet = fieldsOf(config, ctx.shape, ctx.scope, ctx.hasStatus, false);
  const sub = subresourceOf(ctx);
  const isMine = (e: ManagedEntry): boolean => e.manager === ctx.manager && e.operation === 'Apply' && e.subresource === sub;
  const out = entries.map((e) => ({ ...e, set: new Set(e.set) }));
  const conflicts: ApplyConflict[] = [];
  const taken: [ManagedEntry, PathKey][] = [];
  // what the applied fields sit in: a map or list the apply puts where the object holds another kind of value (a
  // scalar in an int-or-string field) changes that node itself (structured-merge-diff's comparison marks it modified;
  // found by the schema-change fuzzer, seed 908583713)
  const containers = prefixes(configSet);
  const kindOf = (v: unknown): string => (Array.isArray(v) ? 'list' : isObject(v) ? 'map' : 'scalar');
  for (const e of out) {
    if (isMine(e)) continue;
    for (const p of e.set) {
      if (!containers.has(p) || configSet.has(p)) continue;
      const have = valueAt(live, p);
      const want = valueAt(config, p, { defaultedKeys: true });
      if (!have.found || have.value === null || !want.found || kindOf(have.value) === kindOf(want.value)) continue;
      conflicts.push({ manager: e.manager, operation: e.operation, subresource: e.subresource, apiVersion: e.apiVersion, path: describePath(p), key: p });
      taken.push([e, p]);
    }
    for (const p of configSet) {
      if (!e.set.has(p)) continue;
      const last = p.slice(p.lastIndexOf(SEP) + 1);
      // a key or value node is its item's name, equal on both sides; but an owner reference is atomic, owned (and in
      // conflict) whole, and a key the object's list holds twice cannot be compared (structured-merge-diff's
      // duplicates: measured on kube-apiserver v1.37.2, an env variable an update stored twice)
      const repeated = repeatedIn(live, p);
      if (((last.startsWith('k:') && !ctx.shape.atomicItems(fieldNames(p))) || last.startsWith('v:')) && !repeated) continue;
      const want = valueAt(config, p, { defaultedKeys: true });
      const have = valueAt(live, p);
      if (have.found && sameJson(want.value, have.value) && !repeated) continue;
      // an empty map applied over a map the object holds merges into it and changes nothing there; the server conflicts
      // only on what the apply changes (found by the differential fuzzer: a Secret's `data: {}` beside its stringData)
      if (isObject(want.value) && Object.keys(want.value).length === 0 && have.found && isObject(have.value) && !ctx.shape.atomicMap(fieldNames(p))) continue;
      conflicts.push({ manager: e.manager, operation: e.operation, subresource: e.subresource, apiVersion: e.apiVersion, path: describePath(p), key: p });
      taken.push([e, p]);
    }
  }
  if (conflicts.length > 0 && !force) return { ok: false, conflicts };
  for (const [e, p] of taken) e.set.delete(p);

  const mine = out.find(isMine);
  const previously = mine?.set ?? new Set<PathKey>();
  const othersOwn = new Set<PathKey>();
  for (const e of out) if (!isMine(e)) for (const p of e.set) othersOwn.add(p);
  let object: Json = structuredClone(live ?? {});
  // Shallowest first: a list item removed takes its fields with it (its key fields must still be there to find it).
  const drop = [...previously].filter((p) => !configSet.has(p) && !othersOwn.has(p)).sort((a, b) => a.split(SEP).length - b.split(SEP).length);
  for (const p of drop) removeAt(object, p);
  object = mergeApplied(object, config, [], ctx.shape) as Json;

  const entry = mine ?? { manager: ctx.manager, operation: 'Apply' as const, apiVersion: ctx.apiVersion, time: ctx.time, subresource: sub, set: new Set<PathKey>() };
  if (!mine) out.push(entry);
  entry.set = configSet;
  // the time of an apply that changed the object; one that changed nothing keeps the entry's time, or has none
  // when the entry is new (the server's managed-fields updater; found by the owner-reference conformance case)
  entry.time = live === undefined || !sameJson(object, live) ? ctx.time : (mine?.time ?? '');
  entry.apiVersion = ctx.apiVersion;
  return { ok: true, object, entries: out.filter((e) => e.set.size > 0 || e === entry) };
}

/** Whether the list holding the item `key` names (its last element a `k:`) holds that key more than once. */
function repeatedIn(obj: Json | undefined, key: PathKey): boolean {
  const cut = key.lastIndexOf(SEP);
  const last = key.slice(cut + 1);
  if (!last.startsWith('k:') || cut < 0) return false;
  const list = valueAt(obj, key.slice(0, cut)).value;
  if (!Array.isArray(list)) return false;
  const want = parseJson(last.slice(2)) as Json;
  return list.filter((item) => hasKey(item, want)).length > 1;
}

/** Whether a map list's item holds the key fields `want` has, at their values. */
function hasKey(item: unknown, want: Json): boolean {
  return isObject(item) && Object.entries(want).every(([k, v]) => sameJson(item[k], v));
}

/** The API server's message for apply conflicts. */
/** Who a conflict is with, as the server names it: an updater with the apiVersion it wrote (found by the differential fuzzer), an applier without. */
export function conflictWith(c: ApplyConflict): string {
  return `"${c.manager}"${c.subresource ? ` with subresource "${c.subresource}"` : ''}${c.operation === 'Update' ? ` using ${c.apiVersion}` : ''}`;
}

/** The server's conflict message; conflicts in path order. */
export function conflictMessage(unsorted: readonly ApplyConflict[]): string {
  const conflicts = sortConflicts(unsorted);
  const who = conflictWith;
  const n = conflicts.length;
  if (n === 1) return `Apply failed with 1 conflict: conflict with ${who(conflicts[0]!)}: ${conflicts[0]!.path}`;
  // grouped by who, each a list even of one path (found by the owner-reference conformance case), in the byte order
  // of the managers' identifiers (Go's sort.Strings over the JSON of manager, operation, an updater's apiVersion and
  // the subresource: an updater through a subresource before the same updater without; found by the differential
  // fuzzer, random seed 1195077979)
  const identifier = (c: ApplyConflict): string =>
    JSON.stringify({ manager: c.manager, operation: c.operation, ...(c.operation === 'Update' ? { apiVersion: c.apiVersion } : {}), ...(c.subresource ? { subresource: c.subresource } : {}) });
  const groups = new Map<string, { who: string; paths: string[] }>();
  for (const c of conflicts) {
    const group = groups.get(identifier(c)) ?? { who: who(c), paths: [] };
    group.paths.push(c.path);
    groups.set(identifier(c), group);
  }
  const parts = [...groups.keys()].sort().map((id) => `conflicts with ${groups.get(id)!.who}:\n${groups.get(id)!.paths.map((p) => `- ${p}`).join('\n')}`);
  return `Apply failed with ${n} conflicts: ${parts.join('\n')}`;
}

/** Path elements as structured-merge-diff orders them: field names, then keys, then values, then indexes; within one sort by text. */
function comparePathElements(a: string, b: string): number {
  const rank = (pe: string): number => ({ f: 0, k: 1, v: 2, i: 3 })[pe[0] as 'f'] ?? 4;
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * Conflicts in the order the server lists them: a field set's iteration
 * order, which at each level gives the leaves (sorted) before the subtrees
 * (sorted): `.spec.replicas` before `.spec.ports[name="http"].port`
 * (found by the differential fuzzer, random seed 2066434769).
 */
export function sortConflicts(conflicts: readonly ApplyConflict[]): ApplyConflict[] {
  const order = (x: ApplyConflict, y: ApplyConflict): number => {
    const a = x.key.split(SEP);
    const b = y.key.split(SEP);
    for (let i = 0; i < a.length && i < b.length; i++) {
      const aLeaf = i === a.length - 1;
      const bLeaf = i === b.length - 1;
      if (aLeaf !== bLeaf) return aLeaf ? -1 : 1;
      const c = comparePathElements(a[i]!, b[i]!);
      if (c !== 0) return c;
    }
    return x.manager < y.manager ? -1 : x.manager > y.manager ? 1 : 0;
  };
  return [...conflicts].sort(order);
}
