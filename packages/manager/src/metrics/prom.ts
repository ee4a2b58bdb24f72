// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- the ambient declarations of those files; tsc finds them through tsconfig, typescript-eslint only through this
/// <reference path="./prom-client-files.d.ts" />
/**
 * prom-client, taken from its own files rather than its index. The index also
 * loads what an operator never uses: the Pushgateway (node:zlib), Summary,
 * the cluster AggregatorRegistry, and `collectDefaultMetrics`, whose
 * `process_cpu_*` counters load `@opentelemetry/api` (51 modules) to label
 * exemplars: in the example operator 0.7 MiB of RSS held and 3 MiB of peak
 * (docs/benchmarks.md, "prom-client's files"). These are prom-client's own classes, so a registry made with
 * `new Registry()` from 'prom-client' takes these metrics as before; the
 * types are its index's. The file layout is prom-client 15's (the
 * dependency range pins the major).
 */
import type * as Prom from 'prom-client';
import RegistryClass from 'prom-client/lib/registry.js';
import CounterClass from 'prom-client/lib/counter.js';
import GaugeClass from 'prom-client/lib/gauge.js';
import HistogramClass from 'prom-client/lib/histogram.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import eventLoopLag from 'prom-client/lib/metrics/eventLoopLag.js';
import processResources from 'prom-client/lib/metrics/processResources.js';
import processHandles from 'prom-client/lib/metrics/processHandles.js';
import processRequests from 'prom-client/lib/metrics/processRequests.js';
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import version from 'prom-client/lib/metrics/version.js';
import gc from 'prom-client/lib/metrics/gc.js';

export const Registry = RegistryClass as typeof Prom.Registry;
export type Registry = Prom.Registry;
export const Counter = CounterClass as typeof Prom.Counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = GaugeClass as typeof Prom.Gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = HistogramClass as typeof Prom.Histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;

/**
 * `process_cpu_user_seconds_total`, `process_cpu_system_seconds_total` and
 * `process_cpu_seconds_total`, as prom-client's default metrics name them,
 * without its exemplar support. They count from the process's start, as
 * Prometheus' Go process collector does (prom-client's count from when they
 * were registered).
 */
function registerProcessCpu(registry: Prom.Registry): void {
  let last = { user: 0, system: 0 };
  const registers = [registry];
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers,
    // One metric's collect sets all three, as prom-client does.
    collect() {
      const now = process.cpuUsage();
      user.inc((now.user - last.user) / 1e6);
      system.inc((now.system - last.system) / 1e6);
      total.inc((now.user - last.user + now.system - last.system) / 1e6);
      last = now;
    },
  });
  const system = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers });
  const total = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers });
}

/**
 * prom-client's default process and Node.js metrics (what its
 * `collectDefaultMetrics` registers, with its defaults), from its own files,
 * with the CPU counters above in place of its exemplar-capable ones.
 */
export function registerProcessAndNodeMetrics(registry: Prom.Registry): void {
  registerProcessCpu(registry);
  const config = { eventLoopMonitoringPrecision: 10 };
  // processResources needs process.getActiveResourcesInfo, which every Node this project supports (>= 22.19) has.
  const rest = [processStartTime, osMemoryHeap, processOpenFileDescriptors, processMaxFileDescriptors, eventLoopLag, processResources, processHandles, processRequests, heapSizeAndUsed, heapSpacesSizeAndUsed, version, gc];
  for (const register of rest) register(registry, config);
}
