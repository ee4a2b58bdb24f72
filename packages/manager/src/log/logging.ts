/**
 * pino logging: one JSON line per event; Secrets (by kind, with their
 * last-applied annotation), sensitive keys and bearer tokens are redacted at
 * any depth (see ./redact.ts); errors are written with their cause chain.
 */
import { pino } from 'pino';
import type { Logger, LoggerOptions } from 'pino';
import { redactLine } from './redact.js';

/** How many causes (and errors held in fields) deep an error is written. */
const MAX_ERROR_DEPTH = 8;

/**
 * pino's `err` serialiser, with the whole cause chain as structure: each
 * error's type, message, stack, enumerable fields and `cause` (an Error or
 * any value: a Status, the object being written), to {@link MAX_ERROR_DEPTH}
 * levels, cycles cut. Unlike pino's own it never writes to the error (a
 * frozen error logs fine). Whatever it produces goes through the same
 * redaction as every other field.
 */
export function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const seen = new Set<object>();
  const one = (e: Error, depth: number): Record<string, unknown> => {
    seen.add(e);
    const out: Record<string, unknown> = { type: typeof e.constructor === 'function' && e.constructor.name ? e.constructor.name : e.name, message: e.message, stack: e.stack };
    const nested = (v: unknown): unknown => {
      if (!(v instanceof Error)) return v;
      if (seen.has(v)) return '[Circular]';
      return depth + 1 >= MAX_ERROR_DEPTH ? `[${v.name}: ${v.message}]` : one(v, depth + 1);
    };
    if (e instanceof AggregateError && Array.isArray(e.errors)) out['aggregateErrors'] = (e.errors as unknown[]).slice(0, 32).map(nested);
    for (const key in e) {
      if (out[key] === undefined) out[key] = nested((e as unknown as Record<string, unknown>)[key]);
    }
    if (e.cause !== undefined && out['cause'] === undefined) out['cause'] = nested(e.cause);
    return out;
  };
  try {
    return one(err, 0);
  } catch {
    // a getter that throws, a revoked proxy...: the essentials, read defensively
    try {
      return { type: err.name, message: err.message, stack: err.stack };
    } catch {
      return { type: 'Error', message: 'unserialisable error' };
    }
  }
}

/** Options for {@link createLogger}. */
export interface LoggerConfig {
  /** Level. Default: `KUBELOOP_LOG_LEVEL`, else `LOG_LEVEL`, else `info`. */
  readonly level?: string;
  /**
   * Where lines go. Default: stdout, written synchronously, so a line logged
   * just before `process.exit()` is never lost (pino's own default writes
   * stdout asynchronously and its `flush(cb)` can call back before a write in
   * flight has finished).
   */
  readonly destination?: NodeJS.WritableStream;
  /**
   * Extra pino options. Redaction always applies: your `hooks.streamWrite`
   * runs first, then ours. `serializers.err` replaces {@link serializeError}.
   * Default: none.
   */
  readonly pino?: LoggerOptions;
}

/**
 * The manager's root logger.
 *
 * @example
 * ```ts
 * const log = createLogger({ level: 'debug' });
 * log.info({ controller: 'harddisk' }, 'starting');
 * ```
 */
export function createLogger(config: LoggerConfig = {}): Logger {
  const level = config.level ?? process.env['KUBELOOP_LOG_LEVEL'] ?? process.env['LOG_LEVEL'] ?? 'info';
  const options: LoggerOptions = {
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...config.pino,
    serializers: { err: serializeError, ...config.pino?.serializers },
    hooks: {
      ...config.pino?.hooks,
      streamWrite: (line: string) => redactLine(config.pino?.hooks?.streamWrite ? config.pino.hooks.streamWrite(line) : line),
    },
  };
  return pino(options, config.destination ?? pino.destination({ dest: 1, sync: true }));
}
