/**
 * Controllers registered through dependency injection (tsyringe). Two
 * styles, both tested: the `@controller(...)` decorator with tsyringe's
 * `@injectable()` / `@inject(token)` where the build emits decorator
 * metadata (tsc), and an explicit `inject` list that needs no metadata at all
 * (esbuild, tsx, vitest).
 */
import 'reflect-metadata';
import type { InjectionToken } from 'tsyringe';
import type { ResourceDescriptor } from '@kubeloop/scheme';
import type { AdmissionWebhookOptions } from '@kubeloop/webhook';
import type { ControllerDefinition } from './builder.js';
import type { Reconciler } from './reconcile.js';

/** Tokens of what the manager puts in its container. */
export const TOKENS = Object.freeze({
  /** The manager's client (reads from the cache, writes to the API server). */
  Client: Symbol.for('kubeloop.Client'),
  /** A client whose reads always go to the API server. */
  ApiReader: Symbol.for('kubeloop.ApiReader'),
  /** The manager's pino logger. */
  Logger: Symbol.for('kubeloop.Logger'),
  /** An EventRecorderProvider: `recorderFor(name)`. */
  EventRecorderProvider: Symbol.for('kubeloop.EventRecorderProvider'),
  /** The scheme. */
  Scheme: Symbol.for('kubeloop.Scheme'),
  /** The informer cache. */
  Cache: Symbol.for('kubeloop.Cache'),
  /** The manager's cluster (client, apiReader, cache, mapper, recorders). */
  Cluster: Symbol.for('kubeloop.Cluster'),
  /** The manager itself. */
  Manager: Symbol.for('kubeloop.Manager'),
});

/** A reconciler class. */
export type ReconcilerClass = new (...args: never[]) => Reconciler;

/** A controller definition plus, for builds without decorator metadata, the constructor's tokens. */
export interface ControllerRegistration extends ControllerDefinition {
  /** Tokens resolved for each constructor parameter, in order. Default: tsyringe resolves the class (needs metadata or @inject). */
  readonly inject?: readonly InjectionToken[];
}

const DEFINITIONS = new WeakMap<object, ControllerRegistration>();

/**
 * Declares a reconciler class a controller: what it is `for`, what it
 * `owns` and `watches`, its predicates and options. Register the class with
 * `manager.register(Class)`. Works as a legacy (experimentalDecorators) or
 * a standard class decorator.
 *
 * @example
 * ```ts
 * @controller({ for: HardDisk, owns: [ConfigMap] })
 * @injectable()
 * class HardDiskReconciler implements Reconciler {
 *   constructor(@inject(TOKENS.Client) private readonly client: Client) {}
 *   async reconcile(req: Request, ctx: ReconcileContext) {
 *     const disk = await this.client.get(HardDisk, { namespace: req.namespace!, name: req.name });
 *     ctx.log.info({ size: disk.spec?.size }, 'reconciling');
 *   }
 * }
 * manager.register(HardDiskReconciler);
 * ```
 */
export function controller(registration: ControllerRegistration) {
  return <C extends ReconcilerClass>(target: C, _context?: unknown): C => {
    DEFINITIONS.set(target, registration);
    return target;
  };
}

/** The registration a class was decorated with, if any. */
export function controllerRegistrationOf(target: object): ControllerRegistration | undefined {
  return DEFINITIONS.get(target);
}

/** An admission webhook class: a validator (`validateCreate` / `validateUpdate` / `validateDelete`), a defaulter (`default`), or both. */
export type AdmissionClass = new (...args: never[]) => object;

/** What an admission webhook class is for, and its constructor's tokens. */
export interface WebhookRegistration {
  /** The kind it admits. */
  readonly for: ResourceDescriptor;
  /** Tokens resolved for each constructor parameter, in order. Default: tsyringe resolves the class (needs metadata or @inject). */
  readonly inject?: readonly InjectionToken[];
  /** Paths of the validating and mutating webhooks. Default: controller-runtime's. */
  readonly options?: { readonly validate?: AdmissionWebhookOptions; readonly mutate?: AdmissionWebhookOptions };
}

const WEBHOOKS = new WeakMap<object, WebhookRegistration>();

/**
 * Declares a class the admission webhooks of a kind: its `validateCreate`,
 * `validateUpdate` and `validateDelete` (a validator) and its `default` (a
 * defaulter), with dependencies from the manager's container. Register it
 * with `manager.registerWebhook(Class)`.
 *
 * @example
 * ```ts
 * @webhook({ for: HardDisk })
 * @injectable()
 * class HardDiskAdmission implements Validator<HardDisk>, Defaulter<HardDisk> {
 *   constructor(private readonly catalog: StorageClassCatalog) {}
 *   validateCreate(disk: HardDisk) { return hardDiskSpecErrors(disk, this.catalog); }
 *   default(disk: HardDisk) { if (disk.spec) disk.spec.storageClass ??= 'standard'; }
 * }
 * manager.registerWebhook(HardDiskAdmission);
 * ```
 */
export function webhook(registration: WebhookRegistration) {
  return <C extends AdmissionClass>(target: C, _context?: unknown): C => {
    WEBHOOKS.set(target, registration);
    return target;
  };
}

/** The webhook registration a class was decorated with, if any. */
export function webhookRegistrationOf(target: object): WebhookRegistration | undefined {
  return WEBHOOKS.get(target);
}
