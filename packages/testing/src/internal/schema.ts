/**
 * What the fake knows of an object's shape where merging needs it: how each
 * list merges (by key, as a set, or whole) and which maps are atomic, for
 * server-side apply (`x-kubernetes-list-type`, `-list-map-keys`,
 * `-map-type`) and for strategic merge patch (`x-kubernetes-patch-strategy`,
 * `-patch-merge-key`). Built-in kinds read them from the snapshot of
 * kube-apiserver's OpenAPI documents; custom kinds from their CRD's schema,
 * and otherwise lists are atomic (as on a real server).
 */
import { kindSchema, nodeAt, resolve } from './openapi/model.js';
import type { Resolved, SchemaNode } from './openapi/model.js';

export type ListRule =
  | {
      readonly type: 'map';
      readonly keys: readonly string[];
      readonly patchKey: string;
      /** Defaults of key fields (a port's `protocol: TCP`): server-side apply fills them in an applied item that leaves them out. */
      readonly keyDefaults?: Readonly<Record<string, unknown>>;
    }
  | { readonly type: 'set' }
  | { readonly type: 'atomic' };

export interface Shape {
  /** How the list at `path` (field names from the object root, list items skipped) merges in server-side apply. */
  list(path: readonly string[]): ListRule;
  /** Whether the map or struct at `path` is replaced whole by server-side apply. */
  atomicMap(path: readonly string[]): boolean;
  /** Whether the items of the list at `path` are atomic structs (an owner reference, a LocalObjectReference): owned and replaced whole. */
  atomicItems(path: readonly string[]): boolean;
  /** How the list at `path` merges in a strategic merge patch. */
  patchList(path: readonly string[]): ListRule;
  /** Whether a strategic merge patch replaces the map or struct at `path` whole. */
  patchReplace(path: readonly string[]): boolean;
}

const ATOMIC: ListRule = { type: 'atomic' };
const SET: ListRule = { type: 'set' };
const byKey = (...keys: string[]): ListRule => ({ type: 'map', keys, patchKey: keys[0]! });

function metadataRule(path: readonly string[]): ListRule | undefined {
  if (path.length === 2 && path[0] === 'metadata') {
    if (path[1] === 'finalizers') return SET;
    if (path[1] === 'ownerReferences') return byKey('uid');
  }
  return undefined;
}

/** The raw property node at `path` (its own extensions, before its `$ref` is followed) and the resolved node. */
function nodesAt(root: Resolved | undefined, path: readonly string[]): { raw: SchemaNode | undefined; resolved: Resolved | undefined } {
  if (path.length === 0) return { raw: root?.node, resolved: root };
  const parent = nodeAt(root, path.slice(0, -1));
  let container = parent;
  if (container?.node.type === 'array') container = resolve(container.node.items);
  const name = path[path.length - 1]!;
  const props = container?.node.properties;
  const raw = props && Object.hasOwn(props, name) ? props[name] : typeof container?.node.additionalProperties === 'object' ? container.node.additionalProperties : undefined;
  return { raw, resolved: resolve(raw) };
}

function extension<K extends keyof SchemaNode>(nodes: { raw: SchemaNode | undefined; resolved: Resolved | undefined }, key: K): SchemaNode[K] | undefined {
  return nodes.raw?.[key] ?? nodes.resolved?.node[key];
}

