/**
 * A fleet: one manager reconciling across member clusters that a provider
 * engages and disengages while it runs (multicluster-runtime's multi-cluster
 * manager, as a part of the manager rather than a second manager).
 *
 * The fleet is a dimension of the manager's controllers, not a runtime of
 * its own: its controllers are entries of the manager's one registry
 * (`fleet-controller.ts`), each running one `Controller` (queue, workers)
 * per member. This file holds the members: each engaged cluster is a
 * `Cluster` of its own (transports, informer cache, mapper, recorders)
 * whose controllers' sources run while it is engaged; its workers run in
 * the terms the coordinator (`coordinator.ts`) opens for it on this
 * replica. A member whose API server stops answering holds only its own
 * workers and queue. Disengaging stops that cluster's workers (reconciles
 * in flight finish), its sources, its informers (their metrics go with
 * them), its readiness check, and closes its connections.
 */
import { namespaceNames } from '@kubeloop/cache';
import type { InformerEvent } from '@kubeloop/cache';
import type { WriteFence } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import { LOW_PRIORITY, sleep } from '@kubeloop/workqueue';
import type { Logger } from 'pino';
import { createCluster } from '../cluster.js';
import type { Cluster, ClusterOptions } from '../cluster.js';
import { KindWaiter } from '../controller/kind-waiter.js';
import type { ControllerStatus, ReconcileReport } from '../controller/controller.js';
import type { EventHandler } from '../controller/handlers.js';
import { registryOf } from '../controller/registry.js';
import type { ControllerRegistry } from '../controller/registry.js';
import { kindSource } from '../controller/source.js';
import type { Source } from '../controller/source.js';
import { describeError, ManagerError } from '../errors.js';
import type { Manager } from '../manager.js';
import { addedPermissions, addPermissions } from '../rbac/extra.js';
import { declaredPermissions, kindReads, requiredPermissions } from '../rbac/permissions.js';
import type { PermissionRequirement } from '../rbac/permissions.js';
import { errorClass, informersCheck } from '../readiness.js';
import { FleetControllerBuilder } from './builder.js';
import type { EventOrigin, FleetControllerDefinition, FleetReconcileFn, FleetReconciler, FleetRequest } from './builder.js';
import { engageAll } from './coordinator.js';
import type { CoordinatorContext, FleetCoordinator } from './coordinator.js';
import { FleetControllerEntry, refOf } from './fleet-controller.js';
import type { FleetHooks, MemberHandle } from './fleet-controller.js';
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
   * Which engaged members this replica reconciles: `engageAll()` (every
   * member, while this replica leads) or `ringCoordinator(ring)` (members
   * spread over the replicas of a shard ring, each reconciled by one
   * replica at a time, the others warm). Default: `engageAll()`.
   */
  readonly coordinator?: FleetCoordinator;
  /**
   * Whether the coordinator runs only while this replica leads (the
   * manager's leadership gate). `false` runs it on every replica: with
   * `engageAll()`, every replica reconciles every member. Default: the
   * coordinator's (`engageAll`: true; `ringCoordinator`: false).
   */
  readonly needLeaderElection?: boolean;
  /**
   * Engage the members (their caches, sources and queues) on every replica,
   * leading or not, so that a takeover reconciles at once from synced
   * caches. `false` with a coordinator that needs leadership engages members
   * only while this replica leads, as one leader-only runnable (a takeover
   * syncs every member cold). Default: true.
   */
  readonly warmStandby?: boolean;
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
  /** Whether this replica reconciles it now; else its caches and queues stand by warm (another replica reconciles it, or this one does not lead). */
  readonly reconciling: boolean;
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
  /** The names of the engaged clusters (reconciled here or standing by warm). */
  clusters(): readonly string[];
  /** The names of the engaged clusters this replica reconciles now (the coordinator's choice). */
  reconciling(): readonly string[];
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
  const coordinator = options.coordinator ?? engageAll();
  if (typeof coordinator?.run !== 'function') throw new ManagerError('InvalidOptions', 'createFleet: coordinator must be a FleetCoordinator (engageAll(), ringCoordinator(ring) or an object with run(context))');
  const fleet = new FleetRuntime(manager, options, coordinator);
  const needLeaderElection = options.needLeaderElection ?? coordinator.needLeaderElection;
  if (needLeaderElection && options.warmStandby === false) {
    // Cold: members engaged only while leading, the provider and the coordinator in one leader-only runnable.
    manager.add((signal) => Promise.all([fleet.run(signal), fleet.coordinate(signal)]).then(() => undefined), { needLeaderElection: true });
  } else {
    manager.add((signal) => fleet.run(signal), { needLeaderElection: false });
    manager.add((signal) => fleet.coordinate(signal), { needLeaderElection });
  }
  manager.addReadyzCheck('fleet', () => fleet.readiness());
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

