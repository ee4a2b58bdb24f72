/**
 * What the API server does to a custom resource before validating it, on a
 * structural schema: prune fields the schema does not declare (reporting
 * each as `unknown field "spec.x"`), drop `null`s of fields that are not
 * nullable (or replace them by the default), and apply defaults. Also the
 * checks JSON Schema has no keyword for: duplicates in list sets and list
 * maps, and the `apiVersion` / `kind` of embedded resources.
 */
import { stringifyJson } from '../json.js';
import type { FieldError } from '../errors.js';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function child(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

/** Prunes unknown fields in place; returns their paths. `root` keeps apiVersion, kind and metadata. */
export function prune(value: unknown, schema: Json, path: string, root: boolean, unknown: string[]): void {
  if (Array.isArray(value)) {
    // a list where the schema declares none (a string given a list): the server prunes every field of its objects (found by the schema-change fuzzer)
    const items = isObject(schema['items']) ? schema['items'] : schema['x-kubernetes-preserve-unknown-fields'] === true ? undefined : {};
    if (items) value.forEach((item, i) => prune(item, items, `${path}[${i}]`, false, unknown));
    return;
  }
  if (!isObject(value)) return;
  const embedded = root || schema['x-kubernetes-embedded-resource'] === true;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  const props = isObject(schema['properties']) ? schema['properties'] : undefined;
  const additional = schema['additionalProperties'];
  for (const key of Object.keys(value)) {
    if (embedded && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) {
      if (key === 'metadata' || props?.[key] === undefined) continue;
    }
    const p = props?.[key];
    if (isObject(p)) prune(value[key], p, child(path, key), false, unknown);
    else if (isObject(additional)) prune(value[key], additional, child(path, key), false, unknown);
    else if (additional === true || preserve) continue;
    else {
      unknown.push(child(path, key));
      delete value[key];
    }
  }
}

/** Drops nulls of non-nullable fields (or puts their default there) and applies defaults, in place. */
export function defaults(value: unknown, schema: Json): void {
  if (Array.isArray(value)) {
    if (isObject(schema['items'])) for (const item of value) defaults(item, schema['items']);
    return;
  }
  if (!isObject(value)) return;
  const props = isObject(schema['properties']) ? schema['properties'] : undefined;
  const additional = isObject(schema['additionalProperties']) ? schema['additionalProperties'] : undefined;
  for (const key of Object.keys(value)) {
    const p = props?.[key] ?? additional;
    if (!isObject(p)) continue;
    if (value[key] === null && p['nullable'] !== true) {
      if (p['default'] !== undefined) value[key] = structuredClone(p['default'] as unknown);
      else delete value[key];
    }
  }
  if (props) {
    for (const [key, p] of Object.entries(props)) {
      if (isObject(p) && p['default'] !== undefined && !(key in value)) value[key] = structuredClone(p['default'] as unknown);
    }
  }
  for (const key of Object.keys(value)) {
    const p = props?.[key] ?? additional;
    if (isObject(p)) defaults(value[key], p);
  }
}

function show(value: unknown): string {
  return stringifyJson(value) ?? 'null';
}

/** Duplicate items of list sets and list maps, and embedded resources without apiVersion/kind. */
export function kubernetesChecks(value: unknown, schema: Json, path: string, errors: FieldError[]): void {
  if (Array.isArray(value)) {
    const listType = schema['x-kubernetes-list-type'];
    if (listType === 'set' || listType === 'map') {
      const keys = Array.isArray(schema['x-kubernetes-list-map-keys']) ? (schema['x-kubernetes-list-map-keys'] as string[]) : [];
      const seen = new Set<string>();
      value.forEach((item: unknown, i) => {
        const identity: unknown = listType === 'map' && isObject(item) ? Object.fromEntries(keys.filter((k) => k in item).map((k) => [k, item[k]])) : item;
        const id = show(identity);
        if (seen.has(id)) {
          const field = `${path}[${i}]`;
          errors.push({ type: 'FieldValueDuplicate', field, badValue: identity, detail: '', message: `${field}: Duplicate value: ${show(identity)}` });
        }
        seen.add(id);
      });
    }
    if (isObject(schema['items'])) value.forEach((item, i) => kubernetesChecks(item, schema['items'] as Json, `${path}[${i}]`, errors));
    return;
  }
  if (!isObject(value)) return;
  if (schema['x-kubernetes-embedded-resource'] === true) {
    for (const k of ['apiVersion', 'kind']) {
      if (typeof value[k] !== 'string' || value[k] === '') {
        const field = child(path, k);
        errors.push({ type: 'FieldValueRequired', field, detail: '', message: `${field}: Required value` });
      }
    }
  }
  const props = isObject(schema['properties']) ? schema['properties'] : undefined;
  const additional = isObject(schema['additionalProperties']) ? schema['additionalProperties'] : undefined;
  for (const key of Object.keys(value)) {
    const p = props?.[key] ?? additional;
    if (isObject(p)) kubernetesChecks(value[key], p, child(path, key), errors);
  }
}
