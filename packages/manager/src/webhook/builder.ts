/**
 * Admission webhooks per kind, registered on the manager's webhook server
 * (controller-runtime's `ctrl.NewWebhookManagedBy(mgr).For(&T{})`).
 */
import type { KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { conversionWebhook, mutatePath, mutatingWebhook, validatePath, validatingWebhook } from '@kubeloop/webhook';
import type { AdmissionWebhookOptions, Defaulter, DefaulterFn, KindConversion, Validator, Webhook, WebhookServer } from '@kubeloop/webhook';
import { ManagerError } from '../errors.js';

/**
 * Builds the admission webhooks of one kind: a validator at
 * `/validate-<group>-<version>-<kind>`, a defaulter at `/mutate-...`
 * (controller-runtime's paths, so kubebuilder-style webhook manifests fit).
 *
 * @example
 * ```ts
 * manager.webhook(HardDisk)
 *   .withDefaulter((disk) => { if (disk.spec) disk.spec.storageClass ??= 'standard'; })
 *   .withValidator({ validateCreate: (disk) => (disk.spec?.size ? undefined : [fieldError.required('spec.size')]) })
 *   .complete();
 * ```
 */
export interface WebhookBuilder<T extends KubeObject> {
  /** Validate creates, updates (with the old object) and deletes of the kind. */
  withValidator(validator: Validator<T>): WebhookBuilder<T>;
  /** Default objects of the kind on create and update (the answer is the JSON patch of what changed). */
  withDefaulter(defaulter: Defaulter<T> | DefaulterFn<T>): WebhookBuilder<T>;
  /**
   * Convert the kind between its versions at `/convert` (the CRD's
   * conversion stanza, `crd.conversion` of a schema-first kind): `conversion`
   * is `defineConversion(hub, spokes)` of this kind. One `/convert` serves
   * every kind given a conversion on this manager.
   */
  withConversion(conversion: KindConversion<T>): WebhookBuilder<T>;
  /** Options of both admission webhooks (a custom path, say). Default: none. */
  withOptions(options: { readonly validate?: AdmissionWebhookOptions; readonly mutate?: AdmissionWebhookOptions }): WebhookBuilder<T>;
  /**
   * Register what was given on the manager's webhook server.
   *
   * @throws {@link ManagerError} `InvalidRegistration` with no validator, defaulter or conversion, a conversion of another kind or one already given, or a path already taken.
   */
  complete(): void;
}

/** An operation an admission webhook is called for. */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE';

/**
 * A webhook registered with `manager.webhook(Kind)` (or
 * `manager.registerWebhook`), as the API server must be told of it: which
 * configuration (validating, mutating) or CRD conversion calls which path,
 * for which kind and operations. `manager.registeredWebhooks()` lists them;
 * `kubeloop generate webhooks` writes the webhook configurations from them,
 * as `kubeloop generate rbac` writes roles from `manager.permissions()`.
 */
export interface RegisteredWebhook {
  /** `validating` and `mutating` are admission webhooks; `conversion` is the kind's CRD conversion at `/convert`. */
  readonly type: 'validating' | 'mutating' | 'conversion';
  /** The kind (for a conversion, its hub). */
  readonly kind: ResourceDescriptor;
  /** The path the webhook server serves it at. */
  readonly path: string;
  /** The operations the API server should send (admission only): a validator's create, update and delete methods; CREATE and UPDATE for a defaulter. Empty for a conversion. */
  readonly operations: readonly AdmissionOperation[];
}

/**
 * The manager's one `/convert` endpoint: the kinds' conversions are added as
 * their webhooks are built; the endpoint, registered on the first, always
 * answers with all of them.
 */
export class ConversionEndpoint {
  private readonly conversions: KindConversion[] = [];
  private current: Webhook | undefined;

  constructor(private readonly server: WebhookServer) {}

  add(conversion: KindConversion): void {
    const key = `${conversion.hub.kind}.${conversion.hub.group}`;
    if (this.conversions.some((c) => `${c.hub.kind}.${c.hub.group}` === key)) throw new Error(`${key} has a conversion already`);
    const next = conversionWebhook([...this.conversions, conversion]);
    if (!this.current) {
      const endpoint: Webhook = {
        path: next.path,
        handle: (body, context) => this.current!.handle(body, context),
        failure: (problem) => this.current!.failure(problem),
      };
      this.server.register(endpoint);
    }
    this.conversions.push(conversion);
    this.current = next;
  }
}

/** @internal What a validator's methods say the API server should send it. */
function validatedOperations<T extends KubeObject>(validator: Validator<T>): AdmissionOperation[] {
  const ops: AdmissionOperation[] = [];
  if (typeof validator.validateCreate === 'function') ops.push('CREATE');
  if (typeof validator.validateUpdate === 'function') ops.push('UPDATE');
  if (typeof validator.validateDelete === 'function') ops.push('DELETE');
  return ops;
}

/** @internal `registered` receives each webhook as complete() puts it on the server. */
export function webhookBuilder<T extends KubeObject>(kind: ResourceDescriptor<T>, server: WebhookServer, conversions: ConversionEndpoint, registered: (webhook: RegisteredWebhook) => void = () => undefined): WebhookBuilder<T> {
  let validator: Validator<T> | undefined;
  let defaulter: Defaulter<T> | DefaulterFn<T> | undefined;
  let conversion: KindConversion<T> | undefined;
  let options: { readonly validate?: AdmissionWebhookOptions; readonly mutate?: AdmissionWebhookOptions } = {};
  let done = false;
  const builder: WebhookBuilder<T> = {
    withValidator(v) {
      validator = v;
      return builder;
    },
    withDefaulter(d) {
      defaulter = d;
      return builder;
    },
    withConversion(c) {
      conversion = c;
      return builder;
    },
    withOptions(o) {
      options = o;
      return builder;
    },
    complete() {
      const name = `${kind.kind}.${kind.version}.${kind.group || 'core'}`;
      if (done) throw new ManagerError('InvalidRegistration', `the webhooks of ${name} are already registered`);
      if (!validator && !defaulter && !conversion) throw new ManagerError('InvalidRegistration', `webhook(${name}) needs withValidator(...), withDefaulter(...) or withConversion(...) before complete()`);
      if (conversion && (conversion.hub.group !== kind.group || conversion.hub.kind !== kind.kind)) {
        throw new ManagerError('InvalidRegistration', `webhook(${name}).withConversion: the conversion is of ${conversion.hub.kind}.${conversion.hub.group}, not of this kind`);
      }
      try {
        const webhooks: RegisteredWebhook[] = [];
        if (conversion) {
          conversions.add(conversion);
          webhooks.push({ type: 'conversion', kind: conversion.hub, path: '/convert', operations: [] });
        }
        if (defaulter) {
          server.register(mutatingWebhook(kind, defaulter, options.mutate));
          webhooks.push({ type: 'mutating', kind, path: options.mutate?.path ?? mutatePath(kind), operations: ['CREATE', 'UPDATE'] });
        }
        if (validator) {
          server.register(validatingWebhook(kind, validator, options.validate));
          webhooks.push({ type: 'validating', kind, path: options.validate?.path ?? validatePath(kind), operations: validatedOperations(validator) });
        }
        for (const w of webhooks) registered(w);
      } catch (cause) {
        throw new ManagerError('InvalidRegistration', `webhook(${name}): ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
      }
      done = true;
    },
  };
  return builder;
}
