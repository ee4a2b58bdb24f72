/**
 * A fleet: one manager reconciling across member clusters that a provider
 * engages and disengages while it runs (multicluster-runtime's multi-cluster
 * manager, as a part of the manager rather than a second manager).
 *
 * Each engaged cluster is a `Cluster` of its own (its own transports,
 * informer cache, mapper, recorders) and gets, for every fleet controller,
 * a controller of its own: its own queue and `maxConcurrentReconciles`
 * workers. A member whose API server stops answering therefore holds only
 * its own workers and queue; the other members' keys never wait behind its
 * keys, whatever the mix of work. Disengaging stops that cluster's workers
 * (reconciles in flight finish), its sources, its informers (their metrics
 * go with them), its readiness check, and closes its connections.
 */
import type { InformerEvent } from '@kubeloop/cache';
import type { KindRef } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import { parseApiVersion } from '@kubeloop/scheme';
import { LOW_PRIORITY, sleep } from '@kubeloop/workqueue';
import type { Logger } from 'pino';
import { createCluster, ownWritesOf } from '../cluster.js';
import type { Cluster, ClusterOptions } from '../cluster.js';
import { Controller } from '../controller/controller.js';
import { KindWaiter } from '../controller/kind-waiter.js';
import type { ControllerStatus, ReconcileReport } from '../controller/controller.js';
import { enqueueOwner } from '../controller/handlers.js';
import type { EventHandler } from '../controller/handlers.js';
import type { Request } from '../controller/reconcile.js';
import { kindSource, kindSourceAs } from '../controller/source.js';
import { PAUSED_ANNOTATION, unpausedSource } from '../controller/pause.js';
import type { Source } from '../controller/source.js';
import { describeError, ManagerError } from '../errors.js';
import type { Manager } from '../manager.js';
import { ControllerMetrics } from '../metrics/controller-metrics.js';
import { addedPermissions, addPermissions } from '../rbac/extra.js';
import { declaredPermissions, kindReads, requiredPermissions } from '../rbac/permissions.js';
import type { PermissionRequirement } from '../rbac/permissions.js';
import { errorClass, informersCheck } from '../readiness.js';
import { FleetControllerBuilder } from './builder.js';
import type { EventOrigin, FleetControllerDefinition, FleetEventHandler, FleetReconcileFn, FleetReconciler, FleetRequest } from './builder.js';
import { checkTarget, untilAborted } from './provider.js';
import type { ClusterProvider, ClusterTarget, FleetEngager } from './provider.js';

/** What every member cluster is made with (the target comes from the provider). */
export type MemberClusterOptions = Pick<ClusterOptions, 'scheme' | 'fieldOwner' | 'namespaces' | 'cache' | 'uncached' | 'readYourWrites' | 'transportOptions' | 'eventRecorder'>;

/** Options of {@link createFleet}. */
export interface FleetOptions {
  /** Says which clusters exist: `staticProvider`, `kubeconfigSecretProvider`, `manualProvider` or your own. Required. */
  readonly provider: ClusterProvider;
  /** How each member cluster is made (give `fieldOwner` for server-side apply). Default: the manager's scheme; `createCluster`'s defaults otherwise (every namespace, no field owner). */
  readonly clusters?: MemberClusterOptions;
  /**
   * Run the provider and the member clusters' controllers only while this
   * replica leads (they are one leader-only runnable). `false` runs them on
   * every replica. Default: true.
   */
  readonly needLeaderElection?: boolean;
  /** A member's `/readyz` check (`cluster-<name>`) fails once one of its synced informers has been out of contact this long. Default: the manager's 60 s. */
  readonly informerStaleAfterMs?: number;
  /**
   * How often each member's API server is asked for `/version` (deadline
   * 5 s, or this when shorter), so that its `/readyz` check says
   * `unreachable` within about this long plus the deadline once it stops
   * answering: a watch open on a connection gone silent is otherwise
   * noticed only at its idle deadline (150 s by default), and the member
   * read `engaged` meanwhile. Any answer, even 401 or 403, counts as
   * reachable. Members engaged with a ready transport (a fake API server's)
   * are not probed. 0: no probe. Default: 10 000.
   */
  readonly memberProbeIntervalMs?: number;
  /**
   * Whether a member's readiness check counts in `/readyz`. A dead member
   * taking the replica out of service helps no one when the replica serves
   * nothing but reconciles, so by default its check only reports (`[+]cluster-eu-1
   * ok: not ready: ...`); `true` makes it fail `/readyz`. Default: false.
   */
  readonly membersGateReadiness?: boolean;
}

