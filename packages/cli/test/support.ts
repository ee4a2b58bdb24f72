/** Helpers shared by the CLI's tests. */
import { isCliError } from '../src/index.js';
import type { CliIO } from '../src/index.js';

/** A CliIO that keeps what a command printed: `out` (stdout lines) and `err` (stderr lines). */
export function io(): { out: string[]; err: string[]; io: CliIO } {
  const o: string[] = [];
  const e: string[] = [];
  return { out: o, err: e, io: { out: (t) => o.push(t), err: (t) => e.push(t) } };
}

/** What a rejected CLI call says, as `Reason: message`; fails when it resolves or rejects with something else. */
export async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isCliError(err)) return `${err.reason}: ${err.message}`;
    throw err;
  }
  throw new Error('expected a CliError');
}
