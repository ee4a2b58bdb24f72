/**
 * The fake API server's selectors: `@kubeloop/client`'s parser (the one
 * kubeloop has, checked against the real API server), with its refusals
 * answered as the server answers them, 400 BadRequest.
 */
import { isClientError, matchesLabels, parseFieldSelector as parseFields, parseLabelSelector as parseLabels } from '@kubeloop/client';
import { labelKeyProblem, labelKeyProblems, labelValueProblem, labelValueProblems } from '@kubeloop/client/internal';
import { badRequest } from './status.js';

export { labelKeyProblem, labelKeyProblems, labelValueProblem, labelValueProblems };

export interface LabelSelector {
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  readonly empty: boolean;
}

function asBadRequest<T>(parse: () => T, wordsOfCause = false): T {
  try {
    return parse();
  } catch (e) {
    // the client names the selector before the parser's words (for its users) and keeps the words as the cause
    if (isClientError(e)) throw badRequest(wordsOfCause && e.cause instanceof Error ? e.cause.message : e.message);
    throw e;
  }
}

/** Parse a `labelSelector` query value; a refusal is the parser's error alone, as the server's 400 says it. */
export function parseLabelSelector(text: string | undefined): LabelSelector {
  const reqs = asBadRequest(() => parseLabels(text), true);
  return { empty: reqs.length === 0, matches: (labels) => matchesLabels(reqs, labels) };
}

export interface FieldRequirement {
  readonly field: string;
  readonly op: '=' | '!=';
  readonly value: string;
}

/** Parse a `fieldSelector` query value into requirements (checked against the kind's fields by the caller). */
export function parseFieldSelector(text: string | undefined): FieldRequirement[] {
  return asBadRequest(() => parseFields(text)).map((r) => ({ field: r.path, op: r.equal ? '=' : '!=', value: r.value }));
}
