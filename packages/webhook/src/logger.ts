/**
 * The logger the webhook package writes to: the subset of pino's `Logger`
 * it uses, so a manager's pino logger (or any child of it) fits as is.
 */

/** One log method: structured fields, then a message. */
export type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * Where the webhook server, the certificate sources and the token authorizer
 * log. A pino `Logger` satisfies it.
 *
 * @example
 * ```ts
 * const log: WebhookLogger = { debug() {}, info: (f, m) => console.log(m, f), warn: (f, m) => console.warn(m, f), error: (f, m) => console.error(m, f) };
 * createWebhookServer({ certificates, log });
 * ```
 */
export interface WebhookLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

const nothing: LogFn = () => undefined;

/**
 * A logger that drops everything: the default.
 *
 * @example
 * ```ts
 * await hook.handle(body, { signal: AbortSignal.timeout(1000), log: silentLogger });
 * ```
 */
export const silentLogger: WebhookLogger = Object.freeze({ debug: nothing, info: nothing, warn: nothing, error: nothing });
