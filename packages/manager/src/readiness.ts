/**
 * Health and readiness: the named checks behind `/healthz` and `/readyz`.
 * The manager's own readiness checks are here: informers synced, complete
 * and in contact with the API server, controllers not waiting for a kind.
 */
import type { InformerCache } from '@kubeloop/cache';
import type { ControllerStatus } from './controller/controller.js';
import { describeError as describeMessage } from './errors.js';
import type { LeadershipGate, LeadershipState } from './leadership.js';
import { serverFiltersShard } from './metrics/informer-metrics.js';
import type { HealthCheck } from './server/http-servers.js';

/** The named checks of `/healthz` and `/readyz`. */
export class Probes {
  readonly healthz = new Map<string, HealthCheck>();
  readonly readyz = new Map<string, HealthCheck>();
}

/**
 * The class of a failure, without anything the server answered: an error's
 * name and reason (`ClientError Forbidden (HTTP 403)`, `CacheError
 * Timeout`). For checks of clusters whose server is not trusted (a fleet
 * member's kubeconfig came from a Secret): `/readyz?verbose` is
 * unauthenticated, and a body echoed there would let a Secret's author
 * read any internal URL through the operator.
 */
export function errorClass(err: unknown): string {
  if (typeof err !== 'object' || err === null) return typeof err;
  const e = err as { name?: unknown; reason?: unknown; code?: unknown };
  const name = typeof e.name === 'string' ? e.name : 'Error';
  const reason = typeof e.reason === 'string' ? ` ${e.reason}` : '';
  const code = typeof e.code === 'number' && e.code > 0 ? ` (HTTP ${e.code})` : typeof e.code === 'string' && /^[A-Z_]+$/.test(e.code) ? ` (${e.code})` : '';
  return `${name}${reason}${code}`;
}

/**
 * Fails while an informer is out of contact with the API server longer than
 * `staleAfterMs`, lacks objects it could not prepare, or has not synced; the
 * message names each informer and its last error (`describe`, default the
 * error's message; {@link errorClass} for a server that is not trusted).
 * Passing, it says who filters each sharded informer the server is asked to
 * filter: `shard filtered by the API server: <kinds>` and/or `shardSelector
 * ignored by the API server, filtered here: <kinds>`.
 */
export function informersCheck(cache: InformerCache, staleAfterMs: number, describeError: (err: unknown) => string = describeMessage): HealthCheck {
  return () => {
    // A kind that is not served (CRD not installed, or deleted) is waited for, not a fault: said below, not failed.
    const all = cache.informers();
    const informers = all.filter((i) => !i.notServed);
    const unsynced = informers.filter((i) => !i.synced);
    const now = Date.now();
    const stale = informers.filter((i) => i.synced && i.stats.some((st) => st.disconnectedSince > 0 && now - st.disconnectedSince > staleAfterMs));
    if (stale.length > 0) {
      throw new Error(
        `stale: ${stale
          .map((i) => {
            const since = Math.max(...i.stats.map((st) => st.disconnectedSince));
            const err = i.stats.map((st) => st.lastError).find((e) => e !== undefined);
            return `${i.kind} out of contact for ${Math.round((now - since) / 1000)} s${err ? ` (${describeError(err)})` : ''}`;
          })
          .join('; ')}`,
      );
    }
    // Objects the API server has that the cache could not take (a transform threw, say): the cache is incomplete.
    const incomplete = informers.filter((i) => (i.unprepared ?? 0) > 0);
    if (incomplete.length > 0) throw new Error(`incomplete: ${incomplete.map((i) => `${i.kind} lacks ${i.unprepared ?? 0} object(s) that could not be prepared`).join('; ')}`);
    if (unsynced.length > 0) {
      throw new Error(
        `not synced: ${unsynced
          .map((i) => {
            const err = i.stats.map((s) => s.lastError).find((e) => e !== undefined);
            return err ? `${i.kind} (${describeError(err)})` : i.kind;
          })
          .join('; ')}`,
      );
    }
    const byServer = informers.filter((i) => serverFiltersShard(i) === true).map((i) => i.kind);
    const here = informers.filter((i) => serverFiltersShard(i) === false).map((i) => i.kind);
    const absent = all.filter((i) => i.notServed).map((i) => i.kind);
    const said = [
      ...(absent.length > 0 ? [`not served by the API server (CRD not installed), waiting: ${absent.join(', ')}`] : []),
      ...(byServer.length > 0 ? [`shard filtered by the API server: ${byServer.join(', ')}`] : []),
      ...(here.length > 0 ? [`shardSelector ignored by the API server, filtered here: ${here.join(', ')}`] : []),
    ];
    return said.length > 0 ? said.join('; ') : undefined;
  };
}

/**
 * Fails while a started (or warm) controller waits for its sources, naming
 * what each waits for. A source waiting only for its CRD (the kind is not
 * served: not installed, or deleted) does not fail it: that is the cluster's
 * state, not this replica's fault, and no other replica would do better; the
 * check passes and says which controllers wait for which CRDs.
 */
export function controllersCheck(statuses: () => readonly ControllerStatus[]): HealthCheck {
  return () => {
    const active = statuses().filter((s) => s.started || s.warm);
    // Each source waiting for its CRD is one entry of waitingFor too.
    const failing = active.filter((s) => !s.synced && s.waitingFor.length > countCRDWaits(s));
    if (failing.length > 0) throw new Error(failing.map((s) => `${s.name} waiting for ${s.waitingFor.join(', ')}`).join('; '));
    const crd = active.filter((s) => s.waitingForCRD.length > 0);
    if (crd.length === 0) return undefined;
    return crd
      .map((s) =>
        s.forKindMissing
          ? `${s.name} waits for the CRD of ${s.waitingForCRD.join(', ')} (not served; it starts when the CRD is installed)`
          : `${s.name} runs without its watch of ${s.waitingForCRD.join(', ')} (not served; the watch starts when the CRD is installed)`,
      )
      .join('; ');
  };
}

function countCRDWaits(s: ControllerStatus): number {
  return s.waitingFor.filter((w) => w.endsWith(CRD_WAIT_SUFFIX)).length;
}

/** How a controller's `waitingFor` entry of a source waiting for its CRD ends. */
export const CRD_WAIT_SUFFIX = 'its CRD is not installed (the API server does not serve the kind); waiting for it';

/**
 * Fails while the gate reports it cannot do its job (a Lease that cannot be
 * read, say); otherwise says where this replica stands: `leading`, `warm
 * standby` or `standby`, with the leader when the gate knows it and the
 * gate's own status (a shard ring's buckets).
 */
export function leadershipCheck(gate: LeadershipGate, state: () => LeadershipState | undefined): HealthCheck {
  return () => {
    const err = gate.check?.();
    if (err) throw err;
    const now = state() ?? 'not started';
    const leader = now === 'leading' ? undefined : gate.leader?.();
    const status = gate.status?.();
    const line = leader ? `${now} (leader: ${leader})` : now;
    return status ? `${line}; ${status}` : line;
  };
}
