/**
 * Label and field selectors evaluated in memory, with the API server's
 * syntax and answers, including the objects the API server accepts that no
 * recursive walk survives.
 */
import { describe, expect, it } from 'vitest';
import { fieldValue } from '../src/internal-api.js';
import { isClientError, matchesLabels, parseFieldSelector, parseLabelSelector } from '../src/index.js';

const labels = { app: 'web', tier: 'front', env: 'prod' };
const matches = (selector: string, l: Record<string, string> | undefined = labels): boolean => matchesLabels(parseLabelSelector(selector), l);

describe('label selectors', () => {
  it('equality, inequality, set membership, existence and absence', () => {
    expect(matches('app=web')).toBe(true);
    expect(matches('app==web')).toBe(true);
    expect(matches('app=db')).toBe(false);
    expect(matches('app!=db')).toBe(true);
    expect(matches('app!=web')).toBe(false);
    expect(matches('missing!=x')).toBe(true); // != matches objects without the label, as the API server does
    expect(matches('env in (prod, staging)')).toBe(true);
    expect(matches('env in (dev)')).toBe(false);
    expect(matches('env notin (dev,staging)')).toBe(true);
    expect(matches('missing notin (dev)')).toBe(true);
    expect(matches('tier')).toBe(true);
    expect(matches('missing')).toBe(false);
    expect(matches('!missing')).toBe(true);
    expect(matches('!tier')).toBe(false);
  });

  it('every term must hold; commas inside a set do not split terms; empty matches everything', () => {
    expect(matches('app=web,env in (prod,dev),!missing')).toBe(true);
    expect(matches('app=web,env in (dev,qa)')).toBe(false);
    expect(matches('')).toBe(true);
    expect(matchesLabels(parseLabelSelector(undefined), undefined)).toBe(true);
    expect(matchesLabels(parseLabelSelector('app=web'), undefined)).toBe(false);
  });

  it('a map selector is equality on every entry', () => {
    expect(matchesLabels(parseLabelSelector({ app: 'web', env: 'prod' }), labels)).toBe(true);
    expect(matchesLabels(parseLabelSelector({ app: 'web', env: 'dev' }), labels)).toBe(false);
  });

  it('malformed terms are a ClientError InvalidRequest naming the term', () => {
    for (const bad of ['app=web=x', 'env in prod', 'a b', '=x', 'env in (a']) {
      let err: unknown;
      try {
        parseLabelSelector(bad);
      } catch (e) {
        err = e;
      }
      expect(isClientError(err) && err.reason).toBe('InvalidRequest');
    }
  });
});

describe('field selectors', () => {
  const pod = { metadata: { name: 'p', namespace: 'ns' }, spec: { nodeName: 'n1', replicas: 3, paused: false, nested: { deep: 'x' } }, status: { phase: 'Running' } };

  it('exact matches on dotted paths: =, == and !=', () => {
    const ok = (selector: string): boolean => parseFieldSelector(selector).every((f) => (fieldValue(pod, f.path) === f.value) === f.equal);
    expect(ok('metadata.name=p')).toBe(true);
    expect(ok('spec.nodeName==n1,status.phase!=Pending')).toBe(true);
    expect(ok('status.phase=Pending')).toBe(false);
    expect(ok('spec.replicas=3')).toBe(true);
    expect(ok('spec.paused=false')).toBe(true);
    expect(ok('spec.missing=')).toBe(true); // an absent field compares as empty
    expect(ok('spec.nested=x')).toBe(false); // an object is never equal to a value
    expect(ok('spec.nested!=x')).toBe(true);
    expect(parseFieldSelector({ 'metadata.name': 'p' })).toEqual([{ path: 'metadata.name', equal: true, value: 'p' }]);
  });

  it('set-based syntax is not a field selector: ClientError InvalidRequest', () => {
    let err: unknown;
    try {
      parseFieldSelector('status.phase in (Running)');
    } catch (e) {
      err = e;
    }
    expect(isClientError(err) && err.reason).toBe('InvalidRequest');
  });

  it('a field holding an object nested 10,000 levels deep compares without walking it', () => {
    const deep = JSON.parse(`{"spec":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`) as unknown;
    expect(() => fieldValue(deep, 'spec')).not.toThrow();
    expect(fieldValue(deep, 'spec') === 'x').toBe(false);
    expect(fieldValue(deep, 'spec.a.a.a') === '').toBe(false);
  });
});
