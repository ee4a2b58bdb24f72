/**
 * What a fleet controller is: the kind it reconciles in every member
 * cluster, what else it watches there or in the host, and its reconciler,
 * which gets cluster-aware requests. Built with `fleet.controller()`.
 */
import type { InformerEvent } from '@kubeloop/cache';
import type { CachedClient, Client, KindRef } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import type { Logger } from 'pino';
import type { Cluster } from '../cluster.js';
import type { ControllerOptions } from '../controller/controller.js';
import type { EventHandler } from '../controller/handlers.js';
import type { Predicate } from '../controller/predicates.js';
import type { Permission } from '../rbac/permissions.js';
import type { ReconcileResult, Request } from '../controller/reconcile.js';
import { ManagerError } from '../errors.js';

/** The object to reconcile, and the member cluster it is reconciled for. */
export interface FleetRequest extends Request {
  /** The engaged cluster's name, as its provider gave it. */
  readonly cluster: string;
}

/** Per-reconcile context of a fleet controller. */
export interface FleetReconcileContext {
  /** Aborts on shutdown, when the cluster is disengaged, and at the reconcile timeout. */
  readonly signal: AbortSignal;
  /** A child logger with controller, cluster, namespace, name and reconcileID. */
  readonly log: Logger;
  readonly reconcileID: string;
  /** The controller's name. */
  readonly controller: string;
  /** The request's cluster (`request.cluster`): its cached client, apiReader, cache, recorders. */
  readonly cluster: Cluster;
  /** `cluster.client`: reads from that cluster's cache, writes to its API server. */
  readonly client: CachedClient;
  /** `cluster.apiReader`. */
  readonly apiReader: Client;
  /** The manager's own cluster (the host), for objects that live there. */
  readonly host: Cluster;
}

/** A fleet reconciler as a function. */
export type FleetReconcileFn = (request: FleetRequest, context: FleetReconcileContext) => Promise<ReconcileResult | void> | ReconcileResult | void;

/** A fleet reconciler as a class. */
export interface FleetReconciler {
  reconcile: FleetReconcileFn;
}

/** Where an event came from, for a {@link FleetEventHandler}. */
export interface EventOrigin {
  /** The member cluster the event happened in; undefined for the host (sources added with `watchesHost`). */
  readonly cluster: string | undefined;
  /** The clusters engaged now. */
  readonly clusters: () => readonly string[];
}

/**
 * Maps an event to the requests it should enqueue. A request without a
 * `cluster` is for the cluster the event happened in; one with a `cluster`
 * goes to that cluster's queue (a member's change enqueuing work for another
 * cluster); requests for clusters not engaged are dropped.
 */
export type FleetEventHandler = (event: InformerEvent<KubeObject>, origin: EventOrigin) => readonly (Request | FleetRequest)[];

/** A watched kind: where, how its events map to requests, and what filters them. */
export interface FleetWatch {
  readonly kind: KindRef;
  readonly handler: FleetEventHandler | EventHandler;
  readonly predicates?: readonly Predicate[];
}

/** A fleet controller: the same shape for the builder and explicit registration. */
export interface FleetControllerDefinition {
  /** Unique per fleet. Default: the lower-cased kind of `for`. */
  readonly name?: string;
  /** The kind reconciled in every engaged cluster: its events enqueue the object itself, in its cluster. */
  readonly for: KindRef;
  readonly forPredicates?: readonly Predicate[];
  /** Kinds created by the reconciler in member clusters: their events enqueue the controller owner of the `for` kind, in their cluster. */
  readonly owns?: readonly { readonly kind: KindRef; readonly predicates?: readonly Predicate[] }[];
  /** Other kinds watched in every engaged cluster. */
  readonly watches?: readonly FleetWatch[];
  /** Kinds watched once, in the host (the manager's cluster): their handler says which clusters' work an event makes. When a cluster engages, the host's objects are replayed to it. */
  readonly watchesHost?: readonly FleetWatch[];
  /**
   * What the reconciler does in member clusters beyond reading the kinds it
   * watches there (writes, subresources): `memberPermissions(manager)` and
   * `kubeloop generate rbac`'s member role add it to the reads they derive. Default: none.
   */
  readonly permissions?: readonly Permission[];
  /** What the reconciler does in the host beyond reading its `watchesHost` kinds (a status it writes back): added to `manager.permissions()`. Default: none. */
  readonly hostPermissions?: readonly Permission[];
  /** Controller options, per cluster: `maxConcurrentReconciles` workers for each engaged cluster, each with its own queue. `needLeaderElection` and `warmStandby` are the fleet's (see `FleetOptions`). */
  readonly options?: Omit<ControllerOptions, 'needLeaderElection' | 'warmStandby' | 'shard'>;
}

