/**
 * The Kubernetes CEL semver library as kube-apiserver v1.37 serves it to
 * CRD validation rules: `semver(string)`, `semver(string, normalize)`,
 * `isSemver(string)`, `isSemver(string, normalize)`, the `major()`,
 * `minor()` and `patch()` getters, `compareTo`, `isLessThan`,
 * `isGreaterThan` and `==`. Versions are parsed as blang/semver v4's
 * `Parse` parses them (the server's parser; its error texts are what a
 * failing rule reports), and with `normalize` as the library's tolerant
 * form does first: a leading `v` dropped, leading zeros of each of the three
 * parts dropped, a missing minor or patch filled with 0 (refused when that
 * short form carries a pre-release or build). Ordering follows semver 2.0,
 * as blang compares: build metadata ignored, a pre-release before its
 * release, numeric identifiers below alphanumeric ones.
 */
import type { Environment } from '@marcbachmann/cel-js';

const UINT64_MAX = (1n << 64n) - 1n;
const DIGITS = /^[0-9]*$/;
const ALPHANUM = /^[0-9A-Za-z-]*$/;

/** A semantic version as blang/semver's Version holds it. */
export class Semver {
  readonly major: bigint;
  readonly minor: bigint;
  readonly patch: bigint;
  /** Pre-release identifiers: numbers (bigint) or strings. */
  readonly pre: readonly (bigint | string)[];
  readonly build: readonly string[];
  constructor(major: bigint, minor: bigint, patch: bigint, pre: readonly (bigint | string)[], build: readonly string[]) {
    this.major = major;
    this.minor = minor;
    this.patch = patch;
    this.pre = pre;
    this.build = build;
  }
}

/** Go's `%q` of an ASCII-printable string, and `\u`/`\x` escapes otherwise (strconv.Quote). */
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (c >= 0xd800 && c <= 0xdfff) out += '\\ufffd'; // a lone surrogate reaches Go as U+FFFD, printable
    else if (isGoPrintable(c)) out += ch;
    else out += c > 0xffff ? `\\U${c.toString(16).padStart(8, '0')}` : `\\u${c.toString(16).padStart(4, '0')}`;
  }
  return `${out}"`;
}

/** Roughly Go's `unicode.IsPrint` for characters past ASCII: letters, marks, numbers, punctuation, symbols. */
function isGoPrintable(c: number): boolean {
  return /[\p{L}\p{M}\p{N}\p{P}\p{S}]/u.test(String.fromCodePoint(c));
}

/** `strconv.ParseUint(s, 10, 64)`, or its error text. */
function parseUint(s: string): bigint | string {
  if (s === '') return `strconv.ParseUint: parsing ${goQuote(s)}: invalid syntax`;
  const v = BigInt(s);
  return v > UINT64_MAX ? `strconv.ParseUint: parsing ${goQuote(s)}: value out of range` : v;
}

const leadingZero = (s: string): boolean => s.length > 1 && s[0] === '0';

/** One of the three numbers, checked as blang checks it (`which`: major, minor or patch). */
function versionNumber(s: string, which: 'major' | 'minor' | 'patch'): bigint | string {
  if (!DIGITS.test(s)) return `Invalid character(s) found in ${which} number ${goQuote(s)}`;
  if (leadingZero(s)) return `${which[0]!.toUpperCase()}${which.slice(1)} number must not contain leading zeroes ${goQuote(s)}`;
  return parseUint(s);
}

/** blang/semver v4's `Parse`: a version, or its error text. */
export function parseSemver(s: string): Semver | string {
  if (s.length === 0) return 'Version string empty';
  const first = s.indexOf('.');
  const second = first < 0 ? -1 : s.indexOf('.', first + 1);
  if (second < 0) return 'No Major.Minor.Patch elements found';
  const major = versionNumber(s.slice(0, first), 'major');
  if (typeof major === 'string') return major;
  const minor = versionNumber(s.slice(first + 1, second), 'minor');
  if (typeof minor === 'string') return minor;
  let rest = s.slice(second + 1);
  let build: string[] = [];
  let preParts: string[] = [];
  const plus = rest.indexOf('+');
  if (plus >= 0) {
    build = rest.slice(plus + 1).split('.');
    rest = rest.slice(0, plus);
  }
  const dash = rest.indexOf('-');
  if (dash >= 0) {
    preParts = rest.slice(dash + 1).split('.');
    rest = rest.slice(0, dash);
  }
  const patch = versionNumber(rest, 'patch');
  if (typeof patch === 'string') return patch;
  const pre: (bigint | string)[] = [];
  for (const p of preParts) {
    if (p.length === 0) return 'Prerelease is empty';
    if (DIGITS.test(p)) {
      if (leadingZero(p)) return `Numeric PreRelease version must not contain leading zeroes ${goQuote(p)}`;
      const n = parseUint(p);
      if (typeof n === 'string') return n;
      pre.push(n);
    } else if (ALPHANUM.test(p)) {
      pre.push(p);
    } else {
      return `Invalid character(s) found in prerelease ${goQuote(p)}`;
    }
  }
  for (const b of build) {
    if (b.length === 0) return 'Build meta data is empty';
    if (!ALPHANUM.test(b)) return `Invalid character(s) found in build meta data ${goQuote(b)}`;
  }
  return new Semver(major, minor, patch, pre, build);
}

