/**
 * The manager's one controller registry. Every controller is an entry here,
 * the manager's own and a fleet's alike: `manager.controllers()`, the
 * `controllers` readiness check, `/inspect`, pause and resume and
 * `removeController` read this registry and nothing else. An entry runs
 * one `Controller` (queue, workers) per cluster it is engaged in: the
 * manager's own cluster, or each fleet member this replica engages. Every
 * `Controller` is built here (`build`), from a definition's sources
 * (`sourcesOf`), with the manager's metrics and reconcile listeners.
 */
import type { KindRef } from '@kubeloop/client';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Cluster } from '../cluster.js';
import { ownWritesOf } from '../cluster.js';
import { ManagerError } from '../errors.js';
import type { EventRecorder } from '../events/recorder.js';
import { ControllerMetrics } from '../metrics/controller-metrics.js';
import { forGroupKind, sourcesOf } from './builder.js';
import type { ControllerDefinition } from './builder.js';
import { Controller } from './controller.js';
import type { ControllerStatus, ReconcileReport } from './controller.js';
import type { Reconciler } from './reconcile.js';

/** One registered controller: the manager's own (one `Controller`) or a fleet's (one per engaged member). */
export interface ControllerEntry {
  readonly name: string;
  /** Whether its sources run on a standby (warm), so `leadershipState()` says `warm standby`. */
  readonly warm: boolean;
  /** What `manager.controllers()` and the `controllers` readiness check show of it. */
  status(): ControllerStatus;
  /** Its `Controller`s now, one per cluster it runs in here: what `/inspect` lists. */
  instances(): readonly Controller[];
  /** Stop its workers (sources keep the queues current); resolves once the reconciles in flight end. */
  pause(): Promise<void>;
  resume(): void;
  /** The kinds its sources read from the manager's own cache (informers `removeController` may drop). */
  hostKinds(): readonly KindRef[];
  /** Stop it for good: workers, then sources. */
  stop(reason: unknown): Promise<void>;
  /** The manager's own controllers' definition, for `manager.permissions()` (a fleet's says its own). */
  readonly definition?: ControllerDefinition;
}

/** Where one `Controller` runs: a cluster, and how it waits for a kind there. */
export interface ControllerTarget {
  readonly cluster: Cluster;
  /** The fleet member's name (a `cluster` label and log field); undefined for the manager's own cluster. */
  readonly member?: string;
  readonly waitForKind: (kind: KindRef, signal: AbortSignal) => Promise<boolean>;
  /** The `SelfTriggering` Event's recorder. Default: none. */
  readonly recorder?: () => EventRecorder;
  /** Whether leadership comes in elected terms (a cold controller's first list is then `leadership-start`). Default: false. */
  readonly electedLeadership?: boolean;
  /** Told of each finished reconcile, besides the manager's listeners. Default: no one. */
  readonly observe?: (report: ReconcileReport) => void;
}

/** What every controller of a manager shares. */
export interface RegistryOptions {
  readonly logger: Logger;
  readonly registry: Registry;
  /** Whether the reconcile-time histogram carries trace IDs as exemplars (tracing on). */
  readonly exemplars: boolean;
  /** The sync period of a controller whose options name none; 0: off. */
  readonly defaultSyncPeriodMs: number;
  /** The manager's `onReconcile` listeners. */
  readonly observe: (report: ReconcileReport) => void;
}

/** The separator of a fleet controller's member in `/inspect` paths: `copy@eu-1`. */
export const MEMBER_SEPARATOR = '@';

export class ControllerRegistry {
  readonly metrics: ControllerMetrics;
  private readonly entries = new Map<string, ControllerEntry>();

  constructor(private readonly options: RegistryOptions) {
    this.metrics = new ControllerMetrics(options.registry, { exemplars: options.exemplars });
  }

