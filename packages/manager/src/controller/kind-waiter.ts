/**
 * Kinds the API server does not serve (a CRD not installed yet, or deleted).
 *
 * - `KindWaiter` waits for them to be served again, for every controller of
 *   a manager at once: one loop asks the mapper about every waited-for kind
 *   each interval, all at the same moment, so the mapper's single-flight and
 *   miss cache turn any number of waiting kinds into at most one discovery
 *   request per interval.
 * - `MissingKinds` is one controller's side: it runs each kind source in a
 *   loop (run; not served: stop it, drop its informer, wait; run again, its
 *   first list then reported as `crd-established`), knows which sources wait,
 *   and holds the workers while the `for` kind is among them.
 */
import type { InformerCache } from '@kubeloop/cache';
import type { KindRef } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { RESTMapper } from '@kubeloop/mapper';
import { sleep } from '@kubeloop/workqueue';
import type { Logger } from 'pino';
import { CRD_WAIT_SUFFIX } from '../readiness.js';
import { PauseGate } from './pause.js';
import type { Source, SourceContext } from './source.js';

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

/** The same kind, whatever its form (a metadata-only watch of the `for` kind is that kind). */
export function sameKind(a: KindRef, b: KindRef): boolean {
  const x = isMetadataRef(a) ? a.of : a;
  const y = isMetadataRef(b) ? b.of : b;
  return x.apiVersion === y.apiVersion && x.kind === y.kind;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** `Kind.group/version` of a kind ref. */
function kindLabel(kind: KindRef): string {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  return `${ref.kind}.${ref.apiVersion}`;
}

/** What {@link MissingKinds} needs of its controller. */
export interface MissingKindsDeps {
  readonly cache: InformerCache;
  /** The controller's `for` kind: while it is not served, `gate` holds the workers. */
  readonly forKind?: KindRef | undefined;
  /** Resolves true once `kind` is served again, false when `signal` aborts first (a {@link KindWaiter}'s `wait`). Without it, a source waits on its informer, which retries with backoff. */
  readonly waitForKind?: ((kind: KindRef, signal: AbortSignal) => Promise<boolean>) | undefined;
  readonly log: Logger;
}

/** Told as a source's sync state changes: `synced` once it has synced, `unsynced` when its kind stops being served. */
export interface SourceSyncHooks {
  readonly synced: () => void;
  readonly unsynced: () => void;
}

/** One controller's sources whose kind is not served now (each waiting for its CRD), and the gate its workers wait at meanwhile. */
export class MissingKinds {
  /** Holds the workers while the `for` kind is not served (its CRD deleted or not installed). */
  readonly gate = new PauseGate();
  /** Sources whose kind is not served now: stopped, waiting for their CRD. */
  private readonly missing = new Set<Source>();

  constructor(private readonly deps: MissingKindsDeps) {}

  /** Whether no source waits for its CRD. */
  get none(): boolean {
    return this.missing.size === 0;
  }

  /** Why `source` is not synced, when it waits for its CRD (`ControllerStatus.waitingFor` and readiness). */
  reason(source: Source): string | undefined {
    return this.missing.has(source) ? CRD_WAIT_SUFFIX : undefined;
  }

  /** `ControllerStatus.waitingForCRD` and `forKindMissing`. */
  status(): { waitingForCRD: string[]; forKindMissing: boolean } {
    return { waitingForCRD: [...new Set([...this.missing].flatMap((s) => (s.kind ? [kindLabel(s.kind)] : [])))], forKindMissing: this.gate.paused };
  }

  /**
   * Run one source under `signal`; resolves once it has synced, or once its
   * kind is found not served (it then waits for its CRD; synced or not, the
   * controller's workers are not held back by a watched kind). With
   * `waitForKind`, a source whose kind stops being served is stopped, its
   * informer dropped from the cache (unless served again meanwhile), and
   * started afresh once the kind is back: its initial list enqueues every
   * object there is then, each with the trigger `crd-established`. Rejects
   * when the source fails to start.
   */
  run(source: Source, context: Omit<SourceContext, 'signal'>, signal: AbortSignal, hooks: SourceSyncHooks): Promise<void> {
    const kind = source.kind;
    const waitForKind = this.deps.waitForKind;
    if (!kind || !waitForKind) return source.start({ ...context, signal }).then(hooks.synced);
    const forKind = this.deps.forKind !== undefined && sameKind(kind, this.deps.forKind);
    const log = this.deps.log;
    return new Promise<void>((settle, fail) => {
      let settled = false;
      const settleOnce = (): void => {
        if (settled) return;
        settled = true;
        settle();
      };
      const stopped = new Promise<'stopped'>((resolve) => {
        if (signal.aborted) resolve('stopped');
        else signal.addEventListener('abort', () => resolve('stopped'), { once: true });
      });
      void (async () => {
        // After a wait, the first list is that of a kind that became served.
        let runContext = context;
        while (!signal.aborted) {
          const run = new AbortController();
          const runSignal = AbortSignal.any([signal, run.signal]);
          let off = (): void => undefined;
          let gone: () => void = () => undefined;
          const wentAway = new Promise<'gone'>((resolve) => (gone = () => resolve('gone')));
          let started: Promise<'synced'>;
          try {
            const informer = await this.deps.cache.getInformer(kind, { signal, blockUntilSynced: false });
            off = informer.onServedChange((served) => {
              if (!served) gone();
            });
            if (informer.notServed) gone();
            started = source.start({ ...runContext, signal: runSignal }).then(() => 'synced' as const);
          } catch (err) {
            off();
            if (!signal.aborted) fail(asError(err));
            else settleOnce();
            return;
          }
          started.catch(() => undefined);
          let outcome: 'synced' | 'gone' | 'stopped';
          try {
            outcome = await Promise.race([started, wentAway, stopped]);
          } catch (err) {
            off();
            if (!signal.aborted) fail(asError(err));
            else settleOnce();
            return;
          }
          if (outcome === 'synced') {
            hooks.synced();
            settleOnce();
            outcome = await Promise.race([wentAway, stopped]);
          }
          off();
          run.abort();
          if (outcome === 'stopped') break;
          // The kind is not served: stop this source, drop the informer, wait for the CRD.
          hooks.unsynced();
          this.missing.add(source);
          if (forKind) this.gate.pause();
          log.info({ source: source.description }, forKind ? "the CRD of the controller's kind is gone: workers wait for it" : 'the CRD of a watched kind is gone: this watch waits for it');
          settleOnce();
          await this.deps.cache.removeInformer(kind, { ifNotServed: true });
          const back = await waitForKind(kind, signal);
          this.missing.delete(source);
          if (forKind) this.releaseWorkers();
          if (!back) break;
          runContext = runContext.initialEvent === 'crd-established' ? runContext : { ...context, initialEvent: 'crd-established' };
          log.info({ source: source.description }, 'the CRD is back: the source starts again');
        }
        settleOnce();
      })();
    });
  }

  /** The `for` kind is served again (once every source of it is back): the workers take keys. */
  private releaseWorkers(): void {
    const forKind = this.deps.forKind;
    if (forKind && [...this.missing].some((s) => s.kind && sameKind(s.kind, forKind))) return;
    this.gate.resume();
  }
}
