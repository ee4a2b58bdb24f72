/**
 * Conversion on ConversionReview bodies: hub and spokes, order kept, objects
 * already in the desired version copied, failures naming the object and the
 * versions, refusals of malformed reviews.
 */
import { describe, expect, it } from 'vitest';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { conversionWebhook, defineConversion, isWebhookError, silentLogger, spoke } from '../src/index.js';
import type { ConversionReview, WebhookErrorReason } from '../src/index.js';

// v1: size in GiB; v2 (hub): size as value + unit; v3: size in MiB.
interface DiskV1 extends KubeObject {
  apiVersion?: 'crd-demo.io/v1';
  kind?: 'HardDisk';
  spec: { sizeGiB: number };
}
interface DiskV2 extends KubeObject {
  apiVersion?: 'crd-demo.io/v2';
  kind?: 'HardDisk';
  spec: { size: { value: number; unit: 'Gi' | 'Mi' } };
}
interface DiskV3 extends KubeObject {
  apiVersion?: 'crd-demo.io/v3';
  kind?: 'HardDisk';
  spec: { sizeMiB: number };
}
const V1 = defineKind<DiskV1>({ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' });
const V2 = defineKind<DiskV2>({ group: 'crd-demo.io', version: 'v2', kind: 'HardDisk' });
const V3 = defineKind<DiskV3>({ group: 'crd-demo.io', version: 'v3', kind: 'HardDisk' });

const toGiB = (s: DiskV2['spec']['size']): number => (s.unit === 'Gi' ? s.value : s.value / 1024);

const conversion = defineConversion(V2, [
  spoke<DiskV1, DiskV2>(V1, {
    toHub: (d) => ({ spec: { size: { value: d.spec.sizeGiB, unit: 'Gi' } } }),
    fromHub: (d) => {
      if (d.spec.size.value < 0) throw new Error('a negative size cannot be written in v1');
      return { spec: { sizeGiB: toGiB(d.spec.size) } }; // no metadata: the webhook copies it
    },
  }),
  spoke<DiskV3, DiskV2>(V3, {
    toHub: async (d) => ({ spec: { size: { value: d.spec.sizeMiB, unit: 'Mi' } } }),
    fromHub: (d) => ({ spec: { sizeMiB: toGiB(d.spec.size) * 1024 } }),
  }),
]);
const hook = conversionWebhook([conversion]);
const context = { signal: new AbortController().signal, log: silentLogger };

function reviewOf(desiredAPIVersion: string, objects: unknown[], uid = 'c-1'): unknown {
  return { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid, desiredAPIVersion, objects } };
}
const v1 = (name: string, sizeGiB: number): DiskV1 => ({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name, namespace: 'ns', uid: `uid-${name}`, labels: { a: name } }, spec: { sizeGiB } });
const v2 = (name: string, value: number, unit: 'Gi' | 'Mi'): DiskV2 => ({ apiVersion: 'crd-demo.io/v2', kind: 'HardDisk', metadata: { name, namespace: 'ns', uid: `uid-${name}` }, spec: { size: { value, unit } } });

async function convert(body: unknown): Promise<{ status: number; review: ConversionReview; problem: string | undefined }> {
  const answer = await hook.handle(body, context);
  return { status: answer.status, review: answer.body as ConversionReview, problem: answer.problem };
}

function reasonOf(fn: () => unknown): WebhookErrorReason | undefined {
  try {
    fn();
  } catch (err) {
    if (isWebhookError(err)) return err.reason;
    throw err;
  }
  return undefined;
}

