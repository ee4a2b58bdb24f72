/** prom-client's default process and Node.js metrics, registered once per registry. */
import type { Registry } from 'prom-client';
import { registerProcessAndNodeMetrics } from './prom.js';

/** Registries that already have the default metrics (registering twice throws in prom-client). */
const registered = new WeakSet<Registry>();

/** Register `process_*` and `nodejs_*` metrics in `registry` unless it has them already. */
export function registerDefaultMetrics(registry: Registry): void {
  if (registered.has(registry) || registry.getSingleMetric('process_cpu_user_seconds_total') !== undefined) return;
  registered.add(registry);
  registerProcessAndNodeMetrics(registry);
}
