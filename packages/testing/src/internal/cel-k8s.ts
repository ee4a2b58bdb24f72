/**
 * The Kubernetes CEL libraries kube-apiserver adds to CRD validation rules
 * beyond the language: quantities (`quantity`, `isQuantity` and the
 * Quantity methods), IP addresses and CIDRs (`ip`, `isIP`, `cidr`,
 * `isCIDR` and their methods) and URLs (`url`, `isURL` and the getters),
 * registered on a cel-js environment (the semver library is in
 * cel-semver.ts). Values
 * follow the Go types behind them: a quantity is exact (kept in nano units,
 * smaller amounts rounded up as `resource.ParseQuantity` rounds them), an
 * address is parsed as `net/netip` parses it (no leading zeros in IPv4, no
 * zones, no IPv4-mapped IPv6) and printed in its canonical form (RFC 5952).
 */
import { Optional } from '@marcbachmann/cel-js';
import type { Environment } from '@marcbachmann/cel-js';
import { registerSemver } from './cel-semver.js';
import { labelValueProblem } from './selectors.js';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_TEXT, SUBDOMAIN_TEXT } from './validation.js';

// --- quantities ----------------------------------------------------------------

const NANO = 1_000_000_000n;
const BINARY: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
/** Exponents beyond this are refused rather than expanded (a bigint of 10^1e6 would stall the fake). */
const MAX_EXPONENT = 1000;
const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?([eEinumkKMGTP]*[-+]?\d*)$/;
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;
const ERR_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/**
 * A Kubernetes resource quantity as CEL's Quantity type: its exact amount in
 * nano units, and, as `resource.Quantity` keeps it, whether it is held as
 * an int64 with a decimal scale (`fast`, what `isInteger` and `asInteger`
 * can use) or as an arbitrary decimal (then never an integer to them).
 */
export class Quantity {
  readonly nano: bigint;
  /** The int64 form `value * 10^scale`, or undefined when Go holds the amount as an inf.Dec. */
  readonly fast: { readonly value: bigint; readonly scale: number } | undefined;
  constructor(nano: bigint, fast: { readonly value: bigint; readonly scale: number } | undefined) {
    this.nano = nano;
    this.fast = fast;
  }
}

/** Divide rounding away from zero (ParseQuantity rounds amounts below one nano up). */
function divUp(n: bigint, d: bigint): bigint {
  const q = n / d;
  return q * d === n ? q : n < 0n ? q - 1n : q + 1n;
}

const fitsInt64 = (v: bigint): boolean => v <= INT64_MAX && v >= INT64_MIN;

/** `value * 10^scale` in nano units. */
function nanoOf(value: bigint, scale: number): bigint {
  const shift = scale + 9;
  return shift >= 0 ? value * 10n ** BigInt(shift) : divUp(value, 10n ** BigInt(-shift));
}

/** A quantity parsed as `resource.ParseQuantity` parses it, or the reason it is not one (its error text). */
export function parseQuantity(text: string): Quantity | string {
  const m = text === '' ? null : QUANTITY.exec(text);
  if (!m) return ERR_FORMAT;
  const [, sign = '', whole = '', fraction = '', suffix = ''] = m;
  // No digits at all ('Gi', '.n', '-.u') is zero to Go's parser, not an error (found by the widened CEL differential).
  let binary = 0;
  let exponent = 0;
  let binarySI = false;
  if (suffix in BINARY) {
    binary = BINARY[suffix]!;
    binarySI = true;
  } else if (suffix in DECIMAL) exponent = DECIMAL[suffix]!;
  else if (/^[eE][-+]?\d+$/.test(suffix)) exponent = Number(suffix.slice(1));
  else return 'unable to parse quantity\'s suffix';
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_EXPONENT) return 'unable to parse quantity\'s suffix';
  const negative = sign === '-';
  const digits = BigInt(`${whole}${fraction}` || '0');
  // Go's fast path: an int64 amount when the digits leave room for the suffix (resource.ParseQuantity's precision)
  // (its length of the whole part leaves out leading zeros, and counts an empty one as '0')
  const wholeDigits = whole.replace(/^0+/, '').length || 1;
  const precision = binarySI ? (fraction === '' ? 15 - wholeDigits - Math.trunc((binary * 3) / 10) - 1 : -1) : 18 - (wholeDigits + fraction.length);
  if (precision >= 0) {
    const scale = (binarySI ? 0 : exponent) - fraction.length;
    if (scale >= -9) {
      if (!fitsInt64(digits)) return 'unable to parse quantity\'s numeric value';
      const result = digits * 2n ** BigInt(binary);
      if (fitsInt64(result)) {
        const value = negative ? -result : result;
        return new Quantity(nanoOf(value, scale), { value, scale });
      }
    }
  }
  // an arbitrary decimal (inf.Dec, which cannot read a number without digits: '+.Ei'), rounded up to a nano,
  // a binary one capped at 2^63 - 1 (found by the widened CEL differential)
  if (whole === '' && fraction === '') return 'unable to parse numeric part of quantity';
  let nano = nanoOf(digits * 2n ** BigInt(binary), exponent - fraction.length);
  const cap = INT64_MAX * NANO;
  if (binarySI && nano > cap) nano = cap;
  return new Quantity(negative ? -nano : nano, undefined);
}