/** The library's tolerant form: `v` dropped, leading zeros dropped, short versions filled; then `parseSemver`. */
export function parseSemverNormalized(input: string): Semver | string {
  const s = input.startsWith('v') ? input.slice(1) : input;
  const first = s.indexOf('.');
  const second = first < 0 ? -1 : s.indexOf('.', first + 1);
  const parts = first < 0 ? [s] : second < 0 ? [s.slice(0, first), s.slice(first + 1)] : [s.slice(0, first), s.slice(first + 1, second), s.slice(second + 1)];
  for (const [i, p] of parts.entries()) {
    if (p.length <= 1) continue;
    let trimmed = p.replace(/^0+/, '');
    if (trimmed.length === 0 || !/^[0-9]/.test(trimmed)) trimmed = `0${trimmed}`;
    parts[i] = trimmed;
  }
  if (parts.length < 3) {
    if (/[+-]/.test(parts[parts.length - 1]!)) return 'short version cannot contain PreRelease/Build meta data';
    while (parts.length < 3) parts.push('0');
  }
  return parseSemver(parts.join('.'));
}

const sign = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

/** blang's `Compare`: -1, 0 or 1; build metadata does not count. */
export function compareSemver(a: Semver, b: Semver): number {
  const main = sign(a.major, b.major) || sign(a.minor, b.minor) || sign(a.patch, b.patch);
  if (main !== 0) return main;
  if (a.pre.length === 0 || b.pre.length === 0) return a.pre.length === b.pre.length ? 0 : a.pre.length === 0 ? 1 : -1;
  for (let i = 0; i < a.pre.length && i < b.pre.length; i++) {
    const x = a.pre[i]!;
    const y = b.pre[i]!;
    const c = typeof x === 'bigint' ? (typeof y === 'bigint' ? sign(x, y) : -1) : typeof y === 'bigint' ? 1 : x < y ? -1 : x > y ? 1 : 0;
    if (c !== 0) return c;
  }
  return sign(BigInt(a.pre.length), BigInt(b.pre.length));
}

function semverOf(text: string, normalize: boolean): Semver {
  const v = normalize ? parseSemverNormalized(text) : parseSemver(text);
  if (typeof v === 'string') throw new Error(v);
  return v;
}

/** CEL's int of a uint64 part: Go's `types.Int(v.Major)` wraps past 2^63 - 1. */
const asInt = (v: bigint): bigint => BigInt.asIntN(64, v);

/** Register the semver library on `env`. */
export function registerSemver(env: Environment): void {
  env.registerType('kubernetes.Semver', Semver);
  env.registerFunction('semver(string): kubernetes.Semver', (s: string) => semverOf(s, false));
  env.registerFunction('semver(string, bool): kubernetes.Semver', (s: string, n: boolean) => semverOf(s, n));
  env.registerFunction('isSemver(string): bool', (s: string) => typeof parseSemver(s) !== 'string');
  env.registerFunction('isSemver(string, bool): bool', (s: string, n: boolean) => typeof (n ? parseSemverNormalized(s) : parseSemver(s)) !== 'string');
  env.registerFunction('kubernetes.Semver.major(): int', (v: Semver) => asInt(v.major));
  env.registerFunction('kubernetes.Semver.minor(): int', (v: Semver) => asInt(v.minor));
  env.registerFunction('kubernetes.Semver.patch(): int', (v: Semver) => asInt(v.patch));
  env.registerFunction('kubernetes.Semver.compareTo(kubernetes.Semver): int', (a: Semver, b: Semver) => BigInt(compareSemver(a, b)));
  env.registerFunction('kubernetes.Semver.isLessThan(kubernetes.Semver): bool', (a: Semver, b: Semver) => compareSemver(a, b) < 0);
  env.registerFunction('kubernetes.Semver.isGreaterThan(kubernetes.Semver): bool', (a: Semver, b: Semver) => compareSemver(a, b) > 0);
  env.registerOperator('kubernetes.Semver == kubernetes.Semver', (a: Semver, b: Semver) => compareSemver(a, b) === 0);
}