/** One engaged cluster, as {@link Fleet.status} reports it. */
export interface FleetClusterStatus {
  readonly name: string;
  /** Each fleet controller's progress in this cluster. */
  readonly controllers: readonly ControllerStatus[];
}

/** One finished reconcile of a fleet controller (see {@link Fleet.onReconcile}). */
export interface FleetReconcileReport extends ReconcileReport {
  readonly cluster: string;
  readonly request: FleetRequest;
}

/** A manager's fleet of member clusters. */
export interface Fleet {
  /** The manager's own cluster. */
  readonly host: Cluster;
  /** A fluent builder whose `complete` registers a fleet controller (before or after start). */
  controller(): FleetControllerBuilder;
  /** The names of the engaged clusters. */
  clusters(): readonly string[];
  /** An engaged cluster, or undefined. */
  cluster(name: string): Cluster | undefined;
  /** Each engaged cluster's controllers' progress. */
  status(): readonly FleetClusterStatus[];
  /** Be told of every finished reconcile of every fleet controller, in every cluster. Returns the unsubscribe function. */
  onReconcile(listener: (report: FleetReconcileReport) => void): () => void;
  /**
   * Be told when a cluster has engaged (its controllers started) or left
   * (its controllers, informers and connections gone; not told for a
   * re-engage, which is `engaged` again). For work the host keeps about its
   * members: a status entry per member to drop when one leaves. A listener
   * that throws is logged and ignored. Returns the unsubscribe function.
   *
   * @example
   * ```ts
   * fleet.onClusterChange(({ type, cluster }) => {
   *   if (type === 'disengaged') console.log(`${cluster} left the fleet`);
   * });
   * ```
   */
  onClusterChange(listener: (change: FleetClusterChange) => void): () => void;
}

/** A cluster that engaged or left, as {@link Fleet.onClusterChange} tells it. */
export interface FleetClusterChange {
  readonly type: 'engaged' | 'disengaged';
  readonly cluster: string;
}

/**
 * Give a manager a fleet: member clusters engaged by `provider` while the
 * manager runs, and controllers reconciling in each of them.
 *
 * @throws {@link ManagerError} `InvalidOptions` without a provider.
 * @example
 * ```ts
 * const manager = createManager({ fieldOwner: 'fleet-demo' });
 * const fleet = createFleet(manager, { provider: staticProvider({ 'eu-1': { kubeConfig: loadKubeConfig('./eu-1.kubeconfig') } }) });
 * fleet.controller().for(ConfigMap).complete(async (req, ctx) => {
 *   const cm = await ctx.client.get(ConfigMap, { namespace: req.namespace!, name: req.name });
 *   ctx.log.info({ cluster: req.cluster, keys: Object.keys(cm.data ?? {}) }, 'seen');
 * });
 * await manager.start(signalHandler());
 * ```
 */
export function createFleet(manager: Manager, options: FleetOptions): Fleet {
  if (options === null || typeof options !== 'object' || typeof options.provider?.run !== 'function') {
    throw new ManagerError('InvalidOptions', 'createFleet needs { provider }: staticProvider({...}), kubeconfigSecretProvider({...}), manualProvider() or an object with run(fleet, signal)');
  }
  for (const key of ['informerStaleAfterMs', 'memberProbeIntervalMs'] as const) {
    const v = options[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) throw new ManagerError('InvalidOptions', `createFleet: ${key} must be a number of ms >= 0; got ${JSON.stringify(v)}`);
  }
  const fleet = new FleetRuntime(manager, options);
  manager.add((signal) => fleet.run(signal), { needLeaderElection: options.needLeaderElection ?? true });
  addPermissions(manager, 'host', () => fleet.hostPermissions());
  addPermissions(manager, 'members', () => fleet.memberPermissions());
  return fleet;
}