function quantityOf(text: string): Quantity {
  const q = parseQuantity(text);
  if (typeof q === 'string') throw new Error(q);
  return q;
}

const cmp = (a: bigint, b: bigint): bigint => (a < b ? -1n : a > b ? 1n : 0n);

/** `resource.Quantity.AsInt64`: only an int64 amount with a scale of 0 or more that fits. */
function asInt64(q: Quantity): bigint | undefined {
  if (!q.fast) return undefined;
  const { value, scale } = q.fast;
  if (scale === 0) return value;
  if (scale < 0) return undefined;
  const v = value * 10n ** BigInt(scale);
  return fitsInt64(v) ? v : undefined;
}

function asInteger(q: Quantity): bigint {
  const v = asInt64(q);
  if (v === undefined) throw new Error('cannot convert value to integer');
  return v;
}

/** `resource.Quantity.Add` (`Sub` adds the negation): int64 amounts stay so at the smaller scale unless they overflow. */
function add(a: Quantity, b: Quantity): Quantity {
  const nano = a.nano + b.nano;
  if (!a.fast || !b.fast) return new Quantity(nano, undefined);
  if (b.fast.value === 0n) return new Quantity(nano, a.fast);
  if (a.fast.value === 0n) return new Quantity(nano, b.fast);
  const scale = Math.min(a.fast.scale, b.fast.scale);
  const x = a.fast.value * 10n ** BigInt(a.fast.scale - scale);
  const y = b.fast.value * 10n ** BigInt(b.fast.scale - scale);
  const value = x + y;
  return fitsInt64(x) && fitsInt64(y) && fitsInt64(value) ? new Quantity(nano, { value, scale }) : new Quantity(nano, undefined);
}

const negate = (q: Quantity): Quantity => new Quantity(-q.nano, q.fast ? { value: -q.fast.value, scale: q.fast.scale } : undefined);
const ofInt = (i: bigint): Quantity => new Quantity(i * NANO, { value: i, scale: 0 });

function registerQuantity(env: Environment): void {
  env.registerType('Quantity', Quantity);
  env.registerFunction('quantity(string): Quantity', quantityOf);
  env.registerFunction('isQuantity(string): bool', (s: string) => typeof parseQuantity(s) !== 'string');
  // no sign(): kube-apiserver v1.37 refuses a rule calling it (no matching overload)
  env.registerFunction('Quantity.isInteger(): bool', (q: Quantity) => asInt64(q) !== undefined);
  env.registerFunction('Quantity.asInteger(): int', asInteger);
  env.registerFunction('Quantity.asApproximateFloat(): double', (q: Quantity) => Number(q.nano) / 1e9);
  env.registerFunction('Quantity.add(Quantity): Quantity', add);
  env.registerFunction('Quantity.add(int): Quantity', (a: Quantity, b: bigint) => add(a, ofInt(b)));
  env.registerFunction('Quantity.sub(Quantity): Quantity', (a: Quantity, b: Quantity) => add(a, negate(b)));
  env.registerFunction('Quantity.sub(int): Quantity', (a: Quantity, b: bigint) => add(a, ofInt(-b)));
  env.registerFunction('Quantity.isLessThan(Quantity): bool', (a: Quantity, b: Quantity) => a.nano < b.nano);
  env.registerFunction('Quantity.isGreaterThan(Quantity): bool', (a: Quantity, b: Quantity) => a.nano > b.nano);
  env.registerFunction('Quantity.compareTo(Quantity): int', (a: Quantity, b: Quantity) => cmp(a.nano, b.nano));
  env.registerOperator('Quantity == Quantity', (a: Quantity, b: Quantity) => a.nano === b.nano);
}

