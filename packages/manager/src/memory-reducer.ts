/**
 * Keeps V8's memory reducer able to run in an operator's process.
 *
 * After a burst of work (a thousand first reconciles, a relist) V8 keeps the
 * heap pages the burst needed: its ordinary collections free objects but pool
 * the emptied pages. Its memory reducer is what gives them back to the
 * operating system: once the process looks idle it runs memory-reducing
 * mark-compacts. It looks idle when the allocation rate is low on the young
 * generation, the old generation and the embedder's C++ heap (cppgc) alike.
 * Since V8 13.1 (Node 24) the embedder's rate of a process that never
 * allocates on that heap is exactly 0, and V8 reads a rate of 0 as the
 * highest: the reducer then runs only when its 100 s watchdog fires, and any
 * ordinary major collection (a watch event's garbage is enough) resets the
 * watchdog, so an operator can keep a burst's high-water mark for good. The
 * example operator holding the 1,000 HardDisks it had just reconciled stayed
 * at 77 MiB RSS; with this, it is down to 71 MiB about 15 s after the burst
 * (docs/benchmarks.md, "Returning the burst's memory").
 *
 * Compiling a `vm.Script` allocates a few bytes on cppgc (Node's script
 * wrapper), which keeps that rate small but above 0 for about 100 s (V8
 * decays it exponentially until it underflows); once a minute keeps it so.
 * The compile of a one-character script costs microseconds. Process-wide: the
 * first holder starts the timer, the last one's release stops it. Node 22's
 * V8 (12.4) floors the rate at 1 byte/ms and needs none of this; it does no
 * harm there.
 */
import { Script } from 'node:vm';

/** How often a held reducer is nudged, ms: well under the ~107 s after which V8's decayed rate reaches exactly 0 again. */
export const MEMORY_REDUCER_NUDGE_MS = 60_000;

let holders = 0;
let timer: ReturnType<typeof setInterval> | undefined;

function nudge(): void {
  new Script('0');
}

/**
 * Keep the memory reducer able to run until the returned function is
 * called (idempotent). The timer does not keep the process alive.
 */
export function holdMemoryReducer(): () => void {
  holders++;
  if (holders === 1) {
    nudge();
    timer = setInterval(nudge, MEMORY_REDUCER_NUDGE_MS);
    timer.unref();
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    holders--;
    if (holders === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

/** How many holders keep the reducer nudged now (for tests). */
export function memoryReducerHolders(): number {
  return holders;
}