/**
 * What the fleets of `manager` need in every member cluster, from their
 * controllers as registered: get, list and watch on the kinds they watch
 * there (`for`, `owns`, `watches`), status and finalizers of their `for`
 * kinds as for a manager's controllers, and what they declare with
 * `withPermissions`. Empty without a fleet. `kubeloop generate rbac` writes
 * it as the member role (`member-role.yaml` beside the host's role), to bind
 * in each member cluster to the identity its kubeconfig names; what the
 * fleets need in the host is in `manager.permissions()`.
 *
 * @throws {@link ManagerError} `InvalidRegistration` when a watched kind's resource name or scope is unknown.
 * @example
 * ```ts
 * for (const p of memberPermissions(manager)) console.log(p.group, p.resource, p.verbs.join(','), p.reason);
 * ```
 */
export function memberPermissions(manager: Manager): PermissionRequirement[] {
  return addedPermissions(manager, 'members');
}

interface ControllerRecord {
  readonly name: string;
  readonly definition: FleetControllerDefinition;
  readonly reconcile: FleetReconcileFn;
  /** cluster -> its controller's enqueue (set while that controller's sources run). */
  readonly routes: Map<string, (request: Request, priority?: number) => void>;
}

interface Member {
  readonly name: string;
  readonly cluster: Cluster;
  readonly stop: AbortController;
  /** controller name -> the controller and its run. */
  readonly controllers: Map<string, { readonly controller: Controller; readonly done: Promise<void> }>;
  /** Since when, and why, its last probe got no answer; undefined while it answers. */
  unreachable?: { readonly since: number; readonly error: unknown } | undefined;
  /** The probe loop (ends when `stop` aborts). */
  probing?: Promise<void>;
}

class FleetRuntime implements Fleet, FleetEngager {
  private readonly records = new Map<string, ControllerRecord>();
  private readonly members = new Map<string, Member>();
  /** Engage and disengage of one name run one after another. */
  private readonly pending = new Map<string, Promise<void>>();
  private readonly listeners = new Set<(report: FleetReconcileReport) => void>();
  private readonly changeListeners = new Set<(change: FleetClusterChange) => void>();
  readonly log: Logger;
  private readonly metrics: ControllerMetrics;
  private running: AbortSignal | undefined;

  constructor(
    private readonly manager: Manager,
    private readonly options: FleetOptions,
  ) {
    this.log = manager.logger.child({ component: 'fleet' });
    this.metrics = new ControllerMetrics(manager.registry);
  }

  get host(): Cluster {
    return this.manager.cluster;
  }

  controller(): FleetControllerBuilder {
    return new FleetControllerBuilder((definition, reconciler) => this.addController(definition, reconciler));
  }

  clusters(): readonly string[] {
    return [...this.members.keys()];
  }

  cluster(name: string): Cluster | undefined {
    return this.members.get(name)?.cluster;
  }

  status(): readonly FleetClusterStatus[] {
    return [...this.members.values()].map((m) => ({ name: m.name, controllers: [...m.controllers.values()].map((c) => c.controller.status()) }));
  }

