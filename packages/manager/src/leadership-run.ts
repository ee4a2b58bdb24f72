/**
 * The manager's side of its leadership gate: run the gate for the manager's
 * life; each term it opens starts the leader-only group under that term
 * (and its write fence); stepping down waits for the group to settle,
 * bounded by the graceful timeout. A gate that ends `lost`, or fails, stops
 * the manager.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { traced } from '@kubeloop/client/internal';
import type { Cluster } from './cluster.js';
import { describeError, isManagerError, ManagerError } from './errors.js';
import type { LeadershipGate } from './leadership.js';
import { waitAtMost } from './runnable-groups.js';
import type { RunnableGroup } from './runnable-groups.js';

/** What {@link runGate} needs of the manager. */
export interface GateRun {
  /** The manager's life. */
  readonly signal: AbortSignal;
  readonly cluster: Cluster;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly leaderOnly: RunnableGroup;
  readonly gracefulMs: number;
  /** Told when a term starts (true) and ends (false). */
  setLeading(leading: boolean): void;
  /** Stop the manager with this error. */
  fail(err: ManagerError): void;
}

/** Run `gate` until `run.signal` aborts; resolves once the gate's run has ended. */
export function runGate(gate: LeadershipGate, run: GateRun): Promise<void> {
  const { logger: log, signal } = run;
  return gate
    .run({
      signal,
      cluster: run.cluster,
      registry: run.registry,
      logger: log,
      lead: (term, fence) => {
        if (term.aborted || signal.aborted) return;
        run.setLeading(true);
        term.addEventListener('abort', () => {
          run.setLeading(false);
          void leadershipSpan('leadership ended', gate.description);
        }, { once: true });
        log.info({ leadership: gate.description }, 'leading; starting leader-only runnables');
        void leadershipSpan('leadership started', gate.description);
        // Leader-only work writes under the term's fence: refused once the gate may no longer lead.
        run.leaderOnly.start(term, fence);
      },
      stepDown: async () => {
        await waitAtMost(run.leaderOnly.settled(), run.gracefulMs);
      },
    })
    .then(
      (end) => {
        if (end === 'lost' && !signal.aborted) {
          log.error({ leadership: gate.description }, 'leadership lost; stopping leader-only work and exiting');
          run.fail(new ManagerError('LeaderElectionLost', `lost leadership (${gate.description})`));
        }
      },
      (err: unknown) => {
        log.error({ err, leadership: gate.description }, 'the leadership gate failed; stopping the manager');
        run.fail(isManagerError(err) ? err : new ManagerError('RunnableFailed', `leadership (${gate.description}) failed: ${describeError(err)}`, { cause: err }));
      },
    );
}

/** A leadership change as a span of its own (a new trace): nothing when tracing is off. */
function leadershipSpan(name: string, description: string): Promise<void> {
  return traced(name, { root: true, attributes: { 'kubeloop.leadership': description } }, () => Promise.resolve());
}
