/**
 * A fleet controller is a controller: one entry of the manager's controller
 * registry (in `manager.controllers()`, the `controllers` readiness check,
 * `/inspect`, pause and resume), built by the registry from a definition's
 * sources like any other, with one `Controller` (queue, workers) per member
 * engaged here. Each member's sources and queue run while the member is
 * engaged (a warm standby for a member another replica reconciles); its
 * workers run in the terms the fleet's coordinator opens for that member.
 */
import type { KindRef } from '@kubeloop/client';
import { runFenced } from '@kubeloop/client';
import type { WriteFence } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { Logger } from 'pino';
import type { Cluster } from '../cluster.js';
import type { ControllerDefinition } from '../controller/builder.js';
import type { Controller, ControllerStatus, ReconcileReport } from '../controller/controller.js';
import type { EventHandler } from '../controller/handlers.js';
import type { Request } from '../controller/reconcile.js';
import type { ControllerEntry, ControllerRegistry } from '../controller/registry.js';
import type { Source } from '../controller/source.js';
import type { EventOrigin, FleetControllerDefinition, FleetEventHandler, FleetReconcileFn, FleetRequest } from './builder.js';

/** A member as its controllers see it. */
export interface MemberHandle {
  readonly name: string;
  readonly cluster: Cluster;
  /** Aborts when the member leaves (or the fleet stops). */
  readonly signal: AbortSignal;
  readonly waitForKind: (kind: KindRef, signal: AbortSignal) => Promise<boolean>;
}

/** What a fleet controller needs of its fleet. */
export interface FleetHooks {
  readonly registry: ControllerRegistry;
  readonly host: Cluster;
  readonly log: Logger;
  /** Whether a member that is not synced fails the `controllers` readiness check. */
  readonly membersGateReadiness: boolean;
  /** The members engaged now. */
  clusters(): readonly string[];
  /** Told of each finished reconcile, with its cluster. */
  observe(cluster: string, report: ReconcileReport): void;
  /** The inbox source of `entry` in `member`: other clusters' events for this member's queue. */
  inbox(entry: FleetControllerEntry, member: MemberHandle): Source;
}

interface Instance {
  readonly controller: Controller;
  /** Aborts when the member leaves or the controller is removed. */
  readonly signal: AbortSignal;
  /** The sources' run (the warm queue), for the member's life. */
  readonly sources: Promise<void>;
  /** The current term's workers, and whether that term still runs. */
  term?: { readonly signal: AbortSignal; readonly done: Promise<void> };
}

export class FleetControllerEntry implements ControllerEntry {
  /** Warm while members are engaged: their sources and queues run whether this replica reconciles them or not. */
  get warm(): boolean {
    return this.instancesByMember.size > 0;
  }
  /** member -> its enqueue (set while that member's inbox source runs). */
  readonly routes = new Map<string, (request: Request, priority?: number) => void>();
  private readonly instancesByMember = new Map<string, Instance>();
  private paused = false;
  private readonly stopHost = new AbortController();
  private readonly reconcile: FleetReconcileFn;

  constructor(
    readonly name: string,
    readonly fleetDefinition: FleetControllerDefinition,
    reconcile: FleetReconcileFn,
    private readonly hooks: FleetHooks,
  ) {
    this.reconcile = reconcile;
  }

  /** Start its sources (and queue) in `member`; its workers wait for a term (`lead`). */
  attach(member: MemberHandle): void {
    const controller = this.hooks.registry.build(this.name, { reconcile: (request, ctx) => this.reconcile({ ...request, cluster: member.name }, { ...ctx, cluster: member.cluster, client: member.cluster.client, apiReader: member.cluster.apiReader, host: this.hooks.host }) }, this.memberDefinition(member), {
      cluster: member.cluster,
      member: member.name,
      waitForKind: member.waitForKind,
      observe: (report) => this.hooks.observe(member.name, report),
    });
    if (this.paused) void controller.pause();
    const signal = AbortSignal.any([member.signal, this.stopHost.signal]);
    const sources = controller.warmup(signal).catch((err: unknown) => {
      if (!signal.aborted) this.hooks.log.error({ err, cluster: member.name, controller: this.name }, 'a fleet controller failed in this cluster; the other clusters go on');
    });
    this.instancesByMember.set(member.name, { controller, signal, sources });
  }

