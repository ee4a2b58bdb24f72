/**
 * The fake API server's selectors: `@kubeloop/client`'s parser (the one
 * kubeloop has, checked against the real API server), with its refusals
 * answered as the server answers them, 400 BadRequest.
 */
import { isClientError, matchesLabels, parseFieldSelector as parseFields, parseLabelSelector as parseLabels } from '@kubeloop/client';
import { labelKeyProblem, labelValueProblem } from '@kubeloop/client/internal';
import { badRequest } from './status.js';

export { labelKeyProblem, labelValueProblem };

export interface LabelSelector {
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  readonly empty: boolean;
}

function asBadRequest<T>(parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (isClientError(e)) throw badRequest(e.message);
    throw e;
  }
}

/** Parse a `labelSelector` query value. */
export function parseLabelSelector(text: string | undefined): LabelSelector {
  const reqs = asBadRequest(() => parseLabels(text));
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