// --- IP addresses and CIDRs ------------------------------------------------------

/** An address as `netip.Addr`: 4 or 16 bytes. */
export class IP {
  readonly bytes: readonly number[];
  constructor(bytes: readonly number[]) {
    this.bytes = bytes;
  }
  get family(): 4 | 6 {
    return this.bytes.length === 4 ? 4 : 6;
  }
  toString(): string {
    return formatAddr(this.bytes);
  }
}

/** A prefix as `netip.Prefix`: its address as written (not masked) and its length. */
export class CIDR {
  readonly ip: IP;
  readonly bits: number;
  constructor(ip: IP, bits: number) {
    this.ip = ip;
    this.bits = bits;
  }
  toString(): string {
    return `${this.ip.toString()}/${this.bits}`;
  }
}

/** Go's `netip` parse error text. */
function addrError(input: string, msg: string, at?: string): string {
  return `ParseAddr(${JSON.stringify(input)}): ${msg}${at === undefined ? '' : ` (at ${JSON.stringify(at)})`}`;
}

/** IPv4 as `netip.parseIPv4Fields` reads it: its bytes, or Go's error text. */
function parseIPv4Exact(text: string, input = text): number[] | string {
  const out: number[] = [];
  let val = 0;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c >= '0' && c <= '9') {
      if (digits === 1 && val === 0) return addrError(input, 'IPv4 field has octet with leading zero');
      val = val * 10 + Number(c);
      digits++;
      if (val > 255) return addrError(input, 'IPv4 field has value >255');
    } else if (c === '.') {
      if (i === 0 || i === text.length - 1 || text[i - 1] === '.') return addrError(input, 'IPv4 field must have at least one digit', text.slice(i));
      if (out.length === 3) return addrError(input, 'IPv4 address too long');
      out.push(val);
      val = 0;
      digits = 0;
    } else {
      return addrError(input, 'unexpected character', text.slice(i));
    }
  }
  if (out.length < 3) return addrError(input, 'IPv4 address too short');
  out.push(val);
  return out;
}

/**
 * IPv6 as `netip` reads it, left to right: groups of at most four hex
 * digits, one `::` anywhere, an embedded IPv4 address in the last two
 * fields; its bytes, or Go's error text at the point it stopped (found by
 * the widened CEL differential).
 */
function parseIPv6Exact(input: string): number[] | string {
  const bytes = new Array<number>(16).fill(0);
  let s = input;
  let ellipsis = -1;
  if (s.startsWith('::')) {
    ellipsis = 0;
    s = s.slice(2);
    if (s === '') return bytes;
  }
  let i = 0;
  while (i < 16) {
    let off = 0;
    let acc = 0;
    for (; off < s.length; off++) {
      if (!/[0-9a-fA-F]/.test(s[off]!)) break;
      acc = acc * 16 + parseInt(s[off]!, 16);
      if (off > 3) return addrError(input, 'each group must have 4 or less digits', s);
      if (acc > 0xffff) return addrError(input, 'IPv6 field has value >=2^16', s);
    }
    if (off === 0) return addrError(input, 'each colon-separated field must have at least one digit', s);
    if (s[off] === '.') {
      if (ellipsis < 0 && i !== 12) return addrError(input, 'embedded IPv4 address must replace the final 2 fields of the address', s);
      if (i + 4 > 16) return addrError(input, 'too many hex fields to fit an embedded IPv4 at the end of the address', s);
      const v4 = parseIPv4Exact(s, input);
      if (typeof v4 === 'string') return v4;
      bytes.splice(i, 4, ...v4);
      i += 4;
      s = '';
      break;
    }
    bytes[i] = acc >> 8;
    bytes[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s === '') break;
    if (s[0] !== ':') return addrError(input, 'unexpected character, want colon', s);
    if (s.length === 1) return addrError(input, 'colon must be followed by more characters', s);
    s = s.slice(1);
    if (s[0] === ':') {
      if (ellipsis >= 0) return addrError(input, 'multiple :: in address', s);
      ellipsis = i;
      s = s.slice(1);
      if (s === '') break;
    }
  }
  if (s !== '') return addrError(input, 'trailing garbage after address', s);
  if (i < 16) {
    if (ellipsis < 0) return addrError(input, 'address string too short');
    const n = 16 - i;
    return [...bytes.slice(0, ellipsis), ...new Array<number>(n).fill(0), ...bytes.slice(ellipsis, i)];
  }
  if (ellipsis >= 0) return addrError(input, 'the :: must expand to at least one field of zeros');
  return bytes;
}