/**
 * Every engaged cluster's copy of the event's object: for a host kind whose
 * objects describe what each member should have (a fleet-wide policy).
 *
 * @example
 * ```ts
 * fleet.controller().for(ConfigMap).watchesHost(FleetConfig, everyCluster()).complete(async (req, ctx) => {
 *   ctx.log.info({ cluster: req.cluster }, 'copying the FleetConfig into this member');
 * });
 * ```
 */
export function everyCluster(): FleetEventHandler {
  return (event, origin) => {
    const m = event.object.metadata;
    if (!m?.name) return [];
    const key = m.namespace ? { namespace: m.namespace, name: m.name } : { name: m.name };
    return origin.clusters().map((cluster) => ({ ...key, cluster }));
  };
}

/**
 * Builds a fleet controller step by step; `complete` registers it.
 *
 * @example
 * ```ts
 * fleet
 *   .controller()
 *   .named('config-copy')
 *   .for(ConfigMap, { predicates: [labelSelectorPredicate('fleet.kubeloop.dev/config')] })
 *   .watchesHost(FleetConfig, everyCluster())
 *   .complete(async (req, ctx) => {
 *     ctx.log.info({ cluster: req.cluster }, 'reconciling');
 *     return Result.done();
 *   });
 * ```
 */
export class FleetControllerBuilder {
  private def: { -readonly [K in keyof FleetControllerDefinition]?: FleetControllerDefinition[K] } = {};

  constructor(private readonly register: (def: FleetControllerDefinition, reconciler: FleetReconciler | FleetReconcileFn) => void) {}

  named(name: string): this {
    this.def.name = name;
    return this;
  }

  for(kind: KindRef, options: { predicates?: readonly Predicate[] } = {}): this {
    if (this.def.for) throw new ManagerError('InvalidRegistration', 'a fleet controller reconciles one kind: `for` was already called');
    this.def.for = kind;
    this.def.forPredicates = options.predicates ?? [];
    return this;
  }

  /** A kind the reconciler creates in member clusters, owned by the `for` object (its controller owner reference). */
  owns(kind: KindRef, options: { predicates?: readonly Predicate[] } = {}): this {
    this.def.owns = [...(this.def.owns ?? []), { kind, predicates: options.predicates ?? [] }];
    return this;
  }

  /** A kind watched in every engaged cluster, mapped to requests by `handler` (default: the object itself, in its cluster). */
  watches(kind: KindRef, handler?: FleetEventHandler | EventHandler, options: { predicates?: readonly Predicate[] } = {}): this {
    this.def.watches = [...(this.def.watches ?? []), { kind, handler: handler ?? objectHandler, predicates: options.predicates ?? [] }];
    return this;
  }

  /** A kind watched in the host; `handler`'s requests name the clusters they are for (see {@link everyCluster}). */
  watchesHost(kind: KindRef, handler: FleetEventHandler, options: { predicates?: readonly Predicate[] } = {}): this {
    if (typeof handler !== 'function') throw new ManagerError('InvalidRegistration', 'watchesHost needs a handler whose requests name their cluster, such as everyCluster()');
    this.def.watchesHost = [...(this.def.watchesHost ?? []), { kind, handler, predicates: options.predicates ?? [] }];
    return this;
  }

  /** Declare what the reconciler writes in member clusters (see {@link FleetControllerDefinition.permissions}). */
  withPermissions(...permissions: Permission[]): this {
    this.def.permissions = [...(this.def.permissions ?? []), ...permissions];
    return this;
  }

  /** Declare what the reconciler writes in the host (see {@link FleetControllerDefinition.hostPermissions}). */
  withHostPermissions(...permissions: Permission[]): this {
    this.def.hostPermissions = [...(this.def.hostPermissions ?? []), ...permissions];
    return this;
  }

  withOptions(options: NonNullable<FleetControllerDefinition['options']>): this {
    this.def.options = { ...this.def.options, ...options };
    return this;
  }

  complete(reconciler: FleetReconciler | FleetReconcileFn): void {
    if (!this.def.for) throw new ManagerError('InvalidRegistration', 'a fleet controller needs a `for` kind');
    this.register(this.def as FleetControllerDefinition, reconciler);
  }
}

/** The object itself, in the cluster of its event. */
const objectHandler: FleetEventHandler = (event) => {
  const m = event.object.metadata;
  if (!m?.name) return [];
  return [m.namespace ? { namespace: m.namespace, name: m.name } : { name: m.name }];
};
