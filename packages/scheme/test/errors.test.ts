import { describe, expect, it } from 'vitest';
import { SchemeError, isSchemeError, parseGroupVersion } from '../src/index.js';

describe('SchemeError', () => {
  it('carries a name, a reason, the input and the cause', () => {
    const cause = new Error('underlying');
    const err = new SchemeError('Conflict', 'two kinds collide', { cause, input: 'HardDisk.v1.crd-demo.io' });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('SchemeError');
    expect(err.reason).toBe('Conflict');
    expect(err.input).toBe('HardDisk.v1.crd-demo.io');
    expect(err.cause).toBe(cause);
    expect(String(err)).toBe('SchemeError: two kinds collide');
  });

  it('is recognised by its guard, also when it comes from another copy of the package', () => {
    let thrown: unknown;
    try {
      parseGroupVersion('Apps/v1');
    } catch (err) {
      thrown = err;
    }
    expect(isSchemeError(thrown)).toBe(true);
    // Another copy of the package brands its errors with the same registered symbol.
    const foreign = Object.assign(new Error('from another copy'), { [Symbol.for('@kubeloop/scheme/SchemeError')]: true });
    expect(isSchemeError(foreign)).toBe(true);
    expect(isSchemeError(new Error('plain'))).toBe(false);
    expect(isSchemeError({ reason: 'Conflict' })).toBe(false);
    expect(isSchemeError(null)).toBe(false);
    expect(isSchemeError('SchemeError')).toBe(false);
  });
});
