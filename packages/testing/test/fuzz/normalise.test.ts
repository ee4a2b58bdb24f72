/**
 * The differential fuzzer's comparison of refusals with several causes
 * (requests.ts `normalise`): causes in one map (Go validates a map's entries
 * in random order) compare as a set, the message's list with them; causes of
 * different fields, or list items, keep their order. The answers below are
 * kube-apiserver v1.37.2's (from a random run's report), reordered as its
 * next request could have them.
 */
import { describe, expect, it } from 'vitest';
import { normalise } from './requests.js';
import type { RawAnswer } from './requests.js';

const FINALIZER = { field: 'metadata.finalizers[0]', message: 'Invalid value: "hold": name is neither a standard finalizer name nor is it fully qualified', reason: 'FieldValueInvalid' };
const DOTS = { field: 'data[..x]', message: 'Invalid value: "..x": must not start with \'..\'', reason: 'FieldValueInvalid' };
const SLASH = { field: 'data[a/b]', message: 'Invalid value: "a/b": a valid config key must consist of alphanumeric characters, \'-\', \'_\' or \'.\' (e.g. \'key.name\',  or \'KEY_NAME\',  or \'key-name\', regex used for validation is \'[-._a-zA-Z0-9]+\')', reason: 'FieldValueInvalid' };

/** The namespace `normalise` replaces (none of the answers' words contains it). */
const NS = 'fuzz-ns-q7';

/** A ConfigMap refused with these causes, its message listing them in the same order, as the server words it. */
function refused(causes: readonly { field: string; message: string; reason: string }[]): RawAnswer {
  const message = `ConfigMap "c" is invalid: [${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}]`;
  return { status: 422, warning: undefined, body: { apiVersion: 'v1', code: 422, details: { causes, kind: 'ConfigMap', name: 'c' }, kind: 'Status', message, metadata: {}, reason: 'Invalid', status: 'Failure' } };
}

describe('the fuzzer compares several causes', () => {
  it('of one map as a set, the message\'s list with them', () => {
    expect(normalise(refused([FINALIZER, DOTS, SLASH]), NS, undefined)).toBe(normalise(refused([FINALIZER, SLASH, DOTS]), NS, undefined));
  });

  it('of different fields in their order (the server validates fields in a fixed order)', () => {
    expect(normalise(refused([FINALIZER, DOTS]), NS, undefined)).not.toBe(normalise(refused([DOTS, FINALIZER]), NS, undefined));
  });

  it('of list items in their order', () => {
    const port = (i: number, value: number) => ({ field: `spec.ports[${i}].port`, message: `Invalid value: ${value}: must be between 1 and 65535, inclusive`, reason: 'FieldValueInvalid' });
    const item = (i: number) => ({ field: `spec.ports[${i}]`, message: 'Duplicate value: "x"', reason: 'FieldValueDuplicate' });
    expect(normalise(refused([item(0), item(1)]), NS, undefined)).not.toBe(normalise(refused([item(1), item(0)]), NS, undefined));
    expect(normalise(refused([port(0, 0), port(1, 70000)]), NS, undefined)).not.toBe(normalise(refused([port(1, 70000), port(0, 0)]), NS, undefined));
  });

  it('a message that does not list the causes as they are (the server dedupes repeated errors) is kept as it came', () => {
    const once = `ConfigMap "c" is invalid: ${SLASH.field}: ${SLASH.message}`;
    const twice = refused([SLASH, DOTS, SLASH]);
    const answer: RawAnswer = { ...twice, body: { ...(twice.body as object), message: once } };
    expect((JSON.parse(normalise(answer, NS, undefined)) as { body: { message: string } }).body.message).toBe(once);
  });
});
