/** The one way metrics are registered: reuse a metric a registry already has (many controllers, one registry). */
import type { Registry } from 'prom-client';

/** The metric `name` of `registry`, made by `make` the first time. */
export function once<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}
