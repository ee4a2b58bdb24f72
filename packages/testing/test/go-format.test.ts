import { describe, expect, it } from 'vitest';
import { goFormat, goSyntax, goValueType } from '../src/internal/go-format.js';

describe('goFormat', () => {
  it('writes a decoded patch as Go prints it: maps sorted by key, strings bare, int64 whole, float64 shortest with %e outside [1e-4, 1e6)', () => {
    expect(goFormat({ b: [1, 'x y', true, null], a: { z: 0.5 } })).toBe('map[a:map[z:0.5] b:[1 x y true <nil>]]');
    expect([1.5e-7, -0.000001, 0.0001, 123456.789, 1000000.5, 1e21, 2.5].map(goFormat)).toEqual(['1.5e-07', '-1e-06', '0.0001', '123456.789', '1.0000005e+06', '1e+21', '2.5']);
    // int64 whole; past it the decoder has a float64
    expect([100000000, 9223372036854775807n, 12345678901234567890n].map(goFormat)).toEqual(['100000000', '9223372036854775807', '1.2345678901234567e+19']);
    // keys in byte order, as Go sorts strings
    expect(goFormat({ é: 1, z: 2, Z: 3 })).toBe('map[Z:3 z:2 é:1]');
  });
});

describe('goSyntax and goValueType', () => {
  it("write a decoded value as Go's %#v and %T do (server-side apply's typed converter quotes values so)", () => {
    expect(goSyntax({ b: ['x', 1, null], a: true })).toBe('map[string]interface {}{"a":true, "b":[]interface {}{"x", 1, interface {}(nil)}}');
    expect([3, 1.5, 'x y', false].map(goSyntax)).toEqual(['3', '1.5', '"x y"', 'false']);
    expect(['x', 3, 1.5, true, [1], { a: 1 }, 12345678901234567890n].map(goValueType)).toEqual(['string', 'int64', 'float64', 'bool', '[]interface {}', 'map[string]interface {}', 'float64']);
  });
});
