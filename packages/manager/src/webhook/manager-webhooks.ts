/**
 * The manager's webhook server (`ManagerOptions.webhook`): made with the
 * manager's metrics and logger, run in the servers group on every replica,
 * in `/readyz`; admission webhooks and conversions registered on it
 * (`manager.webhook(Kind)`, `registerWebhook(Class)`), and the list
 * `kubeloop generate webhooks` writes from.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { DependencyContainer } from 'tsyringe';
import type { KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { createWebhookServer, prometheusWebhookMetrics } from '@kubeloop/webhook';
import type { Defaulter, WebhookServer } from '@kubeloop/webhook';
import { construct } from '../container.js';
import { webhookRegistrationOf } from '../controller/di.js';
import type { AdmissionClass, WebhookRegistration } from '../controller/di.js';
import { ManagerError } from '../errors.js';
import type { ManagerOptions } from '../options.js';
import type { Probes } from '../readiness.js';
import type { RunnableGroup } from '../runnable-groups.js';
import { ConversionEndpoint, webhookBuilder } from './builder.js';
import type { RegisteredWebhook, WebhookBuilder } from './builder.js';

export class ManagerWebhooks {
  readonly server: WebhookServer | undefined;
  private conversionEndpoint: ConversionEndpoint | undefined;
  private readonly records: RegisteredWebhook[] = [];

  constructor(options: ManagerOptions['webhook'], deps: { readonly registry: Registry; readonly logger: Logger; readonly servers: RunnableGroup; readonly probes: Probes; readonly name: string }) {
    if (!options) return;
    const server = createWebhookServer({
      ...options,
      metrics: options.metrics ?? prometheusWebhookMetrics(deps.registry),
      log: options.log ?? deps.logger.child({ component: 'webhook' }),
    });
    this.server = server;
    // Every replica serves admissions and conversions, leader or not, until the others have stopped.
    // A server with nothing registered at start does not listen, nor ask for a certificate: a
    // project's main can configure it before it has any webhook.
    let serving = false;
    const run = async (signal: AbortSignal): Promise<void> => {
      if (server.paths.length === 0) {
        deps.logger.info({ component: 'webhook' }, 'no webhook is registered: the webhook server does not start');
        if (signal.aborted) return;
        await new Promise<void>((done) => signal.addEventListener('abort', () => done(), { once: true }));
        return;
      }
      serving = true;
      await server.start(signal);
    };
    deps.servers.add({ run, name: deps.name });
    deps.probes.readyz.set('webhook', () => (serving || server.paths.length > 0 ? server.readyCheck() : undefined));
  }

  webhook<T extends KubeObject>(kind: ResourceDescriptor<T>): WebhookBuilder<T> {
    if (!this.server) {
      throw new ManagerError('InvalidOptions', `webhook(${kind.kind}) needs a webhook server: set createManager({ webhook: { certificates, port } })`);
    }
    this.conversionEndpoint ??= new ConversionEndpoint(this.server);
    return webhookBuilder(kind, this.server, this.conversionEndpoint, (w) => this.records.push(w));
  }

  registered(): RegisteredWebhook[] {
    return [...this.records];
  }

  register(container: DependencyContainer, webhookClass: AdmissionClass, registration?: WebhookRegistration): void {
    const reg = registration ?? webhookRegistrationOf(webhookClass);
    if (!reg) throw new ManagerError('InvalidRegistration', `${webhookClass.name} has no @webhook({ for }) decoration and no registration was given`);
    const instance = construct(container, webhookClass, reg.inject) as Record<string, unknown>;
    const validates = ['validateCreate', 'validateUpdate', 'validateDelete'].some((m) => typeof instance[m] === 'function');
    const defaults = typeof instance['default'] === 'function';
    if (!validates && !defaults) throw new ManagerError('InvalidRegistration', `${webhookClass.name} has no validateCreate, validateUpdate, validateDelete or default method`);
    const builder = this.webhook(reg.for).withOptions(reg.options ?? {});
    if (validates) builder.withValidator(instance);
    if (defaults) builder.withDefaulter(instance as unknown as Defaulter<KubeObject>);
    builder.complete();
  }
}
