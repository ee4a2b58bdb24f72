/**
 * Exact numbers and honest failures through the webhook server, over HTTPS
 * as the API server calls it: a ConversionReview holding 9007199254740993
 * (2^53 + 1) is answered with the same digits, a defaulter's JSON patch
 * carries int64 values exactly, and a conversion that cannot convert an
 * object (a refusal, a NaN, a number it rounded) answers Failure naming the
 * object and the field instead of Success with a made-up value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson, stringifyJson } from '@kubeloop/client';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { conversionWebhook, defineConversion, fieldError, mutatingWebhook, refuseConversion, spoke } from '../src/index.js';
import type { ConversionReview } from '../src/index.js';
import { admissionReview, call, runServer, testPki } from './support.js';
import type { RunningServer } from './support.js';

const BIG = 9007199254740993n; // 2^53 + 1

interface CounterV1 extends KubeObject {
  spec?: { bytes?: unknown; ratio?: unknown };
}
interface CounterV2 extends KubeObject {
  spec?: { size?: { bytes?: unknown; ratio?: unknown } };
}
const V1 = defineKind<CounterV1>({ group: 'int64.kubeloop.dev', version: 'v1', kind: 'Counter' });
const V2 = defineKind<CounterV2>({ group: 'int64.kubeloop.dev', version: 'v2', kind: 'Counter' });

// v1 is the hub; v2 nests the same fields. The mode label picks a faulty conversion.
const conversion = defineConversion(V1, [
  spoke<CounterV2, CounterV1>(V2, {
    toHub: (d) => ({ spec: { bytes: d.spec?.size?.bytes, ratio: d.spec?.size?.ratio } }),
    fromHub: (d) => {
      const bytes = d.spec?.bytes;
      switch (d.metadata?.labels?.['mode']) {
        case 'refuse':
          throw refuseConversion(fieldError.invalid('spec.bytes', bytes, 'v2 cannot hold it'));
        case 'nan':
          return { spec: { size: { bytes: Number('x') } } };
        case 'rounded':
          return { spec: { size: { bytes: Number(bytes) } } }; // the bug this guards against: 2^53 + 1 becomes ...992
        default:
          return { spec: { size: { bytes, ratio: d.spec?.ratio } } };
      }
    },
  }),
]);

interface Disk extends KubeObject {
  spec?: { bytes?: number | bigint; limits?: { max?: number | bigint; list?: (number | bigint)[] } };
}
const Disk = defineKind<Disk>({ group: 'int64.kubeloop.dev', version: 'v1', kind: 'Disk' });
const defaulter = mutatingWebhook(Disk, (d) => {
  d.spec = { ...d.spec, limits: { max: (typeof d.spec?.bytes === 'bigint' ? d.spec.bytes : 0n) * 2n, list: [BIG, 1] } };
});

const pki = testPki();
let s: RunningServer;
beforeAll(async () => {
  s = await runServer({ pki });
  s.server.register(conversionWebhook([conversion]));
  s.server.register(defaulter);
});
afterAll(async () => {
  await s.stop();
});

function reviewText(desired: string, objects: string[]): string {
  return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u-1","desiredAPIVersion":"${desired}","objects":[${objects.join(',')}]}}`;
}
const v1Text = (name: string, spec: string, mode = ''): string =>
  `{"apiVersion":"int64.kubeloop.dev/v1","kind":"Counter","metadata":{"name":"${name}","namespace":"ns"${mode ? `,"labels":{"mode":"${mode}"}` : ''}},"spec":${spec}}`;

async function convert(body: string): Promise<{ text: string; review: ConversionReview }> {
  const res = await call(s.url, '/convert', body, { ca: pki.ca.certPem });
  expect(res.status).toBe(200);
  return { text: res.text, review: parseJson(res.text) as ConversionReview };
}

describe('conversion over HTTPS', () => {
  it('answers 2^53 + 1 and the int64 bounds with the digits it was sent, both ways', async () => {
    const there = await convert(reviewText('int64.kubeloop.dev/v2', [v1Text('a', `{"bytes":${BIG}}`), v1Text('b', '{"bytes":9223372036854775807,"ratio":1e+20}')]));
    expect(there.review.response?.result).toEqual({ status: 'Success' });
    expect(there.text).toContain(`"size":{"bytes":${BIG}}`);
    expect(there.text).toContain('"size":{"bytes":9223372036854775807,"ratio":100000000000000000000}'); // a float passes through as a float
    const back = await convert(reviewText('int64.kubeloop.dev/v1', (there.review.response?.convertedObjects ?? []).map((o) => stringifyJson(o))));
    expect(back.text).toContain(`"spec":{"bytes":${BIG}}`);
    expect(back.text).toContain('"spec":{"bytes":9223372036854775807,"ratio":100000000000000000000}');
  });

  it('answers Failure naming the object and the field for an object the conversion refuses', async () => {
    const { review } = await convert(reviewText('int64.kubeloop.dev/v2', [v1Text('ok', '{"bytes":1}'), v1Text('bad', '{"bytes":-1}', 'refuse')]));
    expect(review.response).toEqual({
      uid: 'u-1',
      convertedObjects: [],
      result: { status: 'Failure', message: 'converting object 2 of 2 (Counter ns/bad) from int64.kubeloop.dev/v1 to int64.kubeloop.dev/v2 failed: spec.bytes: Invalid value: -1: v2 cannot hold it' },
    });
  });

  it('answers Failure, never Success, when the conversion made a value JSON cannot carry or rounded an int64', async () => {
    const nan = await convert(reviewText('int64.kubeloop.dev/v2', [v1Text('n', '{"bytes":1}', 'nan')]));
    expect(nan.review.response?.result.status).toBe('Failure');
    expect(nan.review.response?.result.message).toMatch(/^converting object 1 of 1 \(Counter ns\/n\) .* failed: spec\.size\.bytes: Invalid value: NaN: JSON has no such number/);
    const rounded = await convert(reviewText('int64.kubeloop.dev/v2', [v1Text('r', `{"bytes":${BIG}}`, 'rounded')]));
    expect(rounded.review.response?.result.status).toBe('Failure');
    expect(rounded.review.response?.result.message).toMatch(/failed: spec\.size\.bytes: Invalid value: 9007199254740992: an integer beyond 2\^53 held as a JavaScript number is rounded/);
    expect(rounded.review.response?.convertedObjects).toEqual([]);
  });
});

describe('a defaulter over HTTPS', () => {
  it('patches with int64 values exactly, in new subtrees and lists', async () => {
    const object = `{"apiVersion":"int64.kubeloop.dev/v1","kind":"Disk","metadata":{"name":"d","namespace":"ns"},"spec":{"bytes":${BIG}}}`;
    const review = JSON.stringify(admissionReview({ uid: 'm-1', kind: { group: 'int64.kubeloop.dev', version: 'v1', kind: 'Disk' }, resource: { group: 'int64.kubeloop.dev', version: 'v1', resource: 'disks' }, name: 'd', namespace: 'ns', operation: 'CREATE', userInfo: { username: 'u' }, object: 'OBJECT' })).replace('"OBJECT"', object);
    const res = await call(s.url, '/mutate-int64-kubeloop-dev-v1-disk', review, { ca: pki.ca.certPem });
    expect(res.status).toBe(200);
    const answer = parseJson(res.text) as { response: { allowed: boolean; patch: string } };
    expect(answer.response.allowed).toBe(true);
    const patch = Buffer.from(answer.response.patch, 'base64').toString('utf8');
    expect(patch).toBe(`[{"op":"add","path":"/spec/limits","value":{"max":${BIG * 2n},"list":[${BIG},1]}}]`);
  });
});
