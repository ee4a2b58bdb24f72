/** Helpers shared by the CLI's tests. */
import type { CliIO } from '../src/index.js';

/** A CliIO that keeps what a command printed: `out` (stdout lines) and `err` (stderr lines). */
export function io(): { out: string[]; err: string[]; io: CliIO } {
  const o: string[] = [];
  const e: string[] = [];
  return { out: o, err: e, io: { out: (t) => o.push(t), err: (t) => e.push(t) } };
}
