/**
 * The Kubernetes CEL libraries of the fake (src/internal/cel-k8s.ts) at their
 * edges: the forms Go's parsers take and refuse, the canonical printing of
 * addresses, and inputs that must not stall the fake. Their agreement with
 * kube-apiserver is the CEL differential's (test/fuzz/cel.test.ts).
 */
import { Environment } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { parseCIDR, parseIP, parseQuantity, parseRequestURI, registerKubernetesLibraries } from '../src/internal/cel-k8s.js';
import type { Quantity } from '../src/internal/cel-k8s.js';

function env(): Environment {
  const e = new Environment({ unlistedVariablesAreDyn: true, enableOptionalTypes: true, homogeneousAggregateLiterals: false });
  registerKubernetesLibraries(e);
  return e;
}

describe('quantities', () => {
  it('are exact, in Go\'s int64-or-decimal forms', () => {
    const e = env();
    expect(e.evaluate("quantity('1Ki') == quantity('1024')")).toBe(true);
    expect(e.evaluate("quantity('1') == quantity('1000m')")).toBe(true);
    // Go keeps 1000m as 1000 at scale -3: not an integer to AsInt64, nor is a binary fraction
    expect(e.evaluate("quantity('1000m').isInteger()")).toBe(false);
    expect(e.evaluate("quantity('.5Gi').isInteger()")).toBe(false);
    expect(e.evaluate("quantity('1k').asInteger()")).toBe(1000n);
    expect(e.evaluate("quantity('500m').add(1).compareTo(quantity('1.5'))")).toBe(0n);
    expect(e.evaluate("quantity('1n').sub(quantity('2n')).isLessThan(quantity('0'))")).toBe(true);
    expect((): unknown => e.evaluate("quantity('0.5').asInteger()")).toThrow('cannot convert value to integer');
    // below a nano rounds up, as ParseQuantity does
    expect((parseQuantity('0.1n') as Quantity).nano).toBe(1n);
  });

  it('refuses what ParseQuantity refuses, with its words, and an exponent too large to expand without stalling', () => {
    for (const bad of ['', 'bad', '1x', '1e', '1Kii', '--1', '1 Gi']) expect(typeof parseQuantity(bad), bad).toBe('string');
    // no digits is zero to Go (the CEL differential checks it against the server)
    for (const zero of ['Gi', '.n', '-.u', '.']) expect((parseQuantity(zero) as Quantity).nano, zero).toBe(0n);
    // ... unless the suffix is too large for Go's int64 path: its decimal path needs a digit
    expect(parseQuantity('+.Ei')).toBe('unable to parse numeric part of quantity');
    expect(parseQuantity('1Q')).toBe("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    // (a stall would show as this test's timeout)
    expect(typeof parseQuantity('1e999999999')).toBe('string');
    expect(typeof parseQuantity(`${'9'.repeat(10_000)}E`)).not.toBe('string');
  });
});

describe('IP addresses and CIDRs', () => {
  it('parse as netip does and print canonically (RFC 5952)', () => {
    expect(parseIP('2001:0db8:0000:0000:0000:0000:0000:0001')?.toString()).toBe('2001:db8::1');
    expect(parseIP('2001:db8:0:1:0:0:0:1')?.toString()).toBe('2001:db8:0:1::1');
    expect(parseIP('2001:db8:0:1:1:1:1:1')?.toString()).toBe('2001:db8:0:1:1:1:1:1'); // one zero group is not compressed
    expect(parseIP('::')?.toString()).toBe('::');
    expect(parseIP('::ffff:1.2.3.4')).toBeUndefined(); // IPv4-mapped: refused by the CEL library
    expect(parseIP('fe80::1%eth0')).toBeUndefined(); // zones: refused
    for (const bad of ['01.2.3.4', '1.2.3', '1.2.3.4.5', '256.1.1.1', '1::2::3', '1:2:3:4:5:6:7:8:9', 'x']) expect(parseIP(bad), bad).toBeUndefined();
    expect(parseCIDR('10.1.0.0/8')?.toString()).toBe('10.1.0.0/8');
    for (const bad of ['10.0.0.0/33', '10.0.0.0/08', '10.0.0.0', '::/129']) expect(parseCIDR(bad), bad).toBeUndefined();
    const e = env();
    expect(e.evaluate("cidr('10.1.0.0/8').masked() == cidr('10.0.0.0/8')")).toBe(true);
    expect(e.evaluate("cidr('2001:db8::/32').containsCIDR('2001:db8:1::/48')")).toBe(true);
    expect(e.evaluate("ip('10.0.0.1').isGlobalUnicast() && !ip('169.254.0.1').isGlobalUnicast()")).toBe(true);
    // class E is global unicast to Go; multicast and the broadcast address are not
    expect(e.evaluate("ip('251.3.255.8').isGlobalUnicast() && !ip('239.1.1.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()")).toBe(true);
    expect((): unknown => e.evaluate("ip('01.2.3.4')")).toThrow('ParseAddr("01.2.3.4"): IPv4 field has octet with leading zero');
  });
});

describe('URLs and formats', () => {
  it('parse as url.ParseRequestURI does', () => {
    expect(parseRequestURI('example.com/x')).toBe('parse "example.com/x": invalid URI for request');
    expect(parseRequestURI('https://h/a%zz')).toBe('parse "https://h/a%zz": invalid URL escape "%zz"');
    expect(parseRequestURI('http://1.c.wc#v5~')).toBe('parse "http://1.c.wc#v5~": invalid character "#" in host name');
    expect(parseRequestURI('https://h:port/')).toBe('parse "https://h:port/": invalid port ":port" after host');
    const e = env();
    expect(e.evaluate("url('https://u:p@h:8443/a%20b?x=1&x=2').getQuery()['x']")).toEqual(['1', '2']);
    expect(e.evaluate("url('https://[::1]:8443/').getHostname() + ' ' + url('https://[::1]:8443/').getPort()")).toBe('::1 8443');
    expect(e.evaluate('format.dns1123Label().validate(s).value().size()', { s: 'a'.repeat(64) })).toBe(1n);
    // every format of the library is there (found absent by the CEL differential before), and none other
    expect(e.evaluate("format.named('uuid').hasValue() && !format.named('nope').hasValue()")).toBe(true);
    expect(e.evaluate("format.uuid().validate('123e4567e89b12d3a456426614174000').hasValue()")).toBe(false);
    expect(e.evaluate("format.byte().validate('').value()")).toEqual(['invalid base64']);
    expect(e.evaluate("format.date().validate('2023-02-29').value()")).toEqual(['invalid date']);
    expect(e.evaluate("format.datetime().validate('2024-02-29t23:59:59.5+01:00').hasValue()")).toBe(false);
    expect(e.evaluate("format.dns1123LabelPrefix().validate('my-name-').hasValue()")).toBe(false);
    expect(e.evaluate("format.dns1123Label().validate('a.b').value()")).toEqual(['must not contain dots']);
    // no scheme when a digit comes first (a path, then not one a request may name); the empty string is its own error
    expect(parseRequestURI('2024-01-01T10:00:00Z')).toBe('parse "2024-01-01T10:00:00Z": invalid URI for request');
    expect(parseRequestURI(':x')).toBe('parse ":x": missing protocol scheme');
    expect(parseRequestURI('')).toBe('parse "": empty url');
  });
});