  /** @throws {@link ManagerError} `InvalidRegistration` when the name is taken (by any controller, a fleet's too). */
  add(entry: ControllerEntry): void {
    this.checkFree(entry.name);
    this.entries.set(entry.name, entry);
  }

  /** Refuses a name already taken, before anything is built. */
  checkFree(name: string): void {
    if (this.entries.has(name)) {
      throw new ManagerError('InvalidRegistration', `a controller named ${JSON.stringify(name)} is already registered; give one a unique name (a manager's and its fleets' controllers share one registry)`);
    }
  }

  get(name: string): ControllerEntry | undefined {
    return this.entries.get(name);
  }

  /** @throws {@link ManagerError} `InvalidRegistration` when no controller has that name. */
  require(name: string): ControllerEntry {
    const entry = this.entries.get(name);
    if (!entry) throw new ManagerError('InvalidRegistration', `no controller named ${JSON.stringify(name)} is registered`);
    return entry;
  }

  delete(name: string): void {
    this.entries.delete(name);
  }

  all(): ControllerEntry[] {
    return [...this.entries.values()];
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  /** The one way a `Controller` is made: the definition's sources, over the target cluster, with the manager's metrics and listeners. */
  build(name: string, reconciler: Reconciler, definition: ControllerDefinition, target: ControllerTarget): Controller {
    const { group, kind } = forGroupKind(definition);
    const cluster = target.cluster;
    const ownWrites = ownWritesOf(cluster.client);
    return new Controller(name, reconciler, sourcesOf(definition), definition.options ?? {}, {
      cache: cluster.cache,
      logger: this.options.logger,
      registry: this.options.registry,
      metrics: this.metrics,
      group,
      kind,
      forKind: definition.for,
      client: cluster.client,
      waitForKind: target.waitForKind,
      ...(ownWrites ? { ownWrites } : {}),
      ...(target.member === undefined ? {} : { cluster: target.member }),
      ...(target.recorder ? { recorder: target.recorder } : {}),
      electedLeadership: target.electedLeadership ?? false,
      defaultSyncPeriodMs: this.options.defaultSyncPeriodMs,
      observe: (report) => {
        target.observe?.(report);
        this.options.observe(report);
      },
    });
  }

  /** What `/inspect` addresses: a controller's name, or `name@member` for each engaged member of a fleet controller. */
  inspectNames(): string[] {
    return this.all().flatMap((e) => e.instances().map((c) => addressOf(e, c)));
  }

  /** The `Controller` `/inspect/<name>` names (`name`, or `name@member`). */
  inspectable(address: string): Controller | undefined {
    for (const e of this.entries.values()) for (const c of e.instances()) if (addressOf(e, c) === address) return c;
    return undefined;
  }

  /** Pause a controller by name (every member of a fleet controller), or one member's (`name@member`). */
  async pause(address: string): Promise<void> {
    const entry = this.entries.get(address);
    if (entry) return entry.pause();
    const one = this.inspectable(address);
    if (!one) this.require(address);
    await one?.pause();
  }

  resume(address: string): void {
    const entry = this.entries.get(address);
    if (entry) return entry.resume();
    const one = this.inspectable(address);
    if (!one) this.require(address);
    one?.resume();
  }
}

function addressOf(entry: ControllerEntry, c: Controller): string {
  return c.cluster === undefined ? entry.name : `${entry.name}${MEMBER_SEPARATOR}${c.cluster}`;
}

const registries = new WeakMap<object, ControllerRegistry>();

/** Package-internal: the registry of a manager made by `createManager` (a fleet registers its controllers there). */
export function registryOf(manager: object): ControllerRegistry {
  const registry = registries.get(manager);
  if (!registry) throw new ManagerError('InvalidOptions', 'a fleet needs a manager made by createManager');
  return registry;
}

/** Package-internal: record `manager`'s registry. */
export function setRegistry(manager: object, registry: ControllerRegistry): void {
  registries.set(manager, registry);
}
