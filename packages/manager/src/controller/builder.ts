/**
 * The fluent controller builder: `for` one kind, `owns` kinds, `watches`
 * anything, with predicates, an event filter and options.
 */
import type { KindRef } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import { parseApiVersion } from '@kubeloop/scheme';
import type { ControllerOptions } from './controller.js';
import { ManagerError } from '../errors.js';
import { enqueueObject, enqueueOwner } from './handlers.js';
import type { EventHandler } from './handlers.js';
import type { Predicate } from './predicates.js';
import type { Permission } from '../rbac/permissions.js';
import type { ReconcilerLike } from './reconcile.js';
import { kindSourceAs } from './source.js';
import { PAUSED_ANNOTATION, unpausedSource } from './pause.js';
import type { Source } from './source.js';

/** Options of one watched kind in the builder (`for`, `owns`, `watches`). */
export interface BuilderWatchOptions {
  /** Events pass only when every predicate says true. Default: none (every event). */
  readonly predicates?: readonly Predicate[];
}

/** What a controller is: the same shape for the builder, the decorator and explicit registration. */
export interface ControllerDefinition {
  /** Unique per manager. Default: the lower-cased kind of `for`. */
  readonly name?: string;
  /** The kind reconciled: its events enqueue the object itself. */
  readonly for: KindRef;
  readonly forPredicates?: readonly Predicate[];
  /** Kinds created by the reconciler: their events enqueue the controller owner of the `for` kind. */
  readonly owns?: readonly (KindRef | { readonly kind: KindRef; readonly predicates?: readonly Predicate[] })[];
  /** Anything else: a kind with a handler, or a ready source. */
  readonly watches?: readonly (Source | { readonly kind: KindRef; readonly handler: EventHandler; readonly predicates?: readonly Predicate[] })[];
  /** Predicates applied to every kind source of this controller. */
  readonly eventFilters?: readonly Predicate[];
  readonly options?: ControllerOptions;
  /**
   * What the reconciler does beyond reading the kinds it watches (writes,
   * subresources, reads of unwatched kinds): `manager.permissions()` and
   * `kubeloop generate rbac` add it to the reads they derive. Default: none.
   */
  readonly permissions?: readonly Permission[];
}

function refOf(kind: KindRef): { apiVersion: string; kind: string } {
  return isMetadataRef(kind) ? kind.of : kind;
}

/** The sources a definition describes. */
export function sourcesOf(def: ControllerDefinition): Source[] {
  const filters = def.eventFilters ?? [];
  const forRef = refOf(def.for);
  const sources: Source[] = [kindSourceAs('for', def.for, enqueueObject(), [...filters, ...(def.forPredicates ?? [])])];
  for (const owned of def.owns ?? []) {
    // A wrapper's `kind` is a KindRef object; a descriptor's or TypeRef's `kind` is a string.
    const wrapped = typeof (owned as { kind?: unknown }).kind === 'object';
    const kind = wrapped ? (owned as { kind: KindRef }).kind : (owned as KindRef);
    const predicates = wrapped ? (owned as { predicates?: readonly Predicate[] }).predicates : undefined;
    sources.push(kindSourceAs('owns', kind, enqueueOwner(forRef), [...filters, ...(predicates ?? [])]));
  }
  for (const w of def.watches ?? []) {
    if ('start' in w) sources.push(w);
    else sources.push(kindSourceAs('watches', w.kind, w.handler, [...filters, ...(w.predicates ?? [])]));
  }
  // Removing the pause annotation enqueues the object, whatever the predicates above let through.
  const pause = def.options?.pause;
  if (pause !== false) sources.push(unpausedSource(def.for, pause?.annotation ?? PAUSED_ANNOTATION));
  return sources;
}

/** The controller's name: given, or the lower-cased kind of `for`. */
export function nameOf(def: ControllerDefinition): string {
  return def.name ?? refOf(def.for).kind.toLowerCase();
}

/** group and kind of `for`, for log fields. */
export function forGroupKind(def: ControllerDefinition): { group: string; kind: string } {
  const ref = refOf(def.for);
  return { group: parseApiVersion(ref.apiVersion).group, kind: ref.kind };
}

/**
 * Builds a controller step by step; `complete` registers it with the manager.
 *
 * @example
 * ```ts
 * manager
 *   .controller()
 *   .for(HardDisk, { predicates: [generationChanged()] })
 *   .owns(ConfigMap)
 *   .withOptions({ maxConcurrentReconciles: 2 })
 *   .complete(async (req, ctx) => {
 *     ctx.log.info({ name: req.name }, 'reconciling');
 *     return Result.done();
 *   });
 * ```
 */
export class ControllerBuilder {
  private def: { -readonly [K in keyof ControllerDefinition]?: ControllerDefinition[K] } = {};

  constructor(private readonly register: (def: ControllerDefinition, reconciler: ReconcilerLike) => void) {}

  named(name: string): this {
    this.def.name = name;
    return this;
  }

  for(kind: KindRef, options: BuilderWatchOptions = {}): this {
    if (this.def.for) throw new ManagerError('InvalidRegistration', 'a controller reconciles one kind: `for` was already called');
    this.def.for = kind;
    this.def.forPredicates = options.predicates ?? [];
    return this;
  }

  owns(kind: KindRef, options: BuilderWatchOptions = {}): this {
    this.def.owns = [...(this.def.owns ?? []), { kind, predicates: options.predicates ?? [] }];
    return this;
  }

  watches(kindOrSource: KindRef | Source, handler?: EventHandler, options: BuilderWatchOptions = {}): this {
    const entry = 'start' in kindOrSource && typeof kindOrSource.start === 'function'
      ? (kindOrSource)
      : { kind: kindOrSource as KindRef, handler: handler ?? enqueueObject(), predicates: options.predicates ?? [] };
    this.def.watches = [...(this.def.watches ?? []), entry];
    return this;
  }

  withEventFilter(predicate: Predicate): this {
    this.def.eventFilters = [...(this.def.eventFilters ?? []), predicate];
    return this;
  }

  withOptions(options: ControllerOptions): this {
    this.def.options = { ...this.def.options, ...options };
    return this;
  }

  /**
   * Declares what the reconciler writes (or reads without watching), for
   * `manager.permissions()` and `kubeloop generate rbac`.
   *
   * @example
   * ```ts
   * manager.controller().for(HardDisk).owns(ConfigMap)
   *   .withPermissions({ resource: ConfigMap, verbs: ['create', 'update', 'patch', 'delete'] })
   *   .complete(reconciler);
   * ```
   */
  withPermissions(...permissions: Permission[]): this {
    this.def.permissions = [...(this.def.permissions ?? []), ...permissions];
    return this;
  }

  complete(reconciler: ReconcilerLike): void {
    if (!this.def.for) throw new ManagerError('InvalidRegistration', 'a controller needs a `for` kind');
    this.register(this.def as ControllerDefinition, reconciler);
  }
}
