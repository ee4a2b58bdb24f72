/** Ordering the API server's resourceVersions. */

/**
 * Order two resourceVersions: negative, 0 or positive as `a` is older, the
 * same or newer. The API server's are decimal integers that only grow
 * (etcd revisions; KEP-4988 made comparing them supported); `''` is older
 * than any, and anything else compares as NaN (cannot tell).
 *
 * @example
 * ```ts
 * compareResourceVersions('99', '100') < 0; // true: 99 is older
 * ```
 */
export function compareResourceVersions(a: string, b: string): number {
  if (a === b) return 0;
  if (a === '') return -1;
  if (b === '') return 1;
  if (!/^[0-9]+$/.test(a) || !/^[0-9]+$/.test(b)) return Number.NaN;
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : 1;
}
