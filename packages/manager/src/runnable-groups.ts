/**
 * Runnable groups: what the manager runs, in groups started and stopped
 * together (controller-runtime's `runnable_group.go`). Each runnable gets
 * its own AbortSignal, aborted when its group's signal aborts or when the
 * group is stopped; one that fails (rejects or throws before its signal
 * aborted) is reported to the group's owner, which stops the manager.
 */

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

/**
 * Runnables that start and stop together. Runnables added before `start`
 * wait for it; those added after start at once, under the same signal.
 */
export class RunnableGroup {
  private readonly waiting: RunnableEntry[] = [];
  private readonly running: Running[] = [];
  private signal: AbortSignal | undefined;

  /** `onFailure` is told of a runnable that failed before its signal aborted. */
  constructor(
    readonly name: string,
    private readonly onFailure: (entry: RunnableEntry, err: unknown) => void,
  ) {}

  /** Runnables added to this group, waiting or launched. */
  get size(): number {
    return this.waiting.length + this.running.length;
  }

  add(entry: RunnableEntry): void {
    if (this.signal) this.launch(entry, this.signal);
    else this.waiting.push(entry);
  }

  /** Launch every runnable added so far, and every one added from now on, under `signal`. Nothing starts under an aborted signal. */
  start(signal: AbortSignal): void {
    this.signal = signal;
    for (const entry of this.waiting.splice(0)) this.launch(entry, signal);
  }

  /** Abort every launched runnable with `reason`; resolves once all have settled. */
  stop(reason: unknown): Promise<void> {
    for (const r of this.running) r.stop.abort(reason);
    return this.settled();
  }

  /** Resolves once every runnable launched so far has settled. */
  async settled(): Promise<void> {
    await Promise.all(this.running.map((r) => r.done));
  }

  private launch(entry: RunnableEntry, parent: AbortSignal): void {
    // Nothing starts after stop (an already aborted signal, leadership lost meanwhile).
    if (parent.aborted) return;
    const ac = new AbortController();
    const abort = (): void => ac.abort(parent.reason);
    parent.addEventListener('abort', abort, { once: true });
    // A runnable that throws instead of rejecting fails the same way (and does not escape start()).
    const done = new Promise<void>((resolve) => resolve(entry.run(ac.signal))).catch((err: unknown) => {
      if (ac.signal.aborted) return;
      this.onFailure(entry, err);
    });
    this.running.push({ entry, done, stop: ac });
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
