/**
 * What the fake knows of an object's shape where merging needs it: how each
 * list merges (by key, as a set, or whole) and which structs are atomic.
 * Built-in kinds use the merge keys of their Go types for the common lists;
 * custom kinds read `x-kubernetes-list-type` / `-list-map-keys` /
 * `-map-type` from their CRD's schema, and otherwise lists are atomic (as on
 * a real server).
 */

export type ListRule =
  | { readonly type: 'map'; readonly keys: readonly string[]; readonly patchKey: string }
  | { readonly type: 'set' }
  | { readonly type: 'atomic' };

export interface Shape {
  /** How the list at `path` (field names from the object root, list items skipped) merges. */
  list(path: readonly string[]): ListRule;
  /** Whether the map or struct at `path` is replaced whole. */
  atomicMap(path: readonly string[]): boolean;
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

/** The shape of built-in kinds, by field name and context. */
export function builtinShape(kind: string): Shape {
  return {
    list(path) {
      const meta = metadataRule(path);
      if (meta) return meta;
      const last = path[path.length - 1];
      const parent = path[path.length - 2];
      switch (last) {
        case 'containers':
        case 'initContainers':
        case 'ephemeralContainers':
        case 'imagePullSecrets':
        case 'volumes':
        case 'env':
        case 'resourceClaims':
        case 'schedulingGates':
          return byKey('name');
        case 'volumeMounts':
          return byKey('mountPath');
        case 'volumeDevices':
          return byKey('devicePath');
        case 'conditions':
          return byKey('type');
        case 'hostAliases':
          return byKey('ip');
        case 'topologySpreadConstraints':
          return byKey('topologyKey', 'whenUnsatisfiable');
        case 'ports':
          if (parent === 'containers' || parent === 'initContainers' || parent === 'ephemeralContainers') return byKey('containerPort', 'protocol');
          if (kind === 'Service' && path.length === 2 && path[0] === 'spec') return byKey('port', 'protocol');
          return ATOMIC;
        default:
          return ATOMIC;
      }
    },
    atomicMap(path) {
      const last = path[path.length - 1];
      return last === 'selector' && path.length === 2 && path[0] === 'spec' && kind !== 'Service';
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
        if (keys.length > 0) return byKey(...keys);
      }
      return ATOMIC;
    },
    atomicMap(path) {
      const node = at(schema, path);
      return node?.['x-kubernetes-map-type'] === 'atomic';
    },
  };
}