interface Member extends MemberHandle {
  readonly stop: AbortController;
  /** The term this replica reconciles it in, while the coordinator says so. */
  led?: { readonly signal: AbortSignal; readonly fence: WriteFence | undefined };
  /** Since when, and why, its last probe got no answer; undefined while it answers. */
  unreachable?: { readonly since: number; readonly error: unknown } | undefined;
  /** The probe loop (ends when `stop` aborts). */
  probing?: Promise<void>;
}

class FleetRuntime implements Fleet, FleetEngager {
  /** This fleet's controllers (entries of the manager's registry too). */
  private readonly entries = new Map<string, FleetControllerEntry>();
  private readonly members = new Map<string, Member>();
  /** Each member's last term's workers: `stepDown` waits for them (a member that left included). */
  private readonly terms = new Map<string, Promise<void>>();
  /** Engage and disengage of one name run one after another. */
  private readonly pending = new Map<string, Promise<void>>();
  private readonly listeners = new Set<(report: FleetReconcileReport) => void>();
  private readonly changeListeners = new Set<(change: FleetClusterChange) => void>();
  private readonly memberListeners = new Set<() => void>();
  readonly log: Logger;
  private readonly registry: ControllerRegistry;
  private readonly hooks: FleetHooks;
  private running: AbortSignal | undefined;