/**
 * An address as the CEL library parses it (`netip.ParseAddr`, then no
 * zone and no IPv4-mapped IPv6), or the library's error text, in Go's
 * words (found by the CEL differential).
 */
export function parseIPText(text: string): IP | string {
  if (text.includes('%')) return `IP address ${JSON.stringify(text)} with zone value is not allowed`;
  const bad = (detail: string): string => `IP Address ${JSON.stringify(text)} parse error during conversion from string: ${detail}`;
  let bytes: number[] | undefined;
  const kind = /[.:]/.exec(text)?.[0];
  if (kind === '.') {
    const r = parseIPv4Exact(text);
    if (typeof r === 'string') return bad(r);
    bytes = r;
  } else if (kind === ':') {
    const r = parseIPv6Exact(text);
    if (typeof r === 'string') return bad(r);
    bytes = r;
  } else {
    return bad(addrError(text, 'unable to parse IP'));
  }
  if (bytes.length === 16 && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return `IPv4-mapped IPv6 address ${JSON.stringify(text)} is not allowed`;
  return new IP(bytes);
}

/** An address as {@link parseIPText} takes it, or undefined. */
export function parseIP(text: string): IP | undefined {
  const r = parseIPText(text);
  return typeof r === 'string' ? undefined : r;
}

/** RFC 5952: lower-case hex, the longest run of two or more zero groups (the first of equals) as `::`. */
function formatAddr(bytes: readonly number[]): string {
  if (bytes.length === 4) return bytes.join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (bestLen < 2) return hex(groups);
  return `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLen))}`;
}

export function parseCIDR(text: string): CIDR | undefined {
  const slash = text.lastIndexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIP(text.slice(0, slash));
  const lengthText = text.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(lengthText) || (lengthText.length > 1 && lengthText.startsWith('0'))) return undefined;
  const bits = Number(lengthText);
  if (bits > ip.bytes.length * 8) return undefined;
  return new CIDR(ip, bits);
}

function masked(bytes: readonly number[], bits: number): number[] {
  return bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
}

function contains(c: CIDR, ip: IP): boolean {
  if (ip.family !== c.ip.family) return false;
  const a = masked(c.ip.bytes, c.bits);
  const b = masked(ip.bytes, c.bits);
  return a.every((x, i) => x === b[i]);
}

function ipOf(text: string): IP {
  const ip = parseIPText(text);
  if (typeof ip === 'string') throw new Error(ip);
  return ip;
}

function cidrOf(text: string): CIDR {
  const c = parseCIDR(text);
  if (!c) throw new Error(`network address ${JSON.stringify(text)} parse error during conversion from string`);
  return c;
}

const inRange = (ip: IP, v4: readonly number[], v4bits: number, v6: readonly number[], v6bits: number): boolean =>
  ip.family === 4 ? contains(new CIDR(new IP(v4), v4bits), ip) : contains(new CIDR(new IP(v6), v6bits), ip);

const V6 = (...head: number[]): number[] => [...head, ...new Array<number>(16 - head.length).fill(0)];

class IPLibrary {}

