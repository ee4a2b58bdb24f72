/**
 * The JSON patch (RFC 6902) from one object to another, as a defaulter's
 * answer, with int64 values (`bigint`s) kept exact. fast-json-patch copies
 * added and replaced subtrees through `JSON.stringify`, which throws on a
 * bigint: only then are the bigints swapped for marker strings around the
 * comparison and swapped back in the operations, so the usual case pays
 * nothing.
 */
import fastJsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';

const MARK = '\u0000kubeloop-int64:';

function hide(value: unknown): unknown {
  if (typeof value === 'bigint') return `${MARK}${value.toString()}`;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(hide);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = hide(v);
  return out;
}

function reveal(value: unknown): unknown {
  if (typeof value === 'string' && value.startsWith(MARK)) return BigInt(value.slice(MARK.length));
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(reveal);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = reveal(v);
  return out;
}

/** The operations that turn `before` into `after`; bigints in either come out as bigints. */
export function jsonPatchBetween(before: object, after: object): Operation[] {
  try {
    return fastJsonPatch.compare(before, after);
  } catch (err) {
    if (!(err instanceof TypeError) || !err.message.includes('BigInt')) throw err;
  }
  return fastJsonPatch.compare(hide(before) as object, hide(after) as object).map((op) => ('value' in op ? { ...op, value: reveal(op.value) } : op));
}
