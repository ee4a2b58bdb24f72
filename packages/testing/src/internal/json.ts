/**
 * JSON objects as the fake stores them, and the small helpers every handler
 * uses on them (the metadata block, the storage key, values in messages,
 * equality as the API server sees it).
 */
import { stringify } from 'safe-stable-stringify';
import { stringifyJson } from '@kubeloop/scheme';

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object's metadata block, made when missing. */
export function meta(obj: Json): Json {
  if (!isObject(obj['metadata'])) obj['metadata'] = {};
  return obj['metadata'] as Json;
}

/** The storage key of an object: `namespace/name` (`/name` when cluster-scoped). */
export function objKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

/** A value as shown in a message. */
export function show(value: unknown): string {
  return typeof value === 'string' ? value : stringifyJson(value) ?? String(value);
}

/**
 * A value as JSON with object keys sorted (safe-stable-stringify): equal
 * for values the API server sees as equal, whatever order their keys were
 * written in (a JavaScript spread reorders them; the server decodes into Go
 * structs and maps, where order means nothing).
 */
export function canonical(value: unknown): string {
  return stringify(value) ?? 'undefined';
}

/** Equality as the API server sees it: key order ignored, undefined members absent. */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}
