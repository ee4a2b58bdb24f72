/**
 * Process signals: an AbortSignal for `manager.start()` that aborts on the
 * first SIGTERM or SIGINT.
 */
import { ManagerError } from './errors.js';

/**
 * An AbortSignal that aborts on the first SIGTERM or SIGINT; a second one
 * exits the process at once (as controller-runtime's SetupSignalHandler).
 *
 * @example
 * ```ts
 * await manager.start(signalHandler());
 * ```
 */
export function signalHandler(): AbortSignal {
  const ac = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (ac.signal.aborted) process.exit(1);
    ac.abort(new ManagerError('RunnableFailed', `received ${signal}`));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return ac.signal;
}