describe('conversion webhook', () => {
  it('serves /convert', () => {
    expect(hook.path).toBe('/convert');
    expect(conversionWebhook([conversion], { path: '/convert-disks' }).path).toBe('/convert-disks');
  });

  it('converts spoke to hub, hub to spoke and spoke to spoke, keeping order and metadata', async () => {
    const objects = [v1('a', 10), v2('b', 2048, 'Mi'), { apiVersion: 'crd-demo.io/v3', kind: 'HardDisk', metadata: { name: 'c' }, spec: { sizeMiB: 512 } }];
    const toV1 = await convert(reviewOf('crd-demo.io/v1', objects));
    expect(toV1.status).toBe(200);
    expect(toV1.review).toEqual({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      response: {
        uid: 'c-1',
        result: { status: 'Success' },
        convertedObjects: [
          v1('a', 10),
          { apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'b', namespace: 'ns', uid: 'uid-b' }, spec: { sizeGiB: 2 } },
          { apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'c' }, spec: { sizeGiB: 0.5 } },
        ],
      },
    });
    const toV2 = await convert(reviewOf('crd-demo.io/v2', [v1('a', 10)]));
    expect(toV2.review.response?.convertedObjects).toEqual([{ apiVersion: 'crd-demo.io/v2', kind: 'HardDisk', metadata: v1('a', 10).metadata, spec: { size: { value: 10, unit: 'Gi' } } }]);
    const toV3 = await convert(reviewOf('crd-demo.io/v3', [v1('a', 1)]));
    expect(toV3.review.response?.convertedObjects).toEqual([{ apiVersion: 'crd-demo.io/v3', kind: 'HardDisk', metadata: v1('a', 1).metadata, spec: { sizeMiB: 1024 } }]);
  });

  it('answers an empty list for an empty request', async () => {
    expect((await convert(reviewOf('crd-demo.io/v1', []))).review.response).toEqual({ uid: 'c-1', result: { status: 'Success' }, convertedObjects: [] });
  });

  it('fails the whole review when one object fails, naming it, its position and the versions', async () => {
    const { status, review, problem } = await convert(reviewOf('crd-demo.io/v1', [v2('ok', 1, 'Gi'), v2('bad', -1, 'Gi')]));
    expect(status).toBe(200);
    expect(problem).toBe('ConversionFailed');
    expect(review.response).toEqual({
      uid: 'c-1',
      convertedObjects: [],
      result: { status: 'Failure', message: 'converting object 2 of 2 (HardDisk ns/bad) from crd-demo.io/v2 to crd-demo.io/v1 failed: a negative size cannot be written in v1' },
    });
  });

  it('fails clearly on unknown kinds, versions and groups', async () => {
    const cases: [unknown, RegExp][] = [
      [reviewOf('crd-demo.io/v9', [v1('a', 1)]), /object 1 of 1 \(HardDisk ns\/a\): version v9 of HardDisk.crd-demo.io has no conversion \(known: v2 \(hub\), v1, v3\)/],
      [reviewOf('crd-demo.io/v1', [{ ...v1('a', 1), apiVersion: 'crd-demo.io/v0' }]), /version v0 of HardDisk.crd-demo.io has no conversion/],
      [reviewOf('crd-demo.io/v1', [{ apiVersion: 'other.io/v1', kind: 'Thing', metadata: { name: 't' } }]), /object 1 of 1 \(Thing t, other.io\/v1\): no conversion is registered for this kind/],
      [reviewOf('other.io/v1', [v1('a', 1)]), /cannot convert from group crd-demo.io to other.io\/v1/],
      [reviewOf('crd-demo.io/v1', [42]), /object 1 of 1 has no apiVersion and kind/],
      [reviewOf('/', [v1('a', 1)]), /desiredAPIVersion "\/" is not a group\/version/],
      [{ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'c-1', desiredAPIVersion: 'crd-demo.io/v1' } }, /no objects list/],
    ];
    for (const [body, message] of cases) {
      const { status, review } = await convert(body);
      expect(status).toBe(200);
      expect(review.response?.uid).toBe('c-1');
      expect(review.response?.result.status).toBe('Failure');
      expect(review.response?.result.message).toMatch(message);
    }
  });

  it('answers 400 to a review it cannot read', async () => {
    for (const body of [null, 'x', { apiVersion: 'apiextensions.k8s.io/v1beta1', kind: 'ConversionReview' }, { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: {} }]) {
      const { status, review, problem } = await convert(body);
      expect(status).toBe(400);
      expect(problem).toBe('MalformedRequest');
      expect(review.response?.result.status).toBe('Failure');
    }
    const failure = hook.failure({ reason: 'TooLarge', code: 413, message: 'too large' });
    expect(failure.status).toBe(413);
    const withUid = hook.failure({ reason: 'Timeout', code: 500, message: 'slow', body: reviewOf('crd-demo.io/v1', []) });
    expect(withUid).toEqual({ status: 200, body: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', response: { uid: 'c-1', convertedObjects: [], result: { status: 'Failure', message: 'slow' } } } });
  });

  it('rejects conversion tables that cannot work', () => {
    const Other = defineKind({ group: 'other.io', version: 'v1', kind: 'HardDisk' });
    expect(reasonOf(() => defineConversion(V2, [spoke(Other as never, { toHub: (x) => x, fromHub: (x) => x })]))).toBe('InvalidOptions');
    expect(reasonOf(() => defineConversion(V2, [spoke(V2 as never, { toHub: (x) => x, fromHub: (x) => x })]))).toBe('InvalidOptions');
    const v1Spoke = spoke<DiskV1, DiskV2>(V1, { toHub: (x) => x as never, fromHub: (x) => x as never });
    expect(reasonOf(() => defineConversion(V2, [v1Spoke, v1Spoke]))).toBe('InvalidOptions');
    expect(reasonOf(() => spoke(V1, {} as never))).toBe('InvalidOptions');
    expect(reasonOf(() => conversionWebhook([conversion, conversion]))).toBe('InvalidOptions');
  });

  it('converts 10,000 objects in one review', async () => {
    const objects = Array.from({ length: 10_000 }, (_, i) => v1(`d${i}`, i));
    const { review } = await convert(reviewOf('crd-demo.io/v3', objects));
    const out = review.response!.convertedObjects as DiskV3[];
    expect(out).toHaveLength(10_000);
    expect(out[9_999]).toEqual({ apiVersion: 'crd-demo.io/v3', kind: 'HardDisk', metadata: v1('d9999', 0).metadata, spec: { sizeMiB: 9_999 * 1024 } });
  });
});