function registerIP(env: Environment): void {
  env.registerType('net.IP', IP);
  env.registerType('net.CIDR', CIDR);
  env.registerFunction('ip(string): net.IP', ipOf);
  env.registerFunction('isIP(string): bool', (s: string) => parseIP(s) !== undefined);
  // `ip.isCanonical(s)`: a method of a constant named ip (the CEL library's namespaced function)
  env.registerType('kubeloop.IPLibrary', IPLibrary);
  env.registerConstant('ip', 'kubeloop.IPLibrary', new IPLibrary());
  env.registerFunction('kubeloop.IPLibrary.isCanonical(string): bool', (_: IPLibrary, s: string) => ipOf(s).toString() === s);
  env.registerFunction('net.IP.family(): int', (ip: IP) => BigInt(ip.family));
  env.registerFunction('net.IP.isUnspecified(): bool', (ip: IP) => ip.bytes.every((b) => b === 0));
  env.registerFunction('net.IP.isLoopback(): bool', (ip: IP) => inRange(ip, [127, 0, 0, 0], 8, V6(...new Array<number>(15).fill(0), 1), 128));
  // IPv6: the first group masked with ff0f is ff02 (any flags), as netip has it
  env.registerFunction('net.IP.isLinkLocalMulticast(): bool', (ip: IP) => (ip.family === 4 ? inRange(ip, [224, 0, 0, 0], 24, [], 0) : ip.bytes[0] === 0xff && (ip.bytes[1]! & 0x0f) === 0x02));
  env.registerFunction('net.IP.isLinkLocalUnicast(): bool', (ip: IP) => inRange(ip, [169, 254, 0, 0], 16, V6(0xfe, 0x80), 10));
  env.registerFunction('net.IP.isGlobalUnicast(): bool', (ip: IP) => {
    // Go: not unspecified, loopback, multicast, link-local unicast, nor the IPv4 broadcast address
    if (ip.bytes.every((b) => b === 0)) return false;
    // (multicast is 224.0.0.0/4; 240.0.0.0/4 is global unicast to Go, but for the broadcast address: found by the widened CEL differential)
    if (ip.family === 4) return !(ip.bytes[0] === 127 || (ip.bytes[0]! >= 224 && ip.bytes[0]! <= 239) || (ip.bytes[0] === 169 && ip.bytes[1] === 254) || ip.bytes.every((b) => b === 255));
    return !(ip.bytes[0] === 0xff || inRange(ip, [], 0, V6(0xfe, 0x80), 10) || ip.bytes.every((b, i) => b === (i === 15 ? 1 : 0)));
  });
  env.registerFunction('string(net.IP): string', (ip: IP) => ip.toString());
  env.registerOperator('net.IP == net.IP', (a: IP, b: IP) => a.toString() === b.toString());
  env.registerFunction('cidr(string): net.CIDR', cidrOf);
  env.registerFunction('isCIDR(string): bool', (s: string) => parseCIDR(s) !== undefined);
  env.registerFunction('net.CIDR.containsIP(net.IP): bool', (c: CIDR, ip: IP) => contains(c, ip));
  env.registerFunction('net.CIDR.containsIP(string): bool', (c: CIDR, s: string) => contains(c, ipOf(s)));
  env.registerFunction('net.CIDR.containsCIDR(net.CIDR): bool', (c: CIDR, o: CIDR) => o.bits >= c.bits && contains(c, o.ip));
  env.registerFunction('net.CIDR.containsCIDR(string): bool', (c: CIDR, s: string) => {
    const o = cidrOf(s);
    return o.bits >= c.bits && contains(c, o.ip);
  });
  env.registerFunction('net.CIDR.ip(): net.IP', (c: CIDR) => c.ip);
  env.registerFunction('net.CIDR.masked(): net.CIDR', (c: CIDR) => new CIDR(new IP(masked(c.ip.bytes, c.bits)), c.bits));
  env.registerFunction('net.CIDR.prefixLength(): int', (c: CIDR) => BigInt(c.bits));
  env.registerFunction('string(net.CIDR): string', (c: CIDR) => c.toString());
  env.registerOperator('net.CIDR == net.CIDR', (a: CIDR, b: CIDR) => a.toString() === b.toString());
}

