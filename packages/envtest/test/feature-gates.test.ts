/** Feature gates for kube-apiserver: kube's `A=true,B=false` syntax, merged from the environment, the option and a hand-written flag. */
import { describe, expect, it } from 'vitest';
import { parseFeatureGates } from '../src/index.js';
import { mergeFeatureGates, renderFeatureGates } from '../src/feature-gates.js';

describe('feature gates', () => {
  it('parse kube-apiserver syntax, spaces and an empty string included', () => {
    expect(parseFeatureGates('ShardedListAndWatch=true, WatchList=false')).toEqual({ ShardedListAndWatch: true, WatchList: false });
    expect(parseFeatureGates('A=TRUE')).toEqual({ A: true });
    expect(parseFeatureGates('')).toEqual({});
  });

  it('refuse anything else with a typed error that shows the expected form', () => {
    for (const bad of ['A', 'A=yes', '=true', 'a-b=true', 'A=true=false']) {
      expect(() => parseFeatureGates(bad)).toThrow(expect.objectContaining({ name: 'EnvtestError', reason: 'InvalidOptions' }));
      expect(() => parseFeatureGates(bad)).toThrow(/is not Name=true or Name=false/);
    }
    expect(() => renderFeatureGates({ 'bad name': true })).toThrow(expect.objectContaining({ reason: 'InvalidOptions' }));
  });

  it('the environment variable, then the option, then an apiServerFlags entry, gate by gate', () => {
    const merged = mergeFeatureGates('A=true,B=true', { B: false, C: true }, ['C=false', 'D=true']);
    expect(merged).toEqual({ A: true, B: false, C: false, D: true });
    expect(renderFeatureGates(merged)).toBe('A=true,B=false,C=false,D=true');
    expect(mergeFeatureGates(undefined, undefined, null)).toEqual({});
  });
});
