/**
 * CRD validation rules (CEL, `x-kubernetes-validations`) on the fake and on
 * kube-apiserver: one CRD with rules of the kinds operators write (a
 * cross-field bound, regexes, list macros, a sorted list, a map's keys, a
 * double, a reason and a fieldPath, a transition rule on oldSelf, a rule per
 * map-list item), installed on both; fast-check generates objects (fixed
 * seed), each is created (dry run) on both, then an update of a stored
 * object to each is sent to both; the answers (code, and the causes: each
 * failed rule's field, reason and message) must agree. The server orders
 * several causes by Go map iteration, differently from one request to the
 * next, so they are compared as a set.
 *
 *   pnpm -s exec vitest run packages/testing/test/fuzz/cel.test.ts     # seed 40, 150 objects (KUBELOOP_CEL_SEED, KUBELOOP_CEL_RUNS; KUBELOOP_CEL_REPORT=file for every disagreement)
 */
import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { createFakeApiServer, eventually } from '../../src/index.js';
import type { FakeApiServer } from '../../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../../test/support/env.js';

const SEED = Number(process.env['KUBELOOP_CEL_SEED'] ?? '40');
const RUNS = Number(process.env['KUBELOOP_CEL_RUNS'] ?? '150');
/** A file to write every disagreement to (the test prints the first five). */
const REPORT = process.env['KUBELOOP_CEL_REPORT'];
const GROUP = 'cel.conformance.kubeloop.dev';

