/**
 * What the server routes to: a webhook answers the decoded JSON body posted
 * to its path. Admission (`validatingWebhook`, `mutatingWebhook`) and
 * conversion (`conversionWebhook`) webhooks implement it; so can anything else
 * that speaks JSON over the same hardened server.
 */
import type { WebhookLogger } from './logger.js';

/** Why a request was answered with a failure. */
export type WebhookProblemReason =
  /** The body is not JSON, or not the review the webhook expects. */
  | 'MalformedRequest'
  /** The body is larger than `maxBodyBytes`. */
  | 'TooLarge'
  /** The content type is not `application/json`. */
  | 'UnsupportedMediaType'
  /** The handler threw (or its promise rejected). */
  | 'HandlerError'
  /** The handler did not answer within its deadline. */
  | 'Timeout'
  /** A conversion of one of the objects failed. */
  | 'ConversionFailed';

/** A failure to answer, as the server hands it to {@link Webhook.failure}. */
export interface WebhookProblem {
  readonly reason: WebhookProblemReason;
  /** The HTTP-like code to report (400, 413, 415, 500). */
  readonly code: number;
  /** A sentence for the API server's user. */
  readonly message: string;
  /** The decoded body, when decoding got that far (so the answer can echo its uid). */
  readonly body?: unknown;
}

/** An HTTP answer: status code and a JSON body. */
export interface WebhookAnswer {
  readonly status: number;
  readonly body: unknown;
  /** Set when the answer reports a failure, for the metrics. */
  readonly problem?: WebhookProblemReason;
}

/** What a webhook gets besides the body. */
export interface WebhookCallContext {
  /** Aborts at the handler deadline (the smaller of `handlerTimeoutMs` and the API server's `timeout` parameter) and on shutdown. */
  readonly signal: AbortSignal;
  /** The server's logger. */
  readonly log: WebhookLogger;
}

/**
 * A webhook: a path and a handler of decoded JSON bodies.
 *
 * @example
 * ```ts
 * const echo: Webhook = {
 *   path: '/echo',
 *   handle: async (body) => ({ status: 200, body }),
 *   failure: (problem) => ({ status: problem.code, body: { message: problem.message } }),
 * };
 * server.register(echo);
 * ```
 */
export interface Webhook {
  /** The URL path it serves, starting with `/`. */
  readonly path: string;
  /** Answer a decoded body. A throw or rejection is answered through {@link failure} with reason `HandlerError`. */
  handle(body: unknown, context: WebhookCallContext): Promise<WebhookAnswer>;
  /** The answer for a request that could not be handled. Must not throw. */
  failure(problem: WebhookProblem): WebhookAnswer;
}
