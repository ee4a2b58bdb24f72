import { describe, expect, it } from 'vitest';
import * as der from '../src/internal/der.js';
import { children, content, readElement } from '../src/internal/der-reader.js';

const hex = (b: Buffer): string => b.toString('hex');

describe('DER writer', () => {
  it('encodes short and long lengths', () => {
    expect(hex(der.octetString(Buffer.alloc(3)))).toBe('0403000000');
    const long = der.octetString(Buffer.alloc(300));
    expect(hex(long.subarray(0, 4))).toBe('0482012c');
    expect(long.length).toBe(304);
  });

  it('encodes object identifiers with multi-byte arcs', () => {
    // 1.2.840.10045.4.3.2 (ecdsa-with-SHA256)
    expect(hex(der.objectIdentifier('1.2.840.10045.4.3.2'))).toBe('06082a8648ce3d040302');
    expect(() => der.objectIdentifier('1')).toThrow(/malformed/);
  });

  it('keeps integers positive and minimal', () => {
    expect(hex(der.unsignedInteger(Buffer.from([0x80])))).toBe('02020080');
    expect(hex(der.unsignedInteger(Buffer.from([0, 0, 5])))).toBe('020105');
    expect(hex(der.smallInteger(0))).toBe('020100');
    expect(hex(der.smallInteger(256))).toBe('02020100');
  });

  it('drops trailing zero bits of named bit strings', () => {
    // digitalSignature(0) + keyEncipherment(2) = 1010 0000, 5 unused bits
    expect(hex(der.namedBits([0, 2]))).toBe('030205a0');
    // digitalSignature(0), keyCertSign(5), cRLSign(6) = 1000 0110, 1 unused bit
    expect(hex(der.namedBits([0, 5, 6]))).toBe('03020186');
  });

  it('writes UTCTime before 2050 and GeneralizedTime after', () => {
    expect(der.time(new Date('2030-01-02T03:04:05Z')).toString('latin1')).toBe('\x17\x0d300102030405Z');
    expect(der.time(new Date('2051-01-02T03:04:05Z')).toString('latin1')).toBe('\x18\x0f20510102030405Z');
  });

  it('reads back what it writes, and refuses truncated input', () => {
    const encoded = der.sequence(der.smallInteger(5), der.octetString(Buffer.alloc(300, 1)), der.utf8String('x'));
    const root = readElement(encoded, 0);
    const [int, octets, text] = children(encoded, root);
    expect(int?.tag).toBe(0x02);
    expect(content(encoded, octets!).length).toBe(300);
    expect(content(encoded, text!).toString()).toBe('x');
    expect(() => readElement(encoded.subarray(0, 10), 0)).toThrow(RangeError);
    expect(() => readElement(Buffer.from([0x30]), 0)).toThrow(RangeError);
    expect(() => readElement(Buffer.from([0x30, 0x80]), 0)).toThrow(RangeError);
  });
});
