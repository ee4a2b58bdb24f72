/**
 * Waits for kinds the API server does not serve (a CRD not installed yet, or
 * deleted) to be served again, for every controller of a manager at once:
 * one loop asks the mapper about every waited-for kind each interval, all at
 * the same moment, so the mapper's single-flight and miss cache turn any
 * number of waiting kinds into at most one discovery request per interval.
 */
import type { KindRef } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { RESTMapper } from '@kubeloop/mapper';
import { sleep } from '@kubeloop/workqueue';

/** How often a controller waiting for its CRD asks discovery whether it is back, by default. */
export const DEFAULT_CRD_POLL_INTERVAL_MS = 10_000;

interface Waited {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly waiters: Set<(found: boolean) => void>;
}

export class KindWaiter {
  private readonly waiting = new Map<string, Waited>();
  /** Aborted when nothing is waited for any more: the loop ends without waiting out its interval. */
  private idle: AbortController | undefined;

  constructor(
    private readonly mapper: RESTMapper,
    private readonly intervalMs: number = DEFAULT_CRD_POLL_INTERVAL_MS,
  ) {}

  /** Resolves true once the mapper finds `kind` (served again), false when `signal` aborts first. */
  wait(kind: KindRef, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    const ref = isMetadataRef(kind) ? kind.of : kind;
    const slash = ref.apiVersion.indexOf('/');
    const group = slash === -1 ? '' : ref.apiVersion.slice(0, slash);
    const version = slash === -1 ? ref.apiVersion : ref.apiVersion.slice(slash + 1);
    const key = `${ref.apiVersion}\u0000${ref.kind}`;
    let entry = this.waiting.get(key);
    if (!entry) this.waiting.set(key, (entry = { group, version, kind: ref.kind, waiters: new Set() }));
    const waited = entry;
    return new Promise<boolean>((resolve) => {
      const waiter = (found: boolean): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(found);
      };
      const onAbort = (): void => {
        waited.waiters.delete(waiter);
        if (waited.waiters.size === 0 && this.waiting.get(key) === waited) this.waiting.delete(key);
        if (this.waiting.size === 0) this.idle?.abort();
        resolve(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waited.waiters.add(waiter);
      this.run();
    });
  }

  /** Kinds waited for now, as `Kind.apiVersion`. */
  waited(): string[] {
    return [...this.waiting.values()].map((w) => `${w.kind}.${w.group ? `${w.group}/` : ''}${w.version}`);
  }

  private run(): void {
    if (this.idle) return;
    const idle = (this.idle = new AbortController());
    void (async () => {
      while (this.waiting.size > 0 && (await sleep(this.intervalMs, idle.signal))) {
        // All at once: the first miss refreshes discovery, the others share that request.
        await Promise.all(
          [...this.waiting].map(async ([key, w]) => {
            try {
              await this.mapper.restMapping({ group: w.group, kind: w.kind }, w.version);
            } catch {
              return; // still not served, or discovery failed: asked again next interval
            }
            if (this.waiting.get(key) === w) this.waiting.delete(key);
            for (const waiter of [...w.waiters]) waiter(true);
          }),
        );
      }
      if (this.idle === idle) this.idle = undefined;
      // Someone began waiting as the loop ended: start again.
      if (this.waiting.size > 0) this.run();
    })();
  }
}