const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `rules.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'rules', singular: 'rule', kind: 'Rule', listKind: 'RuleList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                'x-kubernetes-validations': [
                  { rule: 'self.replicas <= self.maxReplicas', message: 'replicas must not exceed maxReplicas' },
                  { rule: "!has(self.mode) || self.mode in ['auto', 'manual']", message: 'mode must be auto or manual', fieldPath: '.mode', reason: 'FieldValueForbidden' },
                ],
                properties: {
                  replicas: { type: 'integer' },
                  maxReplicas: { type: 'integer' },
                  mode: { type: 'string', maxLength: 10 },
                  name: { type: 'string', maxLength: 10, 'x-kubernetes-validations': [{ rule: "self.matches('^[a-z]+$')" }, { rule: 'self.lowerAscii() == self', message: 'lower case only' }, { rule: "self.replace('a', '').size() > 0", message: 'not only a' }] },
                  tags: { type: 'array', maxItems: 5, items: { type: 'string', maxLength: 10 }, 'x-kubernetes-validations': [{ rule: 'self.all(t, t.size() <= 3)', message: 'tags are short' }, { rule: 'self.isSorted()', message: 'tags are sorted' }] },
                  ratio: { type: 'number', 'x-kubernetes-validations': [{ rule: 'self >= 0.5', message: 'ratio at least one half' }] },
                  labels: { type: 'object', maxProperties: 5, additionalProperties: { type: 'string', maxLength: 10 }, 'x-kubernetes-validations': [{ rule: "self.all(k, k.startsWith('x'))", message: 'label keys start with x' }] },
                  fixed: { type: 'string', maxLength: 10, 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'fixed is immutable' }] },
                  memory: {
                    type: 'string',
                    maxLength: 20,
                    'x-kubernetes-validations': [
                      { rule: "isQuantity(self) && quantity(self).isLessThan(quantity('2Gi'))", messageExpression: "'memory ' + self + ' is not a quantity under 2Gi'" },
                      { rule: "!isQuantity(self) || quantity(self).isGreaterThan(quantity('0')) && quantity(self).add(1).compareTo(quantity('1Mi')) >= 0", message: 'at least 1Mi less one', messageExpression: "''" },
                      { rule: "!isQuantity(self) || quantity(self).isInteger() || quantity(self).asApproximateFloat() < 1.0", message: 'whole or below one', messageExpression: "'two\\nlines'" },
                    ],
                  },
                  cpu: { type: 'string', maxLength: 20, 'x-kubernetes-validations': [{ rule: "quantity(self) == quantity('1') || quantity(self).isGreaterThan(quantity('2'))", message: 'cpu is 1 or above 2' }, { rule: "!isQuantity(self) || quantity(self).sub(quantity('500m')).compareTo(quantity('0')) >= 0 && quantity(self).isInteger() == (quantity(self).asInteger() >= 0)", message: 'cpu is at least 500m' }] },
                  address: {
                    type: 'string',
                    maxLength: 40,
                    'x-kubernetes-validations': [
                      { rule: 'isIP(self) && ip.isCanonical(self)', messageExpression: "'address ' + self + ' is not a canonical IP'" },
                      { rule: '!isIP(self) || ip(self).family() == 4 ? !ip(self).isLoopback() && ip(self).isGlobalUnicast() : !ip(self).isLinkLocalUnicast()', message: 'not loopback or link-local' },
                      { rule: "!isIP(self) || string(ip(self)) != '10.0.0.1'", message: 'not the gateway' },
                      { rule: '!isIP(self) || !ip(self).isLinkLocalMulticast() && !ip(self).isUnspecified()', message: 'not link-local multicast nor unspecified' },
                    ],
                  },
                  network: {
                    type: 'string',
                    maxLength: 40,
                    'x-kubernetes-validations': [
                      { rule: 'isCIDR(self) && cidr(self).prefixLength() >= 8', message: 'a CIDR of at least /8' },
                      { rule: "!isCIDR(self) || cidr(self).containsIP('10.0.0.1') || cidr(self).containsCIDR('2001:db8::/64')", message: 'holds the gateway' },
                      { rule: '!isCIDR(self) || cidr(self).masked() == cidr(self) || cidr(self).ip().family() == 6', message: 'masked' },
                    ],
                  },
                  endpoint: {
                    type: 'string',
                    maxLength: 60,
                    'x-kubernetes-validations': [
                      { rule: "isURL(self) && url(self).getScheme() in ['http', 'https']", messageExpression: "'endpoint ' + self + ' is not an http URL'" },
                      { rule: "!isURL(self) || url(self).getHostname() != 'localhost'", message: 'not on localhost' },
                      { rule: "!isURL(self) || url(self).getEscapedPath().startsWith('/api')", message: 'under /api' },
                      { rule: "!isURL(self) || !('debug' in url(self).getQuery())", message: 'no debug' },
                      { rule: "url(self).getPort() != '22'", message: 'not ssh' },
                    ],
                  },
                  slug: {
                    type: 'string',
                    maxLength: 80,
                    'x-kubernetes-validations': [
                      { rule: '!format.dns1123Label().validate(self).hasValue()', messageExpression: "'label: ' + format.dns1123Label().validate(self).value()[0] + (format.dns1123Label().validate(self).value().size() > 1 ? '; ' + format.dns1123Label().validate(self).value()[1] : '')" },
                      { rule: "format.named('dns1035Label').hasValue() && !format.named('dns1035Label').value().validate(self).hasValue()", messageExpression: "format.dns1035Label().validate(self).value()[0]" },
                      { rule: "!format.labelValue().validate(self).hasValue() || self.size() > 70", message: 'a label value' },
                      { rule: "!format.named('nope').hasValue() && !format.dns1123Subdomain().validate(self).hasValue()", messageExpression: "'subdomain: ' + format.dns1123Subdomain().validate(self).value()[0]" },
                    ],
                  },
                  formatted: {
                    type: 'string',
                    maxLength: 80,
                    'x-kubernetes-validations': [
                      { rule: '!format.qualifiedName().validate(self).hasValue()', messageExpression: "'qualified: ' + format.qualifiedName().validate(self).value()[0] + (format.qualifiedName().validate(self).value().size() > 1 ? '; ' + format.qualifiedName().validate(self).value()[1] : '')" },
                      { rule: '!format.dns1123LabelPrefix().validate(self).hasValue()', messageExpression: "'label prefix: ' + format.dns1123LabelPrefix().validate(self).value()[0] + (format.dns1123LabelPrefix().validate(self).value().size() > 1 ? '; ' + format.dns1123LabelPrefix().validate(self).value()[1] : '')" },
                      { rule: "!format.named('dns1123SubdomainPrefix').value().validate(self).hasValue()", messageExpression: "'subdomain prefix: ' + format.dns1123SubdomainPrefix().validate(self).value()[0] + (format.dns1123SubdomainPrefix().validate(self).value().size() > 1 ? '; ' + format.dns1123SubdomainPrefix().validate(self).value()[1] : '')" },
                      { rule: '!format.dns1035LabelPrefix().validate(self).hasValue()', messageExpression: "'1035 prefix: ' + format.dns1035LabelPrefix().validate(self).value()[0] + (format.dns1035LabelPrefix().validate(self).value().size() > 1 ? '; ' + format.dns1035LabelPrefix().validate(self).value()[1] : '')" },
                      { rule: '!format.uri().validate(self).hasValue()', messageExpression: "'uri: ' + format.uri().validate(self).value()[0]" },
                      { rule: '!format.uuid().validate(self).hasValue()', messageExpression: "format.uuid().validate(self).value()[0]" },
                      { rule: '!format.byte().validate(self).hasValue()', messageExpression: "format.byte().validate(self).value()[0]" },
                      { rule: '!format.date().validate(self).hasValue()', messageExpression: "format.date().validate(self).value()[0]" },
                      { rule: "!format.named('datetime').value().validate(self).hasValue()", messageExpression: "format.datetime().validate(self).value()[0]" },
                    ],
                  },
                  version: {
                    type: 'string',
                    maxLength: 60,
                    'x-kubernetes-validations': [
                      { rule: "isSemver(self) && semver(self).isLessThan(semver('2.0.0'))", messageExpression: "'version ' + self + ' is not a semver under 2.0.0'" },
                      { rule: '!isSemver(self, true) || semver(self, true).major() >= 1 || semver(self, true).minor() > 2', message: 'at least 0.3' },
                      { rule: "semver(self).compareTo(semver('1.0.0-alpha.1')) >= 0", message: 'at least 1.0.0-alpha.1' },
                      { rule: "!isSemver(self) || semver(self).compareTo(semver('1.2.3+build.7')) != 0 && !semver(self).isGreaterThan(semver('1.9.0-rc.10'))", message: 'not 1.2.3, not past 1.9.0-rc.10' },
                      { rule: "!isSemver(self, true) || semver(self, true).patch() != 0 || semver(self, true) == semver('0.3.0', true)", message: 'a patch release' },
                    ],
                  },
                  ports: {
                    type: 'array',
                    maxItems: 3,
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['name'],
                    items: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 10 }, port: { type: 'integer' } }, 'x-kubernetes-validations': [{ rule: 'self.port > 0', message: 'port is positive' }, { rule: 'self.port == oldSelf.port', message: 'a port keeps its number' }] },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

const spec = fc.record(
  {
    replicas: fc.integer({ min: 0, max: 6 }),
    maxReplicas: fc.integer({ min: 0, max: 6 }),
    mode: fc.constantFrom('auto', 'manual', 'other'),
    name: fc.constantFrom('abc', 'Abc', 'a1', 'aaa', 'zz'),
    tags: fc.subarray(['a', 'bb', 'cccc', 'd']).chain((t) => fc.shuffledSubarray(t, { minLength: t.length, maxLength: t.length })),
    ratio: fc.constantFrom(0.25, 0.5, 0.75, 1),
    labels: fc.dictionary(fc.constantFrom('x1', 'y1', 'xz'), fc.constantFrom('v'), { maxKeys: 2 }),
    fixed: fc.constantFrom('p', 'q'),
    ports: fc.uniqueArray(fc.record({ name: fc.constantFrom('http', 'grpc'), port: fc.integer({ min: -1, max: 2 }) }), { selector: (p) => p.name, maxLength: 2 }),
  },
  { requiredKeys: ['replicas', 'maxReplicas'] },
);

const digits = (max: number): fc.Arbitrary<string> => fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: max });
/** Quantities as Go's parser sees them: any sign, digits, fraction and suffix, valid or not. */
const quantity = fc
  .tuple(fc.constantFrom('', '', '+', '-'), digits(4), fc.option(digits(3).map((f) => `.${f}`), { nil: '' }), fc.constantFrom('', '', 'm', 'k', 'M', 'G', 'Ki', 'Mi', 'Gi', 'n', 'u', 'E', 'Ei', 'e3', 'E-2', 'e+1', 'e', 'Q', 'i', 'KI', 'mi'))
  .map(([sign, whole, fraction, suffix]) => `${sign}${whole}${fraction}${suffix}`);
/** IPv4 octets with leading zeros and values past 255 now and then, 3 to 5 of them. */
const octet = fc.oneof(fc.nat(255).map(String), fc.nat(255).map(String), fc.nat(999).map(String), fc.nat(99).map((n) => `0${n}`));
const ipv4ish = fc.array(octet, { minLength: 3, maxLength: 5 }).map((o) => o.join('.'));
/** IPv6 addresses broken the ways people break them: a group too long, a second '::', a stray character, a group cut off. */
const ipv6ish = fc
  .tuple(fc.ipV6(), fc.constantFrom('12345', '::', 'g', ':', ':::', '.1'), fc.nat(40))
  .map(([a, bit, at]) => `${a.slice(0, at % (a.length + 1))}${bit}${a.slice(at % (a.length + 1))}`);
const address = fc.oneof(fc.ipV4(), fc.ipV6(), ipv4ish, fc.ipV4Extended(), ipv6ish, fc.ipV6().map((a) => a.toUpperCase()), fc.ipV4().map((a) => `::ffff:${a}`)).filter((a) => a.length <= 40);
const network = fc
  .tuple(fc.oneof(fc.ipV4(), fc.ipV6(), ipv4ish), fc.oneof(fc.nat(140).map(String), fc.nat(9).map((n) => `0${n}`)))
  .map(([a, bits]) => `${a}/${bits}`)
  .filter((c) => c.length <= 40);
/** URLs as a browser writes them, and the same with their scheme or host broken. */
const endpoint = fc
  .oneof(
    fc.webUrl({ withQueryParameters: true, withFragments: true }),
    fc.webUrl({ withQueryParameters: true }).map((u) => u.replace(/^https?:\/\//, '')),
    fc.webUrl().map((u) => u.replace(/\/\/([^/]+)/, '//$1:x')),
    fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)),
  )
  .filter((u) => u.length <= 60);
const slug = fc.string({ unit: fc.constantFrom(...'abzAZ09-._'), maxLength: 70 });
/** Strings for the format library: qualified names, name prefixes, URIs, UUIDs, base64, dates and datetimes, each valid and broken. */
const twoDigits = (max: number): fc.Arbitrary<string> => fc.nat(max).map((n) => String(n).padStart(2, '0'));
const isoDate = fc.tuple(fc.constantFrom('2023', '2024', '1900', '2000', '0000', '99999'), twoDigits(13), twoDigits(32)).map(([y, m, d]) => `${y}-${m}-${d}`);
const isoTime = fc
  .tuple(twoDigits(25), twoDigits(61), twoDigits(61), fc.constantFrom('', '', '.5', '.123456789', ',5', 'x5', '.'), fc.constantFrom('Z', 'z', '+01:00', '-23:59', '+1:00', '', '+0100'))
  .map(([h, m, sec, frac, zone]) => `${h}:${m}:${sec}${frac}${zone}`);
const formatted = fc.oneof(
  fc.tuple(fc.option(slug.map((x) => x.slice(0, 30)), { nil: undefined }), slug.map((x) => x.slice(0, 40))).map(([prefix, name]) => (prefix === undefined ? name : `${prefix}/${name}`)),
  fc.tuple(slug.map((x) => x.slice(0, 40)), fc.constantFrom('-', '--', 'a-', '.-', '')).map(([x, end]) => `${x}${end}`),
  fc.oneof(fc.uuid(), fc.uuid().map((u) => u.toUpperCase()), fc.uuid().map((u) => u.replace(/-/g, '')), fc.uuid().map((u) => u.replace('-', '')), fc.uuid().map((u) => `${u.slice(0, 35)}g`), fc.uuid().map((u) => `{${u}}`)),
  fc.oneof(fc.base64String({ maxLength: 60 }), fc.base64String({ maxLength: 40 }).map((b) => b.replace(/=+$/, '')), fc.base64String({ minLength: 4, maxLength: 40 }).map((b) => `${b.slice(0, 2)}\n${b.slice(2)}`), fc.base64String({ maxLength: 40 }).map((b) => b.replace(/\+/g, '-'))),
  isoDate,
  fc.tuple(isoDate, fc.constantFrom('T', 't', ' ', 'T', 'tt'), isoTime, fc.constantFrom('', '', 'T1', 'x')).map(([d, sep, t, tail]) => `${d}${sep}${t}${tail}`),
  endpoint,
);
/** Versions as people write them and break them: a `v`, leading zeros, one to four parts, pre-releases and builds with empty, numeric and odd identifiers. */
const versionNumber = fc.oneof(fc.nat(20).map(String), fc.nat(9).map((n) => `0${n}`), fc.constantFrom('', 'x', '18446744073709551616', '9223372036854775808', '1a'));
const identifier = fc.oneof(fc.nat(12).map(String), fc.constantFrom('alpha', 'beta', 'rc', 'Alpha', 'x-y', '', '01', 'a_b', 'é', '0', 'build'));
const version = fc
  .tuple(
    fc.constantFrom('', '', '', 'v', 'V'),
    fc.array(versionNumber, { minLength: 1, maxLength: 4 }),
    fc.option(fc.array(identifier, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    fc.option(fc.array(identifier, { minLength: 1, maxLength: 2 }), { nil: undefined }),
  )
  .map(([v, parts, pre, build]) => `${v}${parts.join('.')}${pre ? `-${pre.join('.')}` : ''}${build ? `+${build.join('.')}` : ''}`)
  .filter((x) => x.length <= 60);

/** The Kubernetes libraries' fields: quantities, IP addresses and CIDRs, valid and not, with messageExpression messages. */
const librarySpec = fc.record(
  {
    replicas: fc.constant(1),
    maxReplicas: fc.constant(2),
    memory: fc.oneof(quantity.filter((q) => q.length <= 20), fc.constantFrom('1Gi', '2Gi', '1.5Gi', '1024Mi', '3000M', '500m', '1e3', '1E9', 'bad', '0.1n', '2Gi1', '+1Mi', '-1Mi', '.5Gi', '1048575', '1Mi', '0.9')),
    cpu: fc.oneof(quantity.filter((q) => q.length <= 20), fc.constantFrom('1', '1000m', '2', '2001m', '3', '0.5', '500m', '1k', '2.5')),
    address: fc.oneof(address, fc.constantFrom('10.0.0.1', '10.0.0.2', '127.0.0.1', '::1', '2001:db8::1', '2001:DB8::1', '2001:db8:0:0:0:0:0:1', '01.2.3.4', '::ffff:1.2.3.4', 'fe80::1', '169.254.1.1', '224.0.0.1', '0.0.0.0', '1.2.3', '255.255.255.255', '2001:db8::0:1', 'ff02::1', 'ff12::1', 'ff03::1', '224.0.0.5', '224.0.1.5', '::')),
    endpoint: fc.oneof(endpoint, fc.constantFrom('https://example.com/api', 'http://localhost:8080/api/v1', 'https://[::1]:443/api', 'ftp://x/api', '/api/x', 'example.com/api', 'https://h:22/api', 'https://h/api%20x?x=1&x=2', 'https://h/api?debug', 'https://h/a%zz', 'https://h:port/api', 'mailto:a@b', 'https://h/api/../y?q=a+b', 'HTTPS://H/api', 'https://u:p@h:8443/api?x=%41')),
    slug: fc.oneof(slug, fc.constantFrom('abc', 'Abc', '1abc', 'a-b', 'a_b', '-a', 'a'.repeat(64), 'a.b', '', 'a'.repeat(71), 'x1')),
    formatted: fc.oneof(formatted.filter((x) => x.length <= 80), fc.constantFrom('example.com/MyName', 'a/b/c', '/name', 'prefix/', 'Example.com/x', 'x'.repeat(64), 'my-name-', 'a-', '-', 'a.b-', '2024-02-29', '2023-02-29', '2024-02-29T10:00:00Z', '2024-02-29t23:59:59.5+01:00', '2024-02-29T24:00:00Z', '2024-02-29T10:00:00Zt', 'aGVsbG8=', 'aGVsbG8', 'YQ==', 'YR==', '', '1234', 'urn:x', 'https://h/p', '123e4567-e89b-12d3-a456-426614174000', '123e4567e89b12d3a456426614174000')),
    version: fc.oneof(version, fc.constantFrom('1.2.3', '1.2.3+build.7', '1.2.3+other', 'v1.2.3', '1.2', '01.02.03', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-rc.1', '1.9.0-rc.10', '1.9.0-rc.9', '1.9.0-rc.11', '1.9.0', '2.0.0', '0.3.0', 'v0.3', '', 'v', '1..3', '1.2.3-', '1.2.3+', '1.2-rc.1', '1.2.3-01', 'latest')),
    network: fc.oneof(network, fc.constantFrom('10.0.0.0/8', '10.1.0.0/16', '10.0.0.1/8', '192.168.0.0/16', '10.0.0.0/33', '::/0', '2001:db8::/32', '2001:db8::1/48', '10.0.0.0/08', '10.0.0.0/4', 'x/8')),
  },
  { requiredKeys: ['replicas', 'maxReplicas'] },
);

const anySpec = fc.oneof(spec, librarySpec);

interface Backend {
  readonly name: 'fake' | 'envtest';
  readonly client: Client;
  readonly namespace: string;
}

async function send(b: Backend, method: 'POST' | 'PUT', path: string, body: unknown, query: Record<string, string> = {}): Promise<string> {
  const res = await b.client.transport.request({ method, path: path.replace('{ns}', b.namespace), query, body: JSON.stringify(body) });
  const parsed = JSON.parse(res.body) as { message?: string; details?: { causes?: { field?: string; message?: string; reason?: string }[] } };
  // the server walks a schema's properties in Go map order, so the order of several failed rules varies from one request to the next: compared as a set
  const causes = (parsed.details?.causes ?? []).map((c) => `${c.reason ?? ''} ${c.field ?? ''}: ${c.message ?? ''}`).sort();
  return JSON.stringify({ status: res.status, ...(res.status >= 400 ? { causes } : {}) });
}

describe('CRD validation rules (CEL) on the fake and kube-apiserver', () => {
  let fakeServer: FakeApiServer;
  let env: Environment;
  const backends: Backend[] = [];

  beforeAll(async () => {
    fakeServer = createFakeApiServer();
    env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    for (const [name, client] of [['fake', fakeServer.client({ fieldOwner: 'cel' })], ['envtest', createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'cel', transportOptions: { qps: 0 } })]] as const) {
      const namespace = uniqueName('cel');
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
      const created = await client.transport.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: JSON.stringify(CRD) });
      expect(created.status, created.body).toBe(201);
      const b = { name, client, namespace };
      // the base object every update starts from, once the kind is served
      await eventually(async () => expect((JSON.parse(await send(b, 'POST', `/apis/${GROUP}/v1/namespaces/{ns}/rules`, { apiVersion: `${GROUP}/v1`, kind: 'Rule', metadata: { name: 'base' }, spec: { replicas: 1, maxReplicas: 2, fixed: 'p', ports: [{ name: 'http', port: 1 }] } })) as { status: number }).status).toBe(201), { timeoutMs: 20_000 });
      backends.push(b);
    }
  });
  afterAll(async () => {
    for (const b of backends) await b.client.transport.request({ method: 'DELETE', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rules.${GROUP}` }).catch(() => undefined);
    await fakeServer?.close();
    await env?.stop();
  });

  it(`seed ${SEED}: ${RUNS} generated objects, created and as updates, are judged alike`, async () => {
    const objects = fc.sample(anySpec, { seed: SEED, numRuns: RUNS });
    const disagreements: string[] = [];
    let failed = 0;
    for (const [i, s] of objects.entries()) {
      const body = { apiVersion: `${GROUP}/v1`, kind: 'Rule', metadata: { name: `o${i}` }, spec: s };
      const answers: string[] = [];
      for (const b of backends) {
        const created = await send(b, 'POST', `/apis/${GROUP}/v1/namespaces/{ns}/rules`, body, { dryRun: 'All' });
        const base = JSON.parse((await b.client.transport.request({ method: 'GET', path: `/apis/${GROUP}/v1/namespaces/${b.namespace}/rules/base` })).body) as { metadata: { resourceVersion: string } };
        const updated = await send(b, 'PUT', `/apis/${GROUP}/v1/namespaces/{ns}/rules/base`, { ...body, metadata: { name: 'base', resourceVersion: base.metadata.resourceVersion } }, { dryRun: 'All' });
        answers.push(`create ${created} update ${updated}`);
      }
      if (answers[0]!.includes('"status":422')) failed++;
      if (answers[0] !== answers[1]) disagreements.push(`${JSON.stringify(s)}\n  fake:    ${answers[0]!}\n  envtest: ${answers[1]!}`);
    }
    console.log(`CEL differential: seed ${SEED}, ${objects.length} objects, ${failed} refused by some rule on the fake, ${disagreements.length} disagreements`);
    if (REPORT) writeFileSync(REPORT, disagreements.join('\n'));
    expect(disagreements.slice(0, 5).join('\n')).toBe('');
    // the generated objects reach both sides of the rules
    expect(failed).toBeGreaterThan(0);
    expect(failed).toBeLessThan(objects.length);
  }, 240_000);
});
