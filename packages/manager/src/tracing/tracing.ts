/**
 * Starts and stops tracing for managers: the OpenTelemetry tracer is
 * imported (dynamically) by the first manager of the process that has
 * tracing on, installed in the client's process-wide tracing slot, and
 * shut down (spans flushed) when the last such manager stops.
 */
import { setTracer } from '@kubeloop/client/internal';
import { describeError, ManagerError } from '../errors.js';
import type { TracingConfig } from './config.js';
import type { OtelTracing } from './otel-tracer.js';

let shared: { readonly running: Promise<OtelTracing>; refs: number } | undefined;

/**
 * Start tracing as `config` says, or join tracing a manager of this
 * process already started. Resolves to the function that leaves it again
 * (flushing the spans; the last one out shuts tracing down).
 */
export async function startTracing(config: TracingConfig): Promise<() => Promise<void>> {
  if (!shared) {
    const running = import('./otel-tracer.js').then(
      (m) => {
        const t = m.startOtelTracing(config);
        setTracer(t.tracer);
        return t;
      },
      (err: unknown) => {
        shared = undefined;
        throw new ManagerError('InvalidOptions', `tracing is on but the OpenTelemetry SDK could not be loaded (${describeError(err)}): reinstall @kubeloop/manager with its dependencies, or set OTEL_SDK_DISABLED=true`, { cause: err });
      },
    );
    shared = { running, refs: 0 };
  }
  const mine = shared;
  mine.refs++;
  let tracing: OtelTracing;
  try {
    tracing = await mine.running;
  } catch (err) {
    mine.refs--;
    throw err;
  }
  let left = false;
  return async () => {
    if (left) return;
    left = true;
    if (--mine.refs > 0) return tracing.flush().catch(() => undefined);
    if (shared === mine) shared = undefined;
    setTracer(undefined);
    await tracing.shutdown().catch(() => undefined);
  };
}