/** The shape of a built-in kind, from the OpenAPI snapshot (every list atomic when the snapshot lacks the kind). */
export function builtinShape(apiVersion: string, kind: string): Shape {
  const root = kindSchema(apiVersion, kind);
  return {
    list(path) {
      const meta = metadataRule(path);
      if (meta) return meta;
      const nodes = nodesAt(root, path);
      const type = extension(nodes, 'x-kubernetes-list-type');
      if (type === 'set') return SET;
      const keys = extension(nodes, 'x-kubernetes-list-map-keys');
      if (type === 'map' && keys && keys.length > 0) {
        const itemProps = resolve(nodes.resolved?.node.items)?.node.properties ?? {};
        const keyDefaults: Record<string, unknown> = {};
        for (const k of keys) {
          const d = itemProps[k]?.default;
          if (d !== undefined && d !== '' && d !== 0) keyDefaults[k] = d;
        }
        return { type: 'map', keys, patchKey: extension(nodes, 'x-kubernetes-patch-merge-key') ?? keys[0]!, keyDefaults };
      }
      return ATOMIC;
    },
    atomicMap(path) {
      return extension(nodesAt(root, path), 'x-kubernetes-map-type') === 'atomic';
    },
    atomicItems(path) {
      if (path.length === 2 && path[0] === 'metadata' && path[1] === 'ownerReferences') return true;
      return resolve(nodesAt(root, path).resolved?.node.items)?.node['x-kubernetes-map-type'] === 'atomic';
    },
    patchList(path) {
      const meta = metadataRule(path);
      if (meta) return meta;
      const nodes = nodesAt(root, path);
      const strategy = (extension(nodes, 'x-kubernetes-patch-strategy') ?? '').split(',');
      if (!strategy.includes('merge')) return ATOMIC;
      const key = extension(nodes, 'x-kubernetes-patch-merge-key');
      if (key === undefined) return SET;
      return { type: 'map', keys: extension(nodes, 'x-kubernetes-list-map-keys') ?? [key], patchKey: key };
    },
    patchReplace(path) {
      return (extension(nodesAt(root, path), 'x-kubernetes-patch-strategy') ?? '').split(',').includes('replace');
    },
  };
}

type Json = Record<string, unknown>;

function child(schema: Json | undefined, name: string): Json | undefined {
  if (!schema) return undefined;
  const props = schema['properties'] as Json | undefined;
  if (props && typeof props[name] === 'object') return props[name] as Json;
  const extra = schema['additionalProperties'];
  if (typeof extra === 'object' && extra !== null) return extra as Json;
  return undefined;
}

/** The node at `path`, stepping through array `items` where the schema has them. */
function at(root: Json | undefined, path: readonly string[]): Json | undefined {
  let cur = root;
  for (const name of path) {
    if (cur && cur['type'] === 'array') cur = cur['items'] as Json | undefined;
    cur = child(cur, name);
    if (!cur) return undefined;
  }
  return cur;
}

/** The shape of a custom kind from its CRD's openAPIV3Schema (undefined: no schema). */
export function schemaShape(schema: Json | undefined): Shape {
  return {
    list(path) {
      const meta = metadataRule(path);
      if (meta) return meta;
      const node = at(schema, path);
      const type = node?.['x-kubernetes-list-type'];
      if (type === 'set') return SET;
      if (type === 'map') {
        const keys = Array.isArray(node?.['x-kubernetes-list-map-keys']) ? (node['x-kubernetes-list-map-keys'] as string[]) : [];
        const itemProps = ((node?.['items'] as Json | undefined)?.['properties'] ?? {}) as Record<string, Json | undefined>;
        const keyDefaults: Record<string, unknown> = {};
        for (const k of keys) if (itemProps[k]?.['default'] !== undefined) keyDefaults[k] = itemProps[k]['default'];
        if (keys.length > 0) return { ...byKey(...keys), keyDefaults };
      }
      return ATOMIC;
    },
    atomicMap(path) {
      const node = at(schema, path);
      return node?.['x-kubernetes-map-type'] === 'atomic';
    },
    atomicItems(path) {
      if (path.length === 2 && path[0] === 'metadata' && path[1] === 'ownerReferences') return true;
      const items = at(schema, path)?.['items'];
      return typeof items === 'object' && items !== null && (items as Json)['x-kubernetes-map-type'] === 'atomic';
    },
    patchList(path) {
      return this.list(path);
    },
    patchReplace(path) {
      return this.atomicMap(path);
    },
  };
}
