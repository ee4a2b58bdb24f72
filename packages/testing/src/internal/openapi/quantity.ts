/**
 * Resource quantities as kube-apiserver reads and writes them
 * (apimachinery's resource.Quantity): parsed with its grammar and errors,
 * kept as written when the server keeps the string (its "already
 * canonical" fast path), otherwise written in canonical form: `0.25` ->
 * `250m`, `1024Mi` -> `1Gi`, `1.5Gi` -> `1536Mi`, `1e10` -> `10e9`. Values
 * of resource lists (requests, limits, capacity) are rounded up to milli
 * units, as the core/v1 defaults do. Checked against the server with
 * generated quantities (test/openapi.test.ts).
 */

export const QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
export const QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix";
export const QUANTITY_NUMERIC_ERROR = 'unable to parse numeric part of quantity';

type Format = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

/** A parsed quantity: `mantissa * 10^scale`, the format its suffix asked for, the string kept when the server keeps it. */
export interface Quantity {
  readonly mantissa: bigint;
  readonly scale: number;
  readonly format: Format;
  readonly kept: string | undefined;
}

/** A quantity that is not one: the server's message. */
export class QuantityError extends Error {}

const DECIMAL: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const SUFFIX_CHARS = 'eEinumkKMGTP';
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

function interpret(suffix: string): { base: 10 | 2; exponent: number; format: Format } | undefined {
  if (Object.hasOwn(DECIMAL, suffix)) return { base: 10, exponent: DECIMAL[suffix]!, format: 'DecimalSI' };
  if (Object.hasOwn(BINARY, suffix)) return { base: 2, exponent: BINARY[suffix]!, format: 'BinarySI' };
  if ((suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?\d+$/.test(suffix.slice(1))) {
    const exponent = Number(suffix.slice(1));
    if (Number.isSafeInteger(exponent)) return { base: 10, exponent, format: 'DecimalExponent' };
  }
  return undefined;
}

/** Round `mantissa * 10^scale` away from zero to `target` decimal places (scale >= -target... i.e. to 10^target units). */
function roundUpTo(mantissa: bigint, scale: number, target: number): { mantissa: bigint; scale: number } {
  if (scale >= target) return { mantissa, scale };
  const factor = 10n ** BigInt(target - scale);
  const negative = mantissa < 0n;
  const abs = negative ? -mantissa : mantissa;
  let q = abs / factor;
  if (abs % factor !== 0n) q += 1n;
  return { mantissa: negative ? -q : q, scale: target };
}

/** Parse a quantity as the server does; throws QuantityError with its message. */
export function parseQuantity(input: string): Quantity {
  const str = input.trim();
  if (str.length === 0) throw new QuantityError(QUANTITY_FORMAT_ERROR);
  if (str === '0') return { mantissa: 0n, scale: 0, format: 'DecimalSI', kept: str };
  // the grammar: sign, digits (leading zeros dropped), fraction, suffix
  let pos = 0;
  const end = str.length;
  let positive = true;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') pos++;
  while (pos < end && str[pos] === '0') pos++;
  let num: string;
  let denom = '';
  let value: string;
  let suffix = '';
  if (pos >= end) {
    num = '0';
    value = '0';
  } else {
    let i = pos;
    while (i < end && isDigit(str[i])) i++;
    num = str.slice(pos, i);
    pos = i;
    if (num.length === 0) num = '0';
    let done = pos >= end;
    if (!done && str[pos] === '.') {
      pos++;
      let j = pos;
      while (j < end && isDigit(str[j])) j++;
      denom = str.slice(pos, j);
      pos = j;
      done = pos >= end;
    }
    value = str.slice(0, pos);
    if (!done) {
      const suffixStart = pos;
      let k = pos;
      while (k < end && SUFFIX_CHARS.includes(str[k]!)) k++;
      if (k < end && (str[k] === '-' || str[k] === '+')) k++;
      while (k < end && isDigit(str[k])) k++;
      if (k < end) throw new QuantityError(QUANTITY_FORMAT_ERROR);
      suffix = str.slice(suffixStart, end);
    }
  }
  const meaning = interpret(suffix);
  if (!meaning) throw new QuantityError(QUANTITY_SUFFIX_ERROR);
  const { base, exponent, format } = meaning;
  // the fast path, where the server may keep the string as written
  let precision: number;
  let scale = 0;
  let multiplier = 1n;
  if (base === 10) {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  } else if (exponent >= 0 && denom.length === 0) {
    multiplier = 1n << BigInt(exponent);
    precision = 15 - num.length - Math.trunc((exponent * 3) / 10) - 1;
  } else precision = -1;
  if (precision >= 0) {
    scale -= denom.length;
    if (scale >= -9) {
      const shifted = num + denom;
      const parsed = BigInt(shifted);
      const product = parsed * multiplier;
      if (parsed <= 9223372036854775807n && product <= 9223372036854775807n) {
        const mantissa = positive ? product : -product;
        const canonical = base === 2 ? exponent % 10 === 0 && (parsed & 7n) !== 0n : scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0';
        return { mantissa, scale, format, kept: canonical ? str : undefined };
      }
    }
  }
  // the exact path: a decimal of any size, rounded up to nano units
  if (!/^[+-]?(\d+\.?\d*|\.\d+)$/.test(value)) throw new QuantityError(QUANTITY_NUMERIC_ERROR);
  const digits = value.replace(/^[+-]/, '');
  const [whole = '', fraction = ''] = digits.split('.');
  let mantissa = BigInt((whole + fraction).replace(/^0+(?=\d)/, '') || '0');
  let s = -fraction.length;
  if (base === 10) s += exponent;
  else mantissa *= 1n << BigInt(exponent);
  if (!positive) mantissa = -mantissa;
  let rounded = mantissa === 0n ? { mantissa, scale: s } : roundUpTo(mantissa, s, -9);
  let outFormat = format;
  if (format === 'BinarySI') {
    const max = 9223372036854775807n;
    const abs = rounded.mantissa < 0n ? -rounded.mantissa : rounded.mantissa;
    const tooLarge = rounded.scale >= 0 ? abs * 10n ** BigInt(rounded.scale) > max : abs > max * 10n ** BigInt(-rounded.scale);
    if (tooLarge) rounded = { mantissa: rounded.mantissa < 0n ? -max : max, scale: 0 };
    const one = rounded.scale >= 0 ? abs * 10n ** BigInt(rounded.scale) >= 1n : abs >= 10n ** BigInt(-rounded.scale);
    if (abs !== 0n && !one) outFormat = 'DecimalSI';
  }
  return { mantissa: rounded.mantissa, scale: rounded.scale, format: outFormat, kept: undefined };
}

/** A quantity rounded up to milli units (the core/v1 defaults of resource lists); the written string goes when the value changes scale. */
export function roundUpToMilli(q: Quantity): Quantity {
  if (q.scale >= -3) return q;
  const r = roundUpTo(q.mantissa, q.scale, -3);
  return { mantissa: r.mantissa, scale: r.scale, format: q.format, kept: undefined };
}

function decimalCanonical(mantissa: bigint, scale: number, format: Format): string {
  let m = mantissa;
  let e = scale;
  while (m % 10n === 0n) {
    m /= 10n;
    e++;
  }
  const r = ((e % 3) + 3) % 3;
  if (r !== 0) {
    m *= 10n ** BigInt(r);
    e -= r;
  }
  if (format === 'DecimalExponent') return e === 0 ? m.toString() : `${m.toString()}e${e}`;
  const suffix = Object.entries(DECIMAL).find(([, x]) => x === e)?.[0];
  return `${m.toString()}${suffix ?? ''}`;
}

/** The quantity as the server writes it. */
export function formatQuantity(q: Quantity): string {
  if (q.kept !== undefined) return q.kept;
  if (q.mantissa === 0n) return '0';
  let format = q.format;
  if (format === 'BinarySI') {
    const abs = q.mantissa < 0n ? -q.mantissa : q.mantissa;
    const small = q.scale >= 0 ? abs * 10n ** BigInt(q.scale) < 1024n : abs < 1024n * 10n ** BigInt(-q.scale);
    const integer = q.scale >= 0 || abs % 10n ** BigInt(-q.scale) === 0n;
    if (small || !integer) format = 'DecimalSI';
    else {
      let v = q.scale >= 0 ? q.mantissa * 10n ** BigInt(q.scale) : q.mantissa / 10n ** BigInt(-q.scale);
      let e = 0;
      while (v % 1024n === 0n && e < 60) {
        v /= 1024n;
        e += 10;
      }
      const suffix = Object.entries(BINARY).find(([, x]) => x === e)?.[0] ?? '';
      return `${v.toString()}${suffix}`;
    }
  }
  return decimalCanonical(q.mantissa, q.scale, format);
}