  constructor(
    private readonly manager: Manager,
    private readonly options: FleetOptions,
    private readonly coordinator: FleetCoordinator,
  ) {
    this.log = manager.logger.child({ component: 'fleet' });
    this.registry = registryOf(manager);
    this.hooks = {
      registry: this.registry,
      host: manager.cluster,
      log: this.log,
      membersGateReadiness: options.membersGateReadiness ?? false,
      clusters: () => this.clusters(),
      observe: (cluster, report) => this.observe(cluster, report),
      inbox: (entry, member) => this.inbox(entry, member),
    };
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

  reconciling(): readonly string[] {
    return this.clusters().filter((name) => this.isReconciling(name));
  }

  cluster(name: string): Cluster | undefined {
    return this.members.get(name)?.cluster;
  }

  status(): readonly FleetClusterStatus[] {
    return [...this.members.values()].map((m) => ({
      name: m.name,
      reconciling: this.isReconciling(m.name),
      controllers: [...this.entries.values()].flatMap((e) => e.instances().filter((c) => c.cluster === m.name).map((c) => c.status())),
    }));
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

  /** The `fleet` readiness check: the coordinator's fault fails it; otherwise it says which members this replica reconciles. */
  readiness(): string {
    const err = this.coordinator.check?.();
    if (err) throw err;
    const mine = this.reconciling();
    const warm = this.clusters().filter((m) => !mine.includes(m));
    const line = `${this.coordinator.description}: reconciling ${mine.length > 0 ? mine.join(', ') : 'no member'}${warm.length > 0 ? `; warm standby for ${warm.join(', ')}` : ''}`;
    const status = this.coordinator.status?.();
    return status ? `${line}; ${status}` : line;
  }

  /** What the fleet's controllers need in member clusters. */
  memberPermissions(): PermissionRequirement[] {
    return requiredPermissions({
      scheme: this.options.clusters?.scheme ?? this.manager.scheme,
      controllers: [...this.entries.values()].map(({ name, fleetDefinition: d }) => ({
        name,
        for: d.for,
        owns: d.owns ?? [],
        watches: (d.watches ?? []).map((w) => ({ kind: w.kind, handler: () => [] })),
        permissions: d.permissions ?? [],
      })),
      ...(this.options.clusters?.namespaces ? { namespaces: namespaceNames(this.options.clusters.namespaces) } : {}),
      // A fleet controller records no events in members (its context has no recorder).
      events: false,
    });
  }

  /** What the fleet needs in the host: its controllers' host watches and declared host writes, its provider's reads and its coordinator's Leases. */
  hostPermissions(): PermissionRequirement[] {
    const out: PermissionRequirement[] = [];
    for (const { name, fleetDefinition: d } of this.entries.values()) {
      for (const w of d.watchesHost ?? []) out.push(...kindReads(this.manager.scheme, w.kind, `fleet controller ${name}, in the host, watches`));
      out.push(...declaredPermissions(this.manager.scheme, d.hostPermissions ?? [], `fleet controller ${name} (host)`));
    }
    out.push(...(this.options.provider.permissions?.() ?? []));
    out.push(...(this.coordinator.permissions?.() ?? []));
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

  private tellMembers(): void {
    for (const listener of [...this.memberListeners]) {
      try {
        listener();
      } catch (err) {
        this.log.error({ err }, 'the fleet coordinator failed on a member change; ignored');
      }
    }
  }

  private addController(definition: FleetControllerDefinition, reconciler: FleetReconciler | FleetReconcileFn): void {
    const name = definition.name ?? refOf(definition.for).kind.toLowerCase();
    const reconcile: FleetReconcileFn = typeof reconciler === 'function' ? reconciler : (req, ctx) => reconciler.reconcile(req, ctx);
    const entry = new FleetControllerEntry(name, definition, reconcile, this.hooks);
    // One registry: a name taken by any controller of the manager is refused here.
    this.registry.add(entry);
    this.entries.set(name, entry);
    entry.onStop = () => {
      if (this.entries.get(name) === entry) this.entries.delete(name);
    };
    const signal = this.running;
    if (signal) {
      this.startHostSources(entry, signal);
      for (const member of this.members.values()) {
        entry.attach(member);
        if (member.led && !member.led.signal.aborted) {
          // Joins the member's term: stepDown waits for it too.
          const joined = entry.lead(member.name, member.led.signal, member.led.fence);
          this.terms.set(member.name, Promise.all([this.terms.get(member.name), joined]).then(() => undefined));
        }
      }
    }
  }

  /** The fleet's runnable: the host sources and the provider, until `signal` aborts; then every cluster is disengaged. */
  async run(signal: AbortSignal): Promise<void> {
    this.running = signal;
    for (const entry of this.entries.values()) this.startHostSources(entry, signal);
    this.log.info({ provider: this.options.provider.description, coordinator: this.coordinator.description }, 'fleet started');
    try {
      await Promise.all([this.options.provider.run(this, signal), untilAborted(signal)]);
    } finally {
      this.running = undefined;
      await Promise.all([...this.members.keys()].map((name) => this.disengage(name)));
      this.log.info('fleet stopped');
    }
  }

  /** The coordinator's runnable: it opens members' terms until `signal` aborts. */
  async coordinate(signal: AbortSignal): Promise<void> {
    const context: CoordinatorContext = {
      signal,
      logger: this.log,
      registry: this.manager.registry,
      members: () => this.clusters(),
      onMembersChange: (listener) => {
        const entry = (): void => listener();
        this.memberListeners.add(entry);
        return () => {
          this.memberListeners.delete(entry);
        };
      },
      lead: (member, term, fence) => this.lead(member, term, fence),
      reconciling: (member) => this.isReconciling(member),
      stepDown: async (member) => {
        await this.terms.get(member);
      },
    };
    await this.coordinator.run(context);
  }

  private isReconciling(name: string): boolean {
    const led = this.members.get(name)?.led;
    return led !== undefined && !led.signal.aborted;
  }

  /** Reconcile `name` here until `term` (or its fence, or its engagement) ends. */
  private lead(name: string, term: AbortSignal, fence: WriteFence | undefined): void {
    const member = this.members.get(name);
    if (!member || term.aborted || member.stop.signal.aborted || this.isReconciling(name)) return;
    const signal = AbortSignal.any([term, member.stop.signal, ...(fence ? [fence.signal] : [])]);
    member.led = { signal, fence };
    // A controller's term starts once its previous one has ended, so this term's end is also the previous one's.
    this.terms.set(name, Promise.all([...this.entries.values()].map((e) => e.lead(name, signal, fence))).then(() => undefined));
    this.log.info({ cluster: name }, 'reconciling cluster');
    signal.addEventListener('abort', () => {
      if (!member.stop.signal.aborted) this.log.info({ cluster: name }, 'cluster no longer reconciled here (warm standby)');
    }, { once: true });
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
      // A member's CRD deleted (or not installed yet): its controllers wait for it there, asking that member's discovery.
      const waiter = new KindWaiter(cluster.mapper);
      const member: Member = { name, cluster, stop, signal: stop.signal, waitForKind: (kind, s) => waiter.wait(kind, s) };
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
      for (const entry of this.entries.values()) entry.attach(member);
      this.log.info({ cluster: name }, 'cluster engaged');
      this.tell({ type: 'engaged', cluster: name });
      this.tellMembers();
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
    await Promise.all([...this.entries.values()].map((e) => e.detach(name)));
    if (!this.members.has(name)) this.terms.delete(name);
    await member.probing;
    await member.cluster.stop();
    this.manager.removeReadyzCheck(`cluster-${name}`);
    this.log.info({ cluster: name }, `cluster ${why}`);
    if (why === 'disengaged') this.tell({ type: 'disengaged', cluster: name });
    this.tellMembers();
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

  /**
   * The source through which other clusters' events (the host's, another
   * member's) reach this cluster's queue. When it starts, the host's objects
   * are replayed to this cluster, so a cluster that engages late gets the
   * work the host describes for it.
   */
  private inbox(entry: FleetControllerEntry, member: MemberHandle): Source {
    const hostWatches = entry.fleetDefinition.watchesHost ?? [];
    return {
      description: 'fleet inbox (host and other clusters)',
      start: async ({ enqueue, signal, onError, lowPriority = LOW_PRIORITY }) => {
        entry.routes.set(member.name, enqueue);
        signal.addEventListener('abort', () => {
          if (entry.routes.get(member.name) === enqueue) entry.routes.delete(member.name);
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
  private startHostSources(entry: FleetControllerEntry, runSignal: AbortSignal): void {
    const origin: EventOrigin = { cluster: undefined, clusters: () => this.clusters() };
    const signal = AbortSignal.any([runSignal, entry.hostSignal]);
    for (const w of entry.fleetDefinition.watchesHost ?? []) {
      const handler: EventHandler = (event) => {
        entry.route('', (w.handler)(event, origin));
        return [];
      };
      const source = kindSource(w.kind, handler, w.predicates ?? []);
      source
        .start({
          enqueue: () => undefined,
          cache: this.manager.cluster.cache,
          signal,
          onError: (err, where) => {
            this.registry.metrics.sourceErrors.inc({ controller: entry.name });
            this.log.error({ err, controller: entry.name, source: where }, 'a host predicate or event handler failed; the event is dropped');
          },
        })
        .catch((err: unknown) => {
          if (!signal.aborted) this.log.error({ err, controller: entry.name, kind: refOf(w.kind).kind }, 'a host source failed to start');
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

function keyOf(r: { readonly namespace?: string | undefined; readonly name: string }): { namespace?: string; name: string } {
  return r.namespace ? { namespace: r.namespace, name: r.name } : { name: r.name };
}
