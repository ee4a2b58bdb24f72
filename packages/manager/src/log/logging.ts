/** pino logging: one JSON line per event, secrets and tokens redacted (at any depth). */
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

/** Keys whose values are never written, at any depth (compared without case: `Authorization` is a header too). */
const SENSITIVE_KEYS = new Set(['data', 'stringdata', 'token', 'bearertoken', 'password', 'authorization', 'proxy-authorization', 'client-key-data']);
const CENSOR = '[REDACTED]';
/** A bearer credential quoted in a string (an error message, a log message). */
const BEARER = /\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*/gi;
/** Cheap test for a line that may hold a sensitive key below the depth REDACT_PATHS reaches. */
const SUSPECT_KEY = /"(?:data|stringData|token|bearerToken|password|authorization|proxy-authorization|client-key-data)"\s*:/i;

function censorDeep(value: unknown, depth: number): unknown {
  if (depth > 64 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => censorDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SENSITIVE_KEYS.has(k.toLowerCase()) ? CENSOR : censorDeep(v, depth + 1);
  return out;
}

/**
 * The last line of defence, on the serialised line (so child bindings, error
 * serialisers and nesting at any depth are covered): bearer credentials in any
 * string are cut, and a line that still names a sensitive key is censored at
 * every depth. Lines without either pass untouched and unparsed.
 */
function redactLine(line: string): string {
  const cut = line.replace(BEARER, `$1 ${CENSOR}`);
  if (!SUSPECT_KEY.test(cut)) return cut;
  try {
    return `${JSON.stringify(censorDeep(JSON.parse(cut), 0))}\n`;
  } catch {
    return cut;
  }
}

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
    hooks: {
      ...config.pino?.hooks,
      streamWrite: (line: string) => redactLine(config.pino?.hooks?.streamWrite ? config.pino.hooks.streamWrite(line) : line),
    },
  };
  return config.destination ? pino(options, config.destination) : pino(options);
}
