/**
 * Admission webhooks per kind, registered on the manager's webhook server
 * (controller-runtime's `ctrl.NewWebhookManagedBy(mgr).For(&T{})`).
 */
import type { KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { mutatingWebhook, validatingWebhook } from '@kubeloop/webhook';
import type { AdmissionWebhookOptions, Defaulter, DefaulterFn, Validator, WebhookServer } from '@kubeloop/webhook';
import { ManagerError } from '../errors.js';

/**
 * Builds the admission webhooks of one kind: a validator at
 * `/validate-<group>-<version>-<kind>`, a defaulter at `/mutate-...`
 * (controller-runtime's paths, so kubebuilder-style webhook manifests fit).
 *
 * @example
 * ```ts
 * manager.webhook(HardDisk)
 *   .withDefaulter((disk) => { disk.spec.storageClass ??= 'standard'; })
 *   .withValidator({ validateCreate: (disk) => (disk.spec.size ? undefined : [fieldError.required('spec.size')]) })
 *   .complete();
 * ```
 */
export interface WebhookBuilder<T extends KubeObject> {
  /** Validate creates, updates (with the old object) and deletes of the kind. */
  withValidator(validator: Validator<T>): WebhookBuilder<T>;
  /** Default objects of the kind on create and update (the answer is the JSON patch of what changed). */
  withDefaulter(defaulter: Defaulter<T> | DefaulterFn<T>): WebhookBuilder<T>;
  /** Options of both webhooks (a custom path, say). Default: none. */
  withOptions(options: { readonly validate?: AdmissionWebhookOptions; readonly mutate?: AdmissionWebhookOptions }): WebhookBuilder<T>;
  /**
   * Register what was given on the manager's webhook server.
   *
   * @throws {@link ManagerError} `InvalidRegistration` with neither a validator nor a defaulter, or a path already taken.
   */
  complete(): void;
}

/** @internal */
export function webhookBuilder<T extends KubeObject>(kind: ResourceDescriptor<T>, server: WebhookServer): WebhookBuilder<T> {
  let validator: Validator<T> | undefined;
  let defaulter: Defaulter<T> | DefaulterFn<T> | undefined;
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
    withOptions(o) {
      options = o;
      return builder;
    },
    complete() {
      const name = `${kind.kind}.${kind.version}.${kind.group || 'core'}`;
      if (done) throw new ManagerError('InvalidRegistration', `the webhooks of ${name} are already registered`);
      if (!validator && !defaulter) throw new ManagerError('InvalidRegistration', `webhook(${name}) needs withValidator(...) or withDefaulter(...) before complete()`);
      try {
        if (defaulter) server.register(mutatingWebhook(kind, defaulter, options.mutate));
        if (validator) server.register(validatingWebhook(kind, validator, options.validate));
      } catch (cause) {
        throw new ManagerError('InvalidRegistration', `webhook(${name}): ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
      }
      done = true;
    },
  };
  return builder;
}
