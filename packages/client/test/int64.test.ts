/**
 * int64 values past 2^53 through the client against the real API server: a
 * CRD field `type: integer, format: int64` holding 9007199254740993 (2^53 + 1,
 * which a JavaScript number reads as ...992) comes back exact from get, list
 * and watch, and goes back exact through update, merge patch and apply, as
 * kubectl (Go, int64) shows it. parseJson / stringifyJson themselves are
 * checked on every int64 (fast-check) and on the texts that must stay on the
 * fast path.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { createClient, isTooManyRequests, loadKubeConfig, matchesFields, mergeFrom, mergePatch, parseFieldSelector, parseJson, retryOn, stringifyJson } from '../src/index.js';
import type { Client } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';
import { kubectlOk } from '../../../test/support/kubectl.js';

const BIG = 9007199254740993n; // 2^53 + 1
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

interface Counter extends KubeObject {
  spec?: { bytes?: number | bigint; history?: (number | bigint)[]; note?: string };
}

describe('parseJson and stringifyJson', () => {
  it('read every int64 exactly: a number while safe, a bigint beyond; and write it back as written', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), (n) => {
        const text = `{"a":[${n}],"b":{"c":${n}}}`;
        const parsed = parseJson(text) as { a: unknown[]; b: { c: unknown } };
        const safe = n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER);
        expect(parsed.b.c).toBe(safe ? Number(n) : n);
        expect(parsed.a[0]).toBe(safe ? Number(n) : n);
        expect(stringifyJson(parsed)).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it('leave floats, strings of digits and other values as JSON.parse has them', () => {
    const text = '{"f":12345678901234567.5,"e":1e+20,"s":"90071992547409930000","uid":"1234567890123456789","n":-12,"t":true,"z":null}';
    expect(parseJson(text)).toEqual(JSON.parse(text));
    expect(parseJson('{"x":-9007199254740993}')).toEqual({ x: -9007199254740993n });
    expect(parseJson('9007199254740992')).toBe(9007199254740992n); // 2^53 is not safe: it could stand for 2^53 + 1
    // pretty-printed (kubectl -o json), and a bare number
    expect(parseJson('{\n  "x": 9007199254740993,\n  "y": [\n    -9007199254740993\n  ]\n}')).toEqual({ x: BIG, y: [-BIG] });
    expect(parseJson('-9007199254740993')).toBe(-BIG);
    expect(() => parseJson('{"x":900719925474099300')).toThrow(SyntaxError);
  });

  it('a field selector compares an int64 past 2^53 by its digits, as the server does', () => {
    expect(matchesFields(parseFieldSelector(`spec.bytes=${BIG}`), { spec: { bytes: BIG } })).toBe(true);
    expect(matchesFields(parseFieldSelector('spec.bytes=9007199254740992'), { spec: { bytes: BIG } })).toBe(false);
  });

  it('write bigints anywhere, and fail as JSON.stringify does on what is not JSON', () => {
    expect(stringifyJson({ a: 5n, b: [BIG, { c: -BIG }] })).toBe('{"a":5,"b":[9007199254740993,{"c":-9007199254740993}]}');
    const cycle: Record<string, unknown> = { n: 1n };
    cycle['self'] = cycle;
    expect(() => stringifyJson(cycle)).toThrow(TypeError);
  });
});

describe('int64 past 2^53 through the API server', () => {
  let env: Environment;
  let client: Client;
  let Counter: ReturnType<typeof defineKind<Counter>>;
  let ns: string;
  let resource: string;

  beforeAll(async () => {
    env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    const group = `${uniqueName('i64')}.kubeloop.dev`;
    const int64 = { type: 'integer', format: 'int64' };
    await env.installCRDs([
      testCRD(group, 'Counter', {
        schema: {
          type: 'object',
          properties: { spec: { type: 'object', properties: { bytes: int64, history: { type: 'array', items: int64 }, note: { type: 'string' } } } },
        },
      }),
    ]);
    Counter = defineKind<Counter>({ group, version: 'v1', kind: 'Counter', plural: 'counters', namespaced: true, listKind: 'CounterList' });
    resource = `counters.v1.${group}`;
    client = createClient({ kubeConfig: loadKubeConfig({ path: testKubeconfigPath() }), fieldOwner: 'int64-test' });
    ns = uniqueName('int64');
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });

  afterAll(async () => {
    await client?.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
    client?.transport.close();
    await env?.stop();
  });

  /** What kubectl (Go, int64) reads from the server: the stored digits, with no JavaScript in between. */
  async function stored(name: string): Promise<string> {
    return kubectlOk(['get', resource, name, '-n', ns, '-o', 'jsonpath={.spec.bytes} {.spec.history}']);
  }

  it('create, get, list and watch give 2^53 + 1 back exact, as a bigint', async () => {
    // A CRD just installed answers a watch 429 "storage is (re)initializing" for a moment.
    const watch = await retryOn(isTooManyRequests, () => client.watch(Counter, { namespace: ns }), { steps: 50, durationMs: 200, factor: 1 });
    try {
      const created = await client.create({ apiVersion: Counter.apiVersion, kind: 'Counter', metadata: { name: 'big', namespace: ns }, spec: { bytes: BIG, history: [1, BIG, INT64_MAX, INT64_MIN] } });
      expect(created.spec?.bytes).toBe(BIG);
      expect(await stored('big')).toBe(`${BIG} [1,${BIG},${INT64_MAX},${INT64_MIN}]`);
      const got = await client.get(Counter, { namespace: ns, name: 'big' });
      expect(got.spec).toEqual({ bytes: BIG, history: [1, BIG, INT64_MAX, INT64_MIN] });
      const listed = await client.list(Counter, { namespace: ns });
      expect(listed.items.find((i) => i.metadata?.name === 'big')?.spec?.bytes).toBe(BIG);
      for await (const event of watch) {
        if (event.type === 'ADDED' && event.object.metadata?.name === 'big') {
          expect(event.object.spec?.history).toEqual([1, BIG, INT64_MAX, INT64_MIN]);
          break;
        }
      }
    } finally {
      await watch.return?.();
    }
  });

  it('an update of another field writes the int64 back unchanged (a number in between would store ...992)', async () => {
    await kubectlOk(['apply', '-f', '-'], { stdin: `{"apiVersion":"${Counter.apiVersion}","kind":"Counter","metadata":{"name":"kept","namespace":"${ns}"},"spec":{"bytes":${BIG},"history":[${INT64_MAX}]}}` });
    const read = await client.get(Counter, { namespace: ns, name: 'kept' });
    const updated = await client.update({ ...read, spec: { ...read.spec, note: 'touched' } });
    expect(updated.spec?.bytes).toBe(BIG);
    expect(await stored('kept')).toBe(`${BIG} [${INT64_MAX}]`);

    const before = await client.get(Counter, { namespace: ns, name: 'kept' });
    const after = { ...before, spec: { ...before.spec, bytes: BIG + 2n } };
    await client.patch(before, mergeFrom(before, after));
    expect(await stored('kept')).toBe(`${BIG + 2n} [${INT64_MAX}]`);

    await client.patch(Counter, { namespace: ns, name: 'kept' }, mergePatch({ spec: { history: [INT64_MIN, BIG] } }));
    expect(await stored('kept')).toBe(`${BIG + 2n} [${INT64_MIN},${BIG}]`);

    const applied = await client.apply({ apiVersion: Counter.apiVersion, kind: 'Counter', metadata: { name: 'kept', namespace: ns }, spec: { bytes: INT64_MAX } }, { force: true });
    expect(applied.spec?.bytes).toBe(INT64_MAX);
    expect(await stored('kept')).toMatch(new RegExp(`^${INT64_MAX} `));
  });
});
