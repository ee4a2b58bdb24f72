/**
 * Shard selectors as the API server reads them (KEP-5866, sharded list and
 * watch, feature gate `ShardedListAndWatch`): the FNV-1a 64-bit hash of an
 * object's uid or namespace, hash ranges, and the `shardSelector` query
 * parameter's syntax,
 * `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || ...`.
 * The one implementation of kubeloop: the client renders it, the cache
 * filters with it when the server does not, the fake API server parses it.
 */
import { ClientError } from './errors.js';

/** The fields the API server can shard on. */
export type ShardField = 'object.metadata.uid' | 'object.metadata.namespace';

/** Half-open hash range `[start, end)`; `0 <= start < end <= 2^64`. */
export interface ShardRange {
  readonly start: bigint;
  readonly end: bigint;
}

/** A parsed shard selector: objects whose `field` hashes into one of `ranges`. */
export interface ShardSelector {
  readonly field: ShardField;
  readonly ranges: readonly ShardRange[];
}

/** 2^64: the end of the hash space (the last range may end there). */
export const HASH_SPACE_END = 1n << 64n;

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const encoder = new TextEncoder();

/**
 * FNV-1a 64-bit of a string's UTF-8 bytes, as the API server hashes the shard field.
 *
 * @example
 * ```ts
 * fnv1a64(''); // 0xcbf29ce484222325n
 * ```
 */
export function fnv1a64(text: string): bigint {
  let h = FNV_OFFSET;
  for (const byte of encoder.encode(text)) h = BigInt.asUintN(64, (h ^ BigInt(byte)) * FNV_PRIME);
  return h;
}

/** The value an object is sharded by: its uid or namespace (`''` when it has none). */
export function shardKey(object: { readonly metadata?: { readonly uid?: string; readonly namespace?: string } }, field: ShardField): string {
  return (field === 'object.metadata.uid' ? object.metadata?.uid : object.metadata?.namespace) ?? '';
}

/** Whether a hash falls in one of the ranges. */
export function inShardRanges(hash: bigint, ranges: readonly ShardRange[]): boolean {
  for (const r of ranges) if (hash >= r.start && hash < r.end) return true;
  return false;
}

/**
 * Whether an object falls in a shard selector.
 *
 * @example
 * ```ts
 * matchesShard(cm, { field: 'object.metadata.uid', ranges: [{ start: 0n, end: 1n << 63n }] });
 * ```
 */
export function matchesShard(object: { readonly metadata?: { readonly uid?: string; readonly namespace?: string } }, selector: ShardSelector): boolean {
  return inShardRanges(fnv1a64(shardKey(object, selector.field)), selector.ranges);
}

function hex(n: bigint): string {
  return `0x${n.toString(16).padStart(16, '0')}`;
}

function checkRange(r: ShardRange): void {
  if (typeof r.start !== 'bigint' || typeof r.end !== 'bigint' || r.start < 0n || r.end > HASH_SPACE_END || r.start >= r.end) {
    throw new ClientError('InvalidRequest', `shard range [${String(r.start)}, ${String(r.end)}) must have 0 <= start < end <= 2^64 (bigints)`);
  }
}

/**
 * The `shardSelector` query parameter for a selector: bounds as 0x and 16
 * hex digits (the end of the hash space as `0x10000000000000000`), ranges
 * joined with `||`. Throws ClientError `InvalidRequest` for an empty or
 * malformed selector: the server has no syntax for "no objects".
 *
 * @example
 * ```ts
 * renderShardSelector({ field: 'object.metadata.uid', ranges: [{ start: 0n, end: 1n << 63n }] });
 * // "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
 * ```
 */
export function renderShardSelector(selector: ShardSelector): string {
  if (selector.field !== 'object.metadata.uid' && selector.field !== 'object.metadata.namespace') {
    throw new ClientError('InvalidRequest', `shard field ${JSON.stringify(selector.field)} is not object.metadata.uid or object.metadata.namespace`);
  }
  if (selector.ranges.length === 0) throw new ClientError('InvalidRequest', 'a shard selector needs at least one range (the server cannot select no objects)');
  return selector.ranges
    .map((r) => {
      checkRange(r);
      return `shardRange(${selector.field}, '${hex(r.start)}', '${hex(r.end)}')`;
    })
    .join(' || ');
}

// Bounds as the server reads them: lower-case hex only (it refuses "0xC0..."), quoted with ' or ".
const TERM = /^shardRange\(\s*(object\.metadata\.uid|object\.metadata\.namespace)\s*,\s*(['"])(0x[0-9a-f]{16,17})\2\s*,\s*(['"])(0x[0-9a-f]{16,17})\4\s*\)$/;

/**
 * Parse a `shardSelector` parameter (what {@link renderShardSelector}
 * writes). Every term must name the same field. Throws ClientError
 * `InvalidRequest` naming the term it cannot read.
 *
 * @example
 * ```ts
 * parseShardSelector("shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')");
 * ```
 */
export function parseShardSelector(text: string): ShardSelector {
  let field: ShardField | undefined;
  const ranges: ShardRange[] = [];
  for (const raw of text.split('||')) {
    const term = raw.trim();
    const m = TERM.exec(term);
    if (!m) {
      throw new ClientError(
        'InvalidRequest',
        `shard selector term ${JSON.stringify(term.slice(0, 120))} is not shardRange(object.metadata.uid|object.metadata.namespace, '0x<16 lower-case hex digits>', '0x<16 lower-case hex digits>')`,
      );
    }
    const f = m[1] as ShardField;
    if (field !== undefined && f !== field) throw new ClientError('InvalidRequest', `shard selector mixes fields ${field} and ${f}`);
    field = f;
    const [start, end] = [m[3]!, m[5]!];
    const range = { start: BigInt(start), end: BigInt(end) };
    if ((start.length === 19 && range.start !== HASH_SPACE_END) || (end.length === 19 && range.end !== HASH_SPACE_END)) {
      throw new ClientError('InvalidRequest', `shard selector term ${JSON.stringify(term)}: only the end of the hash space (0x10000000000000000) has 17 digits`);
    }
    checkRange(range);
    ranges.push(range);
  }
  return { field: field!, ranges };
}

/**
 * The shard selector an option names: a parsed one as given, a string parsed.
 * `undefined` stays undefined.
 */
export function toShardSelector(selector: ShardSelector | string | undefined): ShardSelector | undefined {
  return typeof selector === 'string' ? parseShardSelector(selector) : selector;
}