/** Register the quantity, IP/CIDR, URL, format and semver libraries on `env`. */
export function registerKubernetesLibraries(env: Environment): void {
  registerSemver(env);
  registerQuantity(env);
  registerIP(env);
  registerURL(env);
  registerFormat(env);
}

// --- URLs ---------------------------------------------------------------------

/** A URL as Go's `url.ParseRequestURI` leaves it (an absolute URI or an absolute path; no fragment split off). */
export class URL_ {
  readonly scheme: string;
  readonly opaque: string;
  readonly host: string;
  readonly path: string;
  readonly rawPath: string;
  readonly rawQuery: string;
  constructor(parts: { scheme: string; opaque: string; host: string; path: string; rawPath: string; rawQuery: string }) {
    this.scheme = parts.scheme;
    this.opaque = parts.opaque;
    this.host = parts.host;
    this.path = parts.path;
    this.rawPath = parts.rawPath;
    this.rawQuery = parts.rawQuery;
  }
}

const HEX = /^[0-9a-fA-F]{2}$/;

/** Go's `unescape` of a path (mode encodePath): `%XX` decoded, a bad escape an error. */
function unescapePath(s: string): string | Error {
  let out = '';
  const bytes: number[] = [];
  const flush = (): void => {
    if (bytes.length > 0) out += Buffer.from(bytes).toString('latin1');
    bytes.length = 0;
  };
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '%') {
      const h = s.slice(i + 1, i + 3);
      if (!HEX.test(h)) return new Error(`invalid URL escape ${JSON.stringify(s.slice(i, i + 3))}`);
      bytes.push(parseInt(h, 16));
      i += 2;
    } else {
      flush();
      out += s[i];
    }
  }
  flush();
  return out;
}

/** Go's `shouldEscape` for a path (encodePath): unreserved and `$&+,/:;=@` stay. */
function escapePath(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'latin1')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-_.~$&+,/:;=@]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function validPort(port: string): boolean {
  return port === '' || /^:\d*$/.test(port);
}

/** Go's `url.ParseRequestURI`, or its error text. */
export function parseRequestURI(raw: string): URL_ | string {
  const fail = (msg: string): string => `parse ${JSON.stringify(raw)}: ${msg}`;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(raw)) return fail('net/url: invalid control character in URL');
  if (raw === '') return fail('empty url');
  if (raw === '*') return new URL_({ scheme: '', opaque: '', host: '', path: '*', rawPath: '', rawQuery: '' });
  let rest = raw;
  let scheme = '';
  // a scheme starts with a letter; a digit, '+', '-' or '.' first means there is none (and the text is a path), a ':' first is an error
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(rest);
  if (m) {
    scheme = m[1]!.toLowerCase();
    rest = rest.slice(m[0].length);
  } else if (rest.startsWith(':')) {
    return fail('missing protocol scheme');
  }
  let rawQuery = '';
  const q = rest.indexOf('?');
  if (q >= 0) {
    rawQuery = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  if (!rest.startsWith('/')) {
    if (scheme !== '') return new URL_({ scheme, opaque: rest, host: '', path: '', rawPath: '', rawQuery });
    return fail('invalid URI for request');
  }
  let host = '';
  if (scheme !== '' && rest.startsWith('//')) {
    const authEnd = rest.indexOf('/', 2);
    const authority = authEnd < 0 ? rest.slice(2) : rest.slice(2, authEnd);
    rest = authEnd < 0 ? '' : rest.slice(authEnd);
    const at = authority.lastIndexOf('@');
    const hostPart = at < 0 ? authority : authority.slice(at + 1);
    if (hostPart.startsWith('[')) {
      const close = hostPart.lastIndexOf(']');
      if (close < 0) return fail('missing \']\' in host');
      const port = hostPart.slice(close + 1);
      if (!validPort(port)) return fail(`invalid port ${JSON.stringify(port)} after host`);
    } else {
      const colon = hostPart.lastIndexOf(':');
      if (colon >= 0 && !validPort(hostPart.slice(colon))) return fail(`invalid port ${JSON.stringify(hostPart.slice(colon))} after host`);
    }
    // Go's unescape in host mode: a character a host may not hold (a fragment's '#': ParseRequestURI does not cut one off)
    const bad = /[^A-Za-z0-9\-_.~!$&'()*+,;=:[\]<>"%\x80-\uffff]/.exec(hostPart);
    if (bad) return fail(`invalid character ${JSON.stringify(bad[0])} in host name`);
    const unescapedHost = unescapePath(hostPart);
    if (unescapedHost instanceof Error) return fail(unescapedHost.message);
    host = unescapedHost;
  }
  const path = unescapePath(rest);
  if (path instanceof Error) return fail(path.message);
  return new URL_({ scheme, opaque: '', host, path, rawPath: escapePath(path) === rest ? '' : rest, rawQuery });
}

function hostname(host: string): string {
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    return close < 0 ? host.slice(1) : host.slice(1, close);
  }
  const colon = host.lastIndexOf(':');
  return colon >= 0 && validPort(host.slice(colon)) ? host.slice(0, colon) : host;
}

