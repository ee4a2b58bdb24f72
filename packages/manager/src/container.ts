/**
 * The manager's dependency-injection container: a child of the application's
 * tsyringe container holding what the manager offers under `TOKENS`, and the
 * one way classes registered with the manager (reconcilers, admission
 * webhooks) are constructed from it.
 */
import 'reflect-metadata';
import type { Logger } from 'pino';
import type { DependencyContainer, InjectionToken } from 'tsyringe';
import type { Cluster } from './cluster.js';
import { TOKENS } from './controller/di.js';
import { describeError, ManagerError } from './errors.js';

/** A child of `parent` with the cluster's parts, the manager's logger and the manager registered under `TOKENS`. */
export function createManagerContainer(parent: DependencyContainer, cluster: Cluster, logger: Logger, manager: object): DependencyContainer {
  const container = parent.createChildContainer();
  container.registerInstance(TOKENS.Client, cluster.client);
  container.registerInstance(TOKENS.ApiReader, cluster.apiReader);
  container.registerInstance(TOKENS.Logger, logger);
  container.registerInstance(TOKENS.EventRecorderProvider, cluster.recorders);
  container.registerInstance(TOKENS.Scheme, cluster.scheme);
  container.registerInstance(TOKENS.Cache, cluster.cache);
  container.registerInstance(TOKENS.Cluster, cluster);
  container.registerInstance(TOKENS.Manager, manager);
  return container;
}

/**
 * An instance of `cls`: its constructor's parameters resolved from `inject`
 * when given (no decorator metadata needed), else the class resolved by
 * tsyringe (needs metadata or `@inject`).
 *
 * @throws {@link ManagerError} `Resolution` when a parameter cannot be resolved or the constructor throws.
 */
export function construct<T>(container: DependencyContainer, cls: new (...args: never[]) => T, inject: readonly InjectionToken[] | undefined): T {
  try {
    return inject ? new cls(...(inject.map((t) => container.resolve(t) as unknown) as never[])) : container.resolve(cls as unknown as InjectionToken<T>);
  } catch (cause) {
    throw new ManagerError('Resolution', `cannot construct ${cls.name}: ${describeError(cause)}`, { cause });
  }
}
