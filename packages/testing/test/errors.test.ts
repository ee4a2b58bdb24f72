/** The kit's error family: name, reason, cause and last value kept, a guard that survives a second copy of the package. */
import { describe, expect, it } from 'vitest';
import { isTestingError, TestingError } from '../src/index.js';

describe('TestingError', () => {
  it('carries reason, cause, lastValue and attempts', () => {
    const cause = new Error('inner');
    const err = new TestingError('ConditionNotMet', 'did not pass', { cause, lastValue: { phase: 'Pending' }, attempts: 3 });
    expect(err).toBeInstanceOf(Error);
    expect([err.name, err.reason, err.message, err.cause, err.lastValue, err.attempts]).toEqual(['TestingError', 'ConditionNotMet', 'did not pass', cause, { phase: 'Pending' }, 3]);
  });

  it('the guard recognises an error from another copy of the package by its brand', () => {
    const foreign = Object.assign(new Error('x'), { [Symbol.for('@kubeloop/testing/TestingError')]: true, reason: 'Closed' });
    expect(isTestingError(foreign)).toBe(true);
    expect(isTestingError(new Error('plain'))).toBe(false);
    expect(isTestingError(undefined)).toBe(false);
    expect(isTestingError('TestingError')).toBe(false);
  });
});