function portOf(host: string): string {
  const close = host.lastIndexOf(']');
  const colon = host.lastIndexOf(':');
  if (colon < 0 || colon < close) return '';
  const port = host.slice(colon + 1);
  return /^\d*$/.test(port) ? port : '';
}

/** Go's `url.ParseQuery`, keys and values unescaped (a pair that does not unescape is left out). */
function queryOf(raw: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const pair of raw.split('&')) {
    if (pair === '' || pair.includes(';')) continue;
    const eq = pair.indexOf('=');
    const decode = (s: string): string | undefined => {
      const r = unescapePath(s.replaceAll('+', ' '));
      return r instanceof Error ? undefined : Buffer.from(r, 'latin1').toString('utf8');
    };
    const k = decode(eq < 0 ? pair : pair.slice(0, eq));
    const v = decode(eq < 0 ? '' : pair.slice(eq + 1));
    if (k === undefined || v === undefined) continue;
    out.set(k, [...(out.get(k) ?? []), v]);
  }
  return out;
}

function urlOf(text: string): URL_ {
  const u = parseRequestURI(text);
  if (typeof u === 'string') throw new Error(`URL parse error during conversion from string: ${u}`);
  return u;
}

/** Register the URL library: `url`, `isURL` and the URL getters. */
function registerURL(env: Environment): void {
  env.registerType('net.URL', URL_);
  env.registerFunction('url(string): net.URL', urlOf);
  env.registerFunction('isURL(string): bool', (s: string) => typeof parseRequestURI(s) !== 'string');
  env.registerFunction('net.URL.getScheme(): string', (u: URL_) => u.scheme);
  env.registerFunction('net.URL.getHost(): string', (u: URL_) => u.host);
  env.registerFunction('net.URL.getHostname(): string', (u: URL_) => hostname(u.host));
  env.registerFunction('net.URL.getPort(): string', (u: URL_) => portOf(u.host));
  env.registerFunction('net.URL.getEscapedPath(): string', (u: URL_) => (u.rawPath !== '' ? u.rawPath : escapePath(u.path)));
  env.registerFunction('net.URL.getQuery(): map<string, list<string>>', (u: URL_) => queryOf(u.rawQuery));
}

// --- formats ----------------------------------------------------------------------

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_TEXT =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/** A check as apimachinery's validation functions make them: the length first, then the pattern (the fake's own name rules and messages). */
function check(max: number, pattern: RegExp, message: string): (s: string) => string[] {
  return (s) => [...(s.length > max ? [`must be no more than ${max} characters`] : []), ...(pattern.test(s) ? [] : [message])];
}

/** `IsDNS1123Label`: a value that is a subdomain but not a label is told it has dots. */
const dns1123Label = (s: string): string[] => [...(s.length > 63 ? ['must be no more than 63 characters'] : []), ...(DNS1123_LABEL.test(s) ? [] : [DNS1123_SUBDOMAIN.test(s) ? 'must not contain dots' : LABEL_TEXT])];
const dns1123Subdomain = check(253, DNS1123_SUBDOMAIN, SUBDOMAIN_TEXT);
const dns1035Label = check(63, DNS1035_LABEL, DNS1035_TEXT);

