/**
 * Process signals: an AbortSignal for `manager.start()` that aborts on the
 * first SIGTERM or SIGINT, and the promise that goes with it: the process
 * ends within the manager's graceful bound, whatever still holds it.
 */
import type { Logger } from 'pino';
import { ManagerError } from './errors.js';

/** Signals made by {@link signalHandler}: a manager started with one may end the process. */
const processSignals = new WeakSet<AbortSignal>();

/**
 * An AbortSignal that aborts on the first SIGTERM or SIGINT; a second one
 * exits the process at once with status 1 (as controller-runtime's
 * SetupSignalHandler). A manager started with it also ends the process, with
 * status 1, when `gracefulShutdownTimeoutMs` (30 s) have passed since the
 * first signal and something (a reconcile that ignores its signal, a timer)
 * still keeps it alive: `await manager.start(signalHandler())` is the whole
 * main loop, no `process.exit` needed.
 *
 * @example
 * ```ts
 * await manager.start(signalHandler());
 * ```
 */
export function signalHandler(): AbortSignal {
  const ac = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (ac.signal.aborted) {
      process.stderr.write(`received ${signal} again: exiting at once\n`);
      process.exit(1);
    }
    ac.abort(new ManagerError('RunnableFailed', `received ${signal}`));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  processSignals.add(ac.signal);
  return ac.signal;
}

/**
 * When `signal` came from {@link signalHandler} and has aborted: end the
 * process `ms` from now if it is still alive then. The timer is unref'd: a
 * process that ends on its own is not held by it.
 */
export function exitWithin(signal: AbortSignal | undefined, ms: number, log: Logger): void {
  if (signal === undefined || !signal.aborted || !processSignals.has(signal)) return;
  setTimeout(() => {
    log.error({ gracefulShutdownTimeoutMs: ms }, `still running ${ms} ms after ${describeReason(signal.reason)} (work that ignores its signal); exiting`);
    log.flush(() => process.exit(1));
    // A logger that never calls back must not keep the process either.
    setTimeout(() => process.exit(1), 1_000).unref();
  }, ms).unref();
}

function describeReason(reason: unknown): string {
  return reason instanceof ManagerError ? reason.message : 'the stop signal';
}
