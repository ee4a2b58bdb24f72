/**
 * String formats as kube-apiserver checks them in custom resources (its
 * OpenAPI format registry), written to the same acceptance: RFC 3339
 * timestamps with a `T` and seconds, calendar-checked dates, standard base64,
 * Go's IP, CIDR and MAC parsing. Formats without a checker here are not
 * checked locally; the validator reports them as unchecked.
 */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))$/;
const UUID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/i;
const UUID_VERSION = (v: string): RegExp => new RegExp(`^[0-9a-f]{8}-[0-9a-f]{4}-${v}[0-9a-f]{3}-${v === '3' ? '' : '[89ab]'}[0-9a-f]{${v === '3' ? 4 : 3}}-[0-9a-f]{12}$`, 'i');
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const HOSTNAME_LABEL = /^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$/;

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

function validDate(y: string, m: string, d: string): boolean {
  const month = Number(m);
  const day = Number(d);
  return month >= 1 && month <= 12 && day >= 1 && day <= daysIn(Number(y), month);
}

function isDate(s: string): boolean {
  const m = DATE.exec(s);
  return m !== null && validDate(m[1]!, m[2]!, m[3]!);
}

function isDateTime(s: string): boolean {
  const m = DATE_TIME.exec(s);
  if (m === null || !validDate(m[1]!, m[2]!, m[3]!)) return false;
  if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 59) return false;
  if (m[9] !== undefined && (Number(m[10]) > 23 || Number(m[11]) > 59)) return false;
  return true;
}

/**
 * The dotted form as the API server parses it for formats: four decimal
 * octets up to 255, leading zeros allowed (Kubernetes' "sloppy" parser,
 * which keeps accepting what Go's net.ParseIP did before Go 1.17; measured:
 * `01.2.3.4` passes `format: ipv4`).
 */
function isIPv4Literal(s: string): boolean {
  const parts = s.split('.');
  return parts.length === 4 && parts.every((p) => /^[0-9]{1,3}$/.test(p) && Number(p) <= 255);
}

/** Go's net.ParseIP for the colon form: hex groups, one `::`, an optional dotted IPv4 tail, no zone. */
function isIPv6Literal(s: string): boolean {
  if (s.includes('%')) return false;
  let groups = s;
  let extra = 0;
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    if (!isIPv4Literal(s.slice(lastColon + 1))) return false;
    groups = `${s.slice(0, lastColon + 1)}0`;
    extra = 1;
  }
  const halves = groups.split('::');
  if (halves.length > 2) return false;
  const parse = (h: string): string[] | undefined => {
    if (h === '') return [];
    const g = h.split(':');
    return g.every((x) => /^[0-9a-fA-F]{1,4}$/.test(x)) ? g : undefined;
  };
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  if (head === undefined || tail === undefined) return false;
  const count = head.length + tail.length + extra;
  return halves.length === 2 ? count <= 7 : count === 8;
}

function isIP(s: string): boolean {
  return isIPv4Literal(s) || isIPv6Literal(s);
}

function isCIDR(s: string): boolean {
  const slash = s.indexOf('/');
  if (slash < 0) return false;
  const ip = s.slice(0, slash);
  const bits = s.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(bits)) return false;
  if (isIPv4Literal(ip)) return Number(bits) <= 32;
  if (isIPv6Literal(ip)) return Number(bits) <= 128;
  return false;
}

/** Go's net.ParseMAC: 6, 8 or 20 octets, written xx:xx, xx-xx or xxxx.xxxx. */
function isMAC(s: string): boolean {
  const colon = /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2})*$/;
  const dash = /^[0-9a-fA-F]{2}(-[0-9a-fA-F]{2})*$/;
  const dot = /^[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4})*$/;
  const octets = colon.test(s) || dash.test(s) ? (s.length + 1) / 3 : dot.test(s) ? ((s.length + 1) / 5) * 2 : 0;
  return octets === 6 || octets === 8 || octets === 20;
}

/** A DNS hostname whose last label is alphabetic (the server refuses `a.b`'s one-letter top label too). */
function isHostname(s: string): boolean {
  if (s.length === 0 || s.length > 255) return false;
  const labels = s.replace(/\.$/, '').split('.');
  if (!labels.every((l) => l.length <= 63 && HOSTNAME_LABEL.test(l))) return false;
  const top = labels[labels.length - 1]!;
  return labels.length === 1 || /^[A-Za-z]{2,63}$/.test(top);
}

/** An absolute URI (scheme:...) or an absolute path, as Go's url.ParseRequestURI accepts. */
function isURI(s: string): boolean {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what a URI may not hold
  if (s === '' || /[\s\u0000-\u001f\u007f]/.test(s)) return false;
  if (s.startsWith('/')) return true;
  return /^[A-Za-z][A-Za-z0-9+.-]*:/.test(s);
}

/** Standard base64 with padding; the empty string is refused. */
function isBase64(s: string): boolean {
  return s.length > 0 && BASE64.test(s);
}

/** A checker per (format, JSON type); absent means not checked locally. */
export const STRING_FORMATS: Readonly<Record<string, (s: string) => boolean>> = Object.freeze({
  'date-time': isDateTime,
  datetime: isDateTime,
  date: isDate,
  byte: isBase64,
  uuid: (s: string) => UUID.test(s),
  uuid3: (s: string) => UUID_VERSION('3').test(s),
  uuid4: (s: string) => UUID_VERSION('4').test(s),
  uuid5: (s: string) => UUID_VERSION('5').test(s),
  ipv4: (s: string) => isIP(s) && s.includes('.'),
  ipv6: (s: string) => isIP(s) && s.includes(':'),
  cidr: isCIDR,
  mac: isMAC,
  hostname: isHostname,
  uri: isURI,
});

/**
 * The string formats the API server knows. For a string field with one of
 * these, its type check lets any JSON array through (a quirk of its
 * validator, measured: `{ at: [1] }` passes `type: string, format: date`),
 * and other wrong types are reported as "must be of type <format>".
 */
export const SERVER_STRING_FORMATS: ReadonlySet<string> = new Set([
  'date-time', 'datetime', 'date', 'byte', 'uuid', 'uuid3', 'uuid4', 'uuid5', 'ipv4', 'ipv6', 'cidr', 'mac', 'hostname', 'email', 'uri',
  'duration', 'isbn', 'isbn10', 'isbn13', 'creditcard', 'ssn', 'hexcolor', 'rgbcolor', 'bsonobjectid', 'password',
]);

/** Formats the API server does not check on strings (type hints, or unknown names). */
export const UNCHECKED_STRING_FORMATS: ReadonlySet<string> = new Set(['int32', 'int64', 'float', 'double', 'password', 'binary', '']);

/** Integer formats: the server checks the range. */
export const INTEGER_FORMATS: Readonly<Record<string, readonly [number, number]>> = Object.freeze({
  int32: [-2147483648, 2147483647] as const,
  // The validator sees a bigint (an int64 past 2^53) as its nearest number, and 2^63 - 1 rounds to 2^63.
  int64: [-(2 ** 63), 2 ** 63] as const,
});