/**
 * The `...Prefix` forms check a name that gets a suffix appended
 * (`generateName`): apimachinery's `maskTrailingDash` first replaces a
 * trailing dash, with the character before it, by `a`.
 */
const maskTrailingDash = (s: string): string => (s.length > 1 && s.endsWith('-') ? `${s.slice(0, -2)}a` : s);

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const QUALIFIED_TEXT =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/** `IsQualifiedName`: `[prefix/]name`, every problem of each part. */
function qualifiedName(s: string): string[] {
  const parts = s.split('/');
  // kube-apiserver v1.37's words: a "label key", and a length in bytes (found by the CEL differential)
  if (parts.length > 2) return [`a valid label key ${QUALIFIED_TEXT} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  const out: string[] = [];
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix.length === 0) out.push('prefix part must be non-empty');
    else out.push(...dns1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  }
  const name = parts[parts.length - 1]!;
  if (name.length === 0) out.push('name part must be non-empty');
  else if (utf8.encode(name).length > 63) out.push('name part must be no more than 63 bytes');
  if (!QUALIFIED_NAME.test(name)) out.push(`name part ${QUALIFIED_TEXT}`);
  return out;
}

const utf8 = new TextEncoder();

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** strfmt's base64 check: padded standard base64, at least one group, nothing else (no line breaks, not empty: found by the CEL differential). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/;
const isBase64 = (s: string): boolean => BASE64.test(s);

/** Go's `time.Parse("2006-01-02", s)` accepts it (a real day of a real month). */
function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
}

/**
 * strfmt's `IsDateTime`: lower-cased and split at every `t`, the first
 * piece a date and the second a time (`hh:mm:ss`, any one character then
 * digits for a fraction, `z` or an offset), hours at most 23, minutes and
 * seconds at most 59; pieces after the second are not looked at.
 */
function isDateTime(s: string): boolean {
  if (s.length < 4) return false;
  const pieces = s.toLowerCase().split('t');
  if (pieces.length < 2 || !isDate(pieces[0]!)) return false;
  const m = /^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$/u.exec(pieces[1]!);
  return m !== null && m[1]! <= '23' && m[2]! <= '59' && m[3]! <= '59';
}

const FORMATS: Readonly<Record<string, (s: string) => string[]>> = {
  dns1123Label,
  dns1123Subdomain,
  dns1035Label,
  qualifiedName,
  dns1123LabelPrefix: (s) => dns1123Label(maskTrailingDash(s)),
  dns1123SubdomainPrefix: (s) => dns1123Subdomain(maskTrailingDash(s)),
  dns1035LabelPrefix: (s) => dns1035Label(maskTrailingDash(s)),
  // the label-selector check's problems, joined there with '; '
  labelValue: (s) => labelValueProblem(s)?.split('; ') ?? [],
  uri: (s) => {
    const u = parseRequestURI(s);
    return typeof u === 'string' ? [u] : [];
  },
  uuid: (s) => (UUID.test(s) ? [] : ['does not match the UUID format']),
  byte: (s) => (isBase64(s) ? [] : ['invalid base64']),
  date: (s) => (isDate(s) ? [] : ['invalid date']),
  datetime: (s) => (isDateTime(s) ? [] : ['invalid datetime']),
};

/** A named format of the CEL format library. */
export class Format {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

class FormatLibrary {}

/** Register the format library: `format.<name>()`, `format.named(name)` and `Format.validate`. */
function registerFormat(env: Environment): void {
  env.registerType('kubeloop.FormatLibrary', FormatLibrary);
  env.registerType('net.Format', Format);
  env.registerConstant('format', 'kubeloop.FormatLibrary', new FormatLibrary());
  for (const name of Object.keys(FORMATS)) env.registerFunction(`kubeloop.FormatLibrary.${name}(): net.Format`, () => new Format(name));
  env.registerFunction('kubeloop.FormatLibrary.named(string): optional<net.Format>', (_: FormatLibrary, name: string) => (name in FORMATS ? Optional.of(new Format(name)) : Optional.none()));
  env.registerFunction('net.Format.validate(string): optional<list<string>>', (f: Format, s: string) => {
    const errors = FORMATS[f.name]!(s);
    return errors.length > 0 ? Optional.of(errors) : Optional.none();
  });
}
