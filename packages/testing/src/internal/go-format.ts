/**
 * Go's `fmt` `%v` (and `%+v`) of a JSON value decoded into Go's generic
 * types, as kube-apiserver quotes a strategic merge patch in its errors:
 * `map[data:map[x:not base64!] n:1.5]`. Integers are int64 (apimachinery
 * decodes with PreserveInts), other numbers float64; map keys sorted.
 */

/** Go's `%v` of a float64: strconv's shortest form, `%e` below 1e-4 and from 1e6 (`1e+06`, `1.5e-07`). */
function goFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? '+Inf' : '-Inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [mantissa, exponent] = x.toExponential().split('e') as [string, string];
  const exp = Number(exponent);
  if (exp < -4 || exp >= 6) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  // in this range JavaScript writes the same shortest digits without an exponent
  return String(x);
}

/** Compare as Go compares strings: by their UTF-8 bytes. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * `value` as Go's `fmt.Sprintf("%+v", v)` writes it after decoding it into
 * `interface{}` with integers kept.
 *
 * @example
 * ```ts
 * goFormat({ data: { x: 'a b' }, n: 1.5, k: 3, f: null }); // 'map[data:map[x:a b] f:<nil> k:3 n:1.5]'
 * ```
 */
export function goFormat(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'bigint') {
    // past int64 the decoder has a float64
    return value > 9223372036854775807n || value < -9223372036854775808n ? goFloat(Number(value)) : String(value);
  }
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER ? String(value) : goFloat(value);
  if (Array.isArray(value)) return `[${value.map(goFormat).join(' ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => byBytes(a, b));
    return `map[${entries.map(([k, v]) => `${k}:${goFormat(v)}`).join(' ')}]`;
  }
  // not a JSON value (a function or a symbol): its type, never its contents
  return typeof value;
}

/**
 * `value` as Go's `%#v` writes it after decoding it into `interface{}` with
 * integers kept: strings quoted, `map[string]interface {}{"a":1}`,
 * `[]interface {}{"x", 2}`, `interface {}(nil)` for a null inside them.
 */
export function goSyntax(value: unknown): string {
  if (value === null || value === undefined) return 'interface {}(nil)';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[]interface {}{${value.map(goSyntax).join(', ')}}`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => byBytes(a, b));
    return `map[string]interface {}{${entries.map(([k, v]) => `${JSON.stringify(k)}:${goSyntax(v)}`).join(', ')}}`;
  }
  return goFormat(value);
}

/** Go's `%T` of a JSON value decoded into `interface{}` with integers kept. */
export function goValueType(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return value > 9223372036854775807n || value < -9223372036854775808n ? 'float64' : 'int64';
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER ? 'int64' : 'float64';
  if (Array.isArray(value)) return '[]interface {}';
  return 'map[string]interface {}';
}
