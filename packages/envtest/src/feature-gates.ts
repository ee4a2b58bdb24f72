/** kube-apiserver feature gates: checked, merged and rendered as `--feature-gates=A=true,B=false`. */
import { EnvtestError } from './errors.js';

/** Feature gates by name: `{ ShardedListAndWatch: true }`. */
export type FeatureGates = Readonly<Record<string, boolean>>;

const NAME = /^[A-Za-z][A-Za-z0-9]*$/;

/**
 * Parse kube-apiserver's own syntax, `A=true,B=false` (spaces around items
 * allowed, an empty string is no gates). Throws EnvtestError
 * `InvalidOptions` naming the item for anything else.
 *
 * @example
 * ```ts
 * parseFeatureGates('ShardedListAndWatch=true'); // { ShardedListAndWatch: true }
 * ```
 */
export function parseFeatureGates(text: string): FeatureGates {
  const gates: Record<string, boolean> = {};
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const m = /^([^=]+)=(.*)$/.exec(item);
    const name = m?.[1]?.trim() ?? '';
    const value = m?.[2]?.trim().toLowerCase();
    if (!m || !NAME.test(name) || (value !== 'true' && value !== 'false')) {
      throw new EnvtestError('InvalidOptions', `feature gate ${JSON.stringify(item)} is not Name=true or Name=false (for example ShardedListAndWatch=true)`);
    }
    gates[name] = value === 'true';
  }
  return gates;
}

/** Check names (throws EnvtestError `InvalidOptions`) and render `A=true,B=false`, sorted by name. */
export function renderFeatureGates(gates: FeatureGates): string {
  return Object.entries(gates)
    .map(([name, on]) => {
      if (!NAME.test(name)) throw new EnvtestError('InvalidOptions', `feature gate name ${JSON.stringify(name)} must be letters and digits, starting with a letter (for example ShardedListAndWatch)`);
      if (typeof on !== 'boolean') throw new EnvtestError('InvalidOptions', `feature gate ${name} must be true or false (got ${JSON.stringify(on)})`);
      return `${name}=${on}`;
    })
    .sort()
    .join(',');
}

/**
 * The gates a local control plane starts with: `KUBELOOP_ENVTEST_FEATURE_GATES`
 * first, the `featureGates` option over it, and a `feature-gates` entry in
 * `apiServerFlags` over both (a flag given by hand wins, gate by gate).
 */
export function mergeFeatureGates(fromEnv: string | undefined, option: FeatureGates | undefined, flag: string | readonly string[] | null | undefined): FeatureGates {
  const flagText = flag === null || flag === undefined ? '' : typeof flag === 'string' ? flag : flag.join(',');
  return { ...parseFeatureGates(fromEnv ?? ''), ...option, ...parseFeatureGates(flagText) };
}
