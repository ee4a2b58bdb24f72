/**
 * A minimal DER (ASN.1 Distinguished Encoding Rules) writer: just the types an
 * X.509 v3 certificate needs. Every function returns the complete
 * tag-length-value encoding as a Buffer.
 */

function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  let rest = length;
  while (rest > 0) {
    bytes.unshift(rest & 0xff);
    rest = Math.floor(rest / 256);
  }
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** Any tag with raw content bytes. */
export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(content.length), content]);
}

export function sequence(...items: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(items));
}

export function set(...items: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat(items));
}

export function boolean(value: boolean): Buffer {
  return tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
}

/** A non-negative INTEGER from its big-endian magnitude. */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  let body = magnitude.subarray(start);
  if (body.length === 0) body = Buffer.from([0]);
  if ((body[0] ?? 0) & 0x80) body = Buffer.concat([Buffer.from([0]), body]);
  return tlv(0x02, body);
}

export function smallInteger(value: number): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fffffff) {
    throw new RangeError(`smallInteger: ${value} is out of range`);
  }
  const bytes: number[] = [];
  let rest = value;
  do {
    bytes.unshift(rest & 0xff);
    rest = Math.floor(rest / 256);
  } while (rest > 0);
  return unsignedInteger(Buffer.from(bytes));
}

export function objectIdentifier(dotted: string): Buffer {
  const parts = dotted.split('.').map((p) => Number.parseInt(p, 10));
  if (parts.length < 2 || parts.some((p) => !Number.isInteger(p) || p < 0)) {
    throw new RangeError(`objectIdentifier: malformed OID ${dotted}`);
  }
  const [first = 0, second = 0, ...rest] = parts;
  const out: number[] = [first * 40 + second];
  for (const arc of rest) {
    const chunk: number[] = [];
    let value = arc;
    chunk.unshift(value & 0x7f);
    value = Math.floor(value / 128);
    while (value > 0) {
      chunk.unshift((value & 0x7f) | 0x80);
      value = Math.floor(value / 128);
    }
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

export function utf8String(value: string): Buffer {
  return tlv(0x0c, Buffer.from(value, 'utf8'));
}

export function octetString(value: Buffer): Buffer {
  return tlv(0x04, value);
}

/** A BIT STRING whose content is whole bytes (no unused bits). */
export function bitString(value: Buffer, unusedBits = 0): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), value]));
}

/**
 * A named-bit BIT STRING (as keyUsage uses): bit 0 is the most significant bit
 * of the first byte; DER drops trailing zero bits.
 */
export function namedBits(bits: readonly number[]): Buffer {
  const highest = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) {
    const index = Math.floor(bit / 8);
    bytes[index] = (bytes[index] ?? 0) | (0x80 >> bit % 8);
  }
  const unused = 7 - (highest % 8);
  return bitString(bytes, unused);
}

/** UTCTime before 2050, GeneralizedTime from 2050 on (RFC 5280 4.1.2.5). */
export function time(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ
  const compact = iso.slice(0, 19).replace(/[-:T]/g, '') + 'Z'; // YYYYMMDDHHmmssZ
  if (date.getUTCFullYear() < 2050) return tlv(0x17, Buffer.from(compact.slice(2), 'ascii'));
  return tlv(0x18, Buffer.from(compact, 'ascii'));
}

/** Context-specific constructed tag, EXPLICIT: [n] { inner }. */
export function explicit(tagNumber: number, inner: Buffer): Buffer {
  return tlv(0xa0 | tagNumber, inner);
}

/** Context-specific primitive tag, IMPLICIT: [n] raw bytes. */
export function implicitPrimitive(tagNumber: number, content: Buffer): Buffer {
  return tlv(0x80 | tagNumber, content);
}