  onReconcile(listener: (report: FleetReconcileReport) => void): () => void {
    const entry = (report: FleetReconcileReport): void => listener(report);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  onClusterChange(listener: (change: FleetClusterChange) => void): () => void {
    const entry = (change: FleetClusterChange): void => listener(change);
    this.changeListeners.add(entry);
    return () => {
      this.changeListeners.delete(entry);
    };
  }

  /** What the fleet's controllers need in member clusters. */
  memberPermissions(): PermissionRequirement[] {
    return requiredPermissions({
      scheme: this.options.clusters?.scheme ?? this.manager.scheme,
      controllers: [...this.records.values()].map((r) => ({
        name: r.name,
        for: r.definition.for,
        owns: r.definition.owns ?? [],
        watches: (r.definition.watches ?? []).map((w) => ({ kind: w.kind, handler: () => [] })),
        permissions: r.definition.permissions ?? [],
      })),
      ...(this.options.clusters?.namespaces ? { namespaces: this.options.clusters.namespaces } : {}),
      // A fleet controller records no events in members (its context has no recorder).
      events: false,
    });
  }

  /** What the fleet needs in the host: its controllers' host watches and declared host writes, and its provider's reads. */
  hostPermissions(): PermissionRequirement[] {
    const out: PermissionRequirement[] = [];
    for (const r of this.records.values()) {
      for (const w of r.definition.watchesHost ?? []) out.push(...kindReads(this.manager.scheme, w.kind, `fleet controller ${r.name}, in the host, watches`));
      out.push(...declaredPermissions(this.manager.scheme, r.definition.hostPermissions ?? [], `fleet controller ${r.name} (host)`));
    }
    out.push(...(this.options.provider.permissions?.() ?? []));
    return out;
  }

  private tell(change: FleetClusterChange): void {
    for (const listener of this.changeListeners) {
      try {
        listener(change);
      } catch (err) {
        this.log.error({ err, cluster: change.cluster }, 'a fleet cluster-change listener threw; ignored');
      }
    }
  }

  private addController(definition: FleetControllerDefinition, reconciler: FleetReconciler | FleetReconcileFn): void {
    const name = definition.name ?? refOf(definition.for).kind.toLowerCase();
    if (this.records.has(name)) throw new ManagerError('InvalidRegistration', `a fleet controller named ${JSON.stringify(name)} is already registered; give one a unique name`);
    const reconcile: FleetReconcileFn = typeof reconciler === 'function' ? reconciler : (req, ctx) => reconciler.reconcile(req, ctx);
    const record: ControllerRecord = { name, definition, reconcile, routes: new Map() };
    this.records.set(name, record);
    const signal = this.running;
    if (signal) {
      this.startHostSources(record, signal);
      for (const member of this.members.values()) this.startOn(member, record);
    }
  }

  /** The fleet's runnable: the host sources and the provider, until `signal` aborts; then every cluster is disengaged. */
  async run(signal: AbortSignal): Promise<void> {
    this.running = signal;
    for (const record of this.records.values()) this.startHostSources(record, signal);
    this.log.info({ provider: this.options.provider.description }, 'fleet started');
    try {
      await Promise.all([this.options.provider.run(this, signal), untilAborted(signal)]);
    } finally {
      this.running = undefined;
      await Promise.all([...this.members.keys()].map((name) => this.disengage(name)));
      this.log.info('fleet stopped');
    }
  }

  engage(name: string, target: ClusterTarget): Promise<void> {
    checkTarget(name, target);
    return this.serialize(name, async () => {
      if (this.members.has(name)) await this.stopMember(name, 're-engaged');
      const signal = this.running;
      if (!signal || signal.aborted) return;
      const cluster = createCluster({
        ...this.options.clusters,
        scheme: this.options.clusters?.scheme ?? this.manager.scheme,
        ...(target.transport ? { transport: target.transport } : { kubeConfig: target.kubeConfig }),
        name,
        logger: this.manager.logger,
        registry: this.manager.registry,
      });
      const stop = new AbortController();
      const onAbort = (): void => stop.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      stop.signal.addEventListener('abort', () => signal.removeEventListener('abort', onAbort), { once: true });
      const member: Member = { name, cluster, stop, controllers: new Map() };
      this.members.set(name, member);
      // A ready transport (a fake API server's) is not probed: only a server reached over the network can go silent.
      if (target.kubeConfig) member.probing = this.probe(member);
      // A member's server is not trusted (its URL may come from a Secret): its check names the class of a failure, never the body it answered.
      const informers = informersCheck(cluster.cache, this.options.informerStaleAfterMs ?? 60_000, errorClass);
      const check = (): ReturnType<typeof informers> => {
        const out = member.unreachable;
        if (out) throw new Error(`unreachable for ${Math.round((Date.now() - out.since) / 1000)} s (${errorClass(out.error)})`);
        return informers();
      };
      this.manager.addReadyzCheck(`cluster-${name}`, this.options.membersGateReadiness
        ? check
        : async () => {
            try {
              await check();
              return 'engaged';
            } catch (err) {
              return `not ready: ${describeError(err)}`;
            }
          });
      for (const record of this.records.values()) this.startOn(member, record);
      this.log.info({ cluster: name }, 'cluster engaged');
      this.tell({ type: 'engaged', cluster: name });
    });
  }

  disengage(name: string): Promise<void> {
    return this.serialize(name, async () => {
      if (this.members.has(name)) await this.stopMember(name, 'disengaged');
    });
  }

  private serialize(name: string, step: () => Promise<void>): Promise<void> {
    const next = (this.pending.get(name) ?? Promise.resolve()).then(step);
    const settled = next.catch(() => undefined);
    this.pending.set(name, settled);
    void settled.then(() => {
      if (this.pending.get(name) === settled) this.pending.delete(name);
    });
    return next;
  }

  private async stopMember(name: string, why: string): Promise<void> {
    const member = this.members.get(name);
    if (!member) return;
    this.members.delete(name);
    member.stop.abort(new ManagerError('RunnableFailed', `cluster ${name} ${why}`));
    for (const record of this.records.values()) record.routes.delete(name);
    await Promise.all([...member.controllers.values()].map((c) => c.done));
    await member.probing;
    await member.cluster.stop();
    this.manager.removeReadyzCheck(`cluster-${name}`);
    this.log.info({ cluster: name }, `cluster ${why}`);
    if (why === 'disengaged') this.tell({ type: 'disengaged', cluster: name });
  }

  /** Ask the member's server for /version every `memberProbeIntervalMs` until it leaves; a request that gets no answer marks it unreachable. */
  private async probe(member: Member): Promise<void> {
    const interval = this.options.memberProbeIntervalMs ?? 10_000;
    const signal = member.stop.signal;
    if (interval <= 0) return;
    while (!signal.aborted) {
      try {
        await member.cluster.transport.request({ method: 'GET', path: '/version', timeoutMs: Math.min(interval, 5_000), signal });
        member.unreachable = undefined;
      } catch (error) {
        if (signal.aborted) return;
        member.unreachable = { since: member.unreachable?.since ?? Date.now(), error };
      }
      await sleep(interval, signal);
    }
  }

  /** Start `record`'s controller for `member`: its sources in that cluster and its workers. */
  private startOn(member: Member, record: ControllerRecord): void {
    const def = record.definition;
    const forRef = refOf(def.for);
    const origin: EventOrigin = { cluster: member.name, clusters: () => this.clusters() };
    const route = (handler: FleetEventHandler | EventHandler): EventHandler => (event) => this.route(record, member.name, handler(event, origin));
    const sources: Source[] = [kindSourceAs('for', def.for, route(objectOf), def.forPredicates ?? [])];
    for (const owned of def.owns ?? []) sources.push(kindSourceAs('owns', owned.kind, enqueueOwner(forRef), owned.predicates ?? []));
    for (const w of def.watches ?? []) sources.push(kindSource(w.kind, route(w.handler), w.predicates ?? []));
    sources.push(this.inbox(record, member));
    const pause = def.options?.pause;
    if (pause !== false) sources.push(unpausedSource(def.for, pause?.annotation ?? PAUSED_ANNOTATION));
    const cluster = member.cluster;
    // A member's CRD deleted (or not installed yet): this controller waits for it there, asking that member's discovery.
    const waiter = new KindWaiter(cluster.mapper);
    const controller = new Controller(
      record.name,
      {
        reconcile: (request, ctx) =>
          record.reconcile({ ...request, cluster: member.name }, { ...ctx, cluster, client: cluster.client, apiReader: cluster.apiReader, host: this.manager.cluster }),
      },
      sources,
      def.options ?? {},
      {
        cache: cluster.cache,
        logger: this.manager.logger,
        registry: this.manager.registry,
        metrics: this.metrics,
        group: parseApiVersion(forRef.apiVersion).group,
        kind: forRef.kind,
        forKind: def.for,
        cluster: member.name,
        client: cluster.client,
        waitForKind: (kind, signal) => waiter.wait(kind, signal),
        ...(ownWritesOf(cluster.client) ? { ownWrites: ownWritesOf(cluster.client)! } : {}),
        observe: (report) => this.observe(member.name, report),
      },
    );
    const done = controller.start(member.stop.signal).catch((err: unknown) => {
      if (!member.stop.signal.aborted) this.log.error({ err, cluster: member.name, controller: record.name }, 'a fleet controller failed in this cluster; the other clusters go on');
    });
    member.controllers.set(record.name, { controller, done });
  }

  /** Requests without a cluster stay in `from`; the others go to their cluster's queue (dropped when it is not engaged). Returns those for `from`. */
  private route(record: ControllerRecord, from: string, requests: readonly (Request | FleetRequest)[]): Request[] {
    const here: Request[] = [];
    for (const r of requests) {
      const cluster = (r as Partial<FleetRequest>).cluster;
      const request = keyOf(r);
      if (cluster === undefined || cluster === from) here.push(request);
      else record.routes.get(cluster)?.(request);
    }
    return here;
  }

  /**
   * The source through which other clusters' events (the host's, another
   * member's) reach this cluster's queue. When it starts, the host's objects
   * are replayed to this cluster, so a cluster that engages late gets the
   * work the host describes for it.
   */
  private inbox(record: ControllerRecord, member: Member): Source {
    const hostWatches = record.definition.watchesHost ?? [];
    return {
      description: 'fleet inbox (host and other clusters)',
      start: async ({ enqueue, signal, onError, lowPriority = LOW_PRIORITY }) => {
        record.routes.set(member.name, enqueue);
        signal.addEventListener('abort', () => {
          if (record.routes.get(member.name) === enqueue) record.routes.delete(member.name);
        }, { once: true });
        const hostCache = this.manager.cluster.cache;
        const origin: EventOrigin = { cluster: undefined, clusters: () => this.clusters() };
        for (const w of hostWatches) {
          const informer = await hostCache.getInformer(w.kind, { signal, blockUntilSynced: false });
          await informer.waitForSync(signal);
          const list = await hostCache.list(w.kind, { signal });
          for (const object of list.items as readonly KubeObject[]) {
            const event: InformerEvent<KubeObject> = { type: 'add', object };
            try {
              if (!(w.predicates ?? []).every((p) => p(event))) continue;
              for (const r of (w.handler)(event, origin)) {
                if ((r as Partial<FleetRequest>).cluster === member.name) enqueue(keyOf(r), lowPriority);
              }
            } catch (err) {
              onError(err, `replay of host ${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`);
            }
          }
        }
      },
    };
  }

  /** The host's watched kinds, once for the fleet's run: their events go to the clusters their handler names. */
  private startHostSources(record: ControllerRecord, signal: AbortSignal): void {
    const origin: EventOrigin = { cluster: undefined, clusters: () => this.clusters() };
    for (const w of record.definition.watchesHost ?? []) {
      const handler: EventHandler = (event) => {
        this.route(record, '', (w.handler)(event, origin));
        return [];
      };
      const source = kindSource(w.kind, handler, w.predicates ?? []);
      source
        .start({
          enqueue: () => undefined,
          cache: this.manager.cluster.cache,
          signal,
          onError: (err, where) => {
            this.metrics.sourceErrors.inc({ controller: record.name });
            this.log.error({ err, controller: record.name, source: where }, 'a host predicate or event handler failed; the event is dropped');
          },
        })
        .catch((err: unknown) => {
          if (!signal.aborted) this.log.error({ err, controller: record.name, kind: refOf(w.kind).kind }, 'a host source failed to start');
        });
    }
  }

  private observe(cluster: string, report: ReconcileReport): void {
    const full: FleetReconcileReport = { ...report, cluster, request: { ...report.request, cluster } };
    for (const listener of this.listeners) {
      try {
        listener(full);
      } catch (err) {
        this.log.error({ err, controller: report.controller }, 'a fleet reconcile listener threw; ignored');
      }
    }
  }
}

/** The object itself (the `for` kind's handler). */
const objectOf: EventHandler = (event) => {
  const m = event.object.metadata;
  if (!m?.name) return [];
  return [m.namespace ? { namespace: m.namespace, name: m.name } : { name: m.name }];
};

function keyOf(r: Request): Request {
  return r.namespace ? { namespace: r.namespace, name: r.name } : { name: r.name };
}

function refOf(kind: KindRef): { apiVersion: string; kind: string } {
  return isMetadataRef(kind) ? kind.of : kind;
}