  /** Run its workers in `member` until `term` aborts, writing under `fence`. Resolves when they have stopped (reconciles in flight finished). */
  lead(member: string, term: AbortSignal, fence: WriteFence | undefined): Promise<void> {
    const instance = this.instancesByMember.get(member);
    if (!instance || term.aborted || instance.signal.aborted) return Promise.resolve();
    const signal = AbortSignal.any([term, instance.signal]);
    const run = (): Promise<void> => instance.controller.start(signal);
    const done = (fence ? runFenced(fence, run) : run()).catch((err: unknown) => {
      if (!signal.aborted) this.hooks.log.error({ err, cluster: member, controller: this.name }, 'a fleet controller failed in this cluster; the other clusters go on');
    });
    instance.term = { signal, done };
    return done;
  }

  /** Forget `member` (its signal has aborted): resolves once its workers and sources have stopped. */
  async detach(member: string): Promise<void> {
    const instance = this.instancesByMember.get(member);
    this.routes.delete(member);
    if (!instance) return;
    await Promise.all([instance.term?.done, instance.sources]);
    if (this.instancesByMember.get(member) === instance) this.instancesByMember.delete(member);
  }

  /** Whether its workers run in `member` now. */
  reconciling(member: string): boolean {
    const term = this.instancesByMember.get(member)?.term;
    return term !== undefined && !term.signal.aborted;
  }

  /** The definition of its `Controller` in `member`: the builder's sources, with events naming another cluster routed to that cluster's queue. */
  private memberDefinition(member: MemberHandle): ControllerDefinition {
    const def = this.fleetDefinition;
    const origin: EventOrigin = { cluster: member.name, clusters: () => this.hooks.clusters() };
    const routed = (handler: FleetEventHandler | EventHandler): EventHandler => (event) => this.route(member.name, handler(event, origin));
    return {
      name: this.name,
      for: def.for,
      ...(def.forPredicates ? { forPredicates: def.forPredicates } : {}),
      ...(def.owns ? { owns: def.owns } : {}),
      watches: [...(def.watches ?? []).map((w) => ({ kind: w.kind, handler: routed(w.handler), predicates: w.predicates ?? [] })), this.hooks.inbox(this, member)],
      ...(def.options ? { options: def.options } : {}),
    };
  }

  /** Requests without a cluster stay in `from`; the others go to their cluster's queue (dropped when it is not engaged). Returns those for `from`. */
  route(from: string, requests: readonly (Request | FleetRequest)[]): Request[] {
    const here: Request[] = [];
    for (const r of requests) {
      const cluster = (r as Partial<FleetRequest>).cluster;
      const request = keyOf(r);
      if (cluster === undefined || cluster === from) here.push(request);
      else this.routes.get(cluster)?.(request);
    }
    return here;
  }

  /** Aborts when the controller is removed: its host sources stop. */
  get hostSignal(): AbortSignal {
    return this.stopHost.signal;
  }

  status(): ControllerStatus {
    const members = [...this.instancesByMember].map(([member, i]) => ({ member, status: i.controller.status(), reconciling: this.reconciling(member) }));
    const gating = this.hooks.membersGateReadiness ? members : [];
    const waitingFor = gating.flatMap((m) => m.status.waitingFor.map((w) => `${m.member}: ${w}`));
    const waitingForCRD = [...new Set(gating.flatMap((m) => m.status.waitingForCRD))];
    return {
      name: this.name,
      started: members.some((m) => m.reconciling),
      warm: members.length > 0,
      synced: gating.every((m) => m.status.synced),
      paused: this.paused,
      waitingFor,
      waitingForCRD,
      forKindMissing: gating.some((m) => m.status.forKindMissing),
      clusters: members.map((m) => ({ ...m.status, cluster: m.member, reconciling: m.reconciling })),
    };
  }

  instances(): readonly Controller[] {
    return [...this.instancesByMember.values()].map((i) => i.controller);
  }

  async pause(): Promise<void> {
    this.paused = true;
    await Promise.all(this.instances().map((c) => c.pause()));
  }

  resume(): void {
    this.paused = false;
    for (const c of this.instances()) c.resume();
  }

  hostKinds(): readonly KindRef[] {
    return (this.fleetDefinition.watchesHost ?? []).map((w) => w.kind);
  }

  /** Removed from the registry: its host sources and its controller in every member stop (reconciles in flight finish). */
  async stop(): Promise<void> {
    this.stopHost.abort();
    this.onStop?.();
    await Promise.all([...this.instancesByMember.keys()].map((m) => this.detach(m)));
  }

  /** Set by the fleet: forget this controller. */
  onStop: (() => void) | undefined;
}

function keyOf(r: Request): Request {
  return r.namespace ? { namespace: r.namespace, name: r.name } : { name: r.name };
}

export function refOf(kind: KindRef): { apiVersion: string; kind: string } {
  return isMetadataRef(kind) ? kind.of : kind;
}
