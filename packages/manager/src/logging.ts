/** pino logging: one JSON line per event, secrets and tokens redacted. */
import { pino } from 'pino';
import type { Logger, LoggerOptions } from 'pino';

/** Paths pino censors: Secret payloads, bearer tokens, credentials. */
export const REDACT_PATHS = [
  'data',
  'stringData',
  '*.data',
  '*.stringData',
  'token',
  '*.token',
  'bearerToken',
  '*.bearerToken',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'client-key-data',
  '*.client-key-data',
];

/** Options for {@link createLogger}. */
export interface LoggerConfig {
  /** Level. Default: `KUBELOOP_LOG_LEVEL`, else `LOG_LEVEL`, else `info`. */
  readonly level?: string;
  /** Where lines go. Default: stdout. */
  readonly destination?: NodeJS.WritableStream;
  /** Extra pino options. */
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
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...config.pino,
  };
  return config.destination ? pino(options, config.destination) : pino(options);
}
