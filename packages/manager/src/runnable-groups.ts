/**
 * Runnable groups: what the manager runs, in groups started and stopped
 * together (controller-runtime's `runnable_group.go`): servers, caches
 * (controllers' sources on a warm standby), others, leader-only. A group
 * runs in terms: `start(signal)` launches every runnable it holds under that
 * signal, and a runnable added during a term joins it at once. The
 * leader-only group has one term per leadership term; the others one for the
 * manager's life. Each runnable gets its own AbortSignal, aborted when the
 * term's signal aborts, when the group stops or when the runnable is
 * removed; one that fails (rejects or throws before its signal aborted) is
 * reported to the group's owner, which stops the manager.
 */

import { runFenced } from '@kubeloop/client';
import type { WriteFence } from '@kubeloop/client';

/** Something the manager runs until its signal aborts. */
export interface Runnable {
  start(signal: AbortSignal): Promise<void>;
}

/** A runnable as a function. */
export type RunnableFn = (signal: AbortSignal) => Promise<void>;

/** A runnable as a group holds it: the function and a name for logs and errors. */
export interface RunnableEntry {
  readonly run: RunnableFn;
  readonly name: string;
}

interface Running {
  readonly entry: RunnableEntry;
  readonly done: Promise<void>;
  readonly stop: AbortController;
}

/** The function form of a runnable. */
export function runnableFn(runnable: Runnable | RunnableFn): RunnableFn {
  return typeof runnable === 'function' ? runnable : (s: AbortSignal) => runnable.start(s);
}

/** Runnables that start and stop together, in terms (see the file's comment). */
export class RunnableGroup {
  private readonly entries = new Set<RunnableEntry>();
  /** Launched and not settled yet, of any term. */
  private readonly running = new Set<Running>();
  private term: AbortSignal | undefined;
  /** The term's write fence (leader-only work): every runnable of the term runs under it, one added mid-term too. */
  private fence: WriteFence | undefined;

  /** `onFailure` is told of a runnable that failed before its signal aborted. */
  constructor(
    readonly name: string,
    private readonly onFailure: (entry: RunnableEntry, err: unknown) => void,
  ) {}

  /** Runnables this group holds. */
  get size(): number {
    return this.entries.size;
  }

  /** Hold `entry`; during a term, launch it at once. */
  add(entry: RunnableEntry): void {
    this.entries.add(entry);
    if (this.term) this.launch(entry, this.term);
  }

  /** Stop `entry` if it runs (resolves once it settled) and hold it no more. */
  async remove(entry: RunnableEntry, reason: unknown): Promise<void> {
    this.entries.delete(entry);
    const mine = [...this.running].filter((r) => r.entry === entry);
    for (const r of mine) r.stop.abort(reason);
    await Promise.all(mine.map((r) => r.done));
  }

  /**
   * A new term: launch every runnable held, and every one added from now on,
   * under `signal` (and under `fence` when given: `runFenced`). Nothing
   * starts under an aborted signal.
   */
  start(signal: AbortSignal, fence?: WriteFence): void {
    this.term = signal;
    this.fence = fence;
    for (const entry of this.entries) this.launch(entry, signal);
  }

  /** End the term: abort every launched runnable with `reason`; resolves once all have settled. */
  stop(reason: unknown): Promise<void> {
    this.term = undefined;
    this.fence = undefined;
    for (const r of this.running) r.stop.abort(reason);
    return this.settled();
  }

  /** Resolves once every runnable launched so far has settled. */
  async settled(): Promise<void> {
    await Promise.all([...this.running].map((r) => r.done));
  }

  private launch(entry: RunnableEntry, parent: AbortSignal): void {
    // Nothing starts after stop (an already aborted signal, leadership lost meanwhile).
    if (parent.aborted) return;
    const ac = new AbortController();
    const abort = (): void => ac.abort(parent.reason);
    parent.addEventListener('abort', abort, { once: true });
    // A runnable that throws instead of rejecting fails the same way (and does not escape start()).
    const fence = this.fence;
    const done = new Promise<void>((resolve) => resolve(fence ? runFenced(fence, () => entry.run(ac.signal)) : entry.run(ac.signal)))
      .catch((err: unknown) => {
        if (ac.signal.aborted) return;
        this.onFailure(entry, err);
      })
      .finally(() => {
        parent.removeEventListener('abort', abort);
        this.running.delete(running);
      });
    const running: Running = { entry, done, stop: ac };
    this.running.add(running);
  }
}

/** Wait for `work` at most `ms`; true when it settled in time. The timer is cleared as soon as `work` settles. */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
