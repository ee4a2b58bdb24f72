/**
 * `--operators=label=file,...`: builds of an operator to compare side by
 * side in one benchmark run (bench:sharding, bench:fleet). Empty gives the
 * one build the benchmark ships with, unlabelled.
 */
export interface OperatorBuild {
  /** The label printed in the tables; empty for the shipped build alone. */
  readonly label: string;
  /** The file to run, absolute or relative to the repository root. */
  readonly file: string;
}

/**
 * Parse an `--operators` value (`base=/path/a.js,new=dist/b.js`), or the shipped build when it is empty.
 *
 * @example
 * ```ts
 * parseOperators('base=/work/wt/base/dist/main.js,new=dist/main.js', 'dist/main.js'); // [{ label: 'base', ... }, { label: 'new', ... }]
 * ```
 */
export function parseOperators(value: string, shipped: string): OperatorBuild[] {
  const operators = value
    .split(',')
    .filter(Boolean)
    .map((spec) => {
      const i = spec.indexOf('=');
      if (i <= 0) throw new Error(`--operators takes label=file pairs, got ${JSON.stringify(spec)}`);
      return { label: spec.slice(0, i), file: spec.slice(i + 1) };
    });
  return operators.length > 0 ? operators : [{ label: '', file: shipped }];
}
