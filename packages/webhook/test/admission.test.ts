/**
 * Admission handlers on AdmissionReview bodies: paths, decoding, each
 * operation, verdicts, field errors in the Status, JSON patches from
 * defaulters, and refusals of reviews that are not for this kind.
 */
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { Admission, fieldError, isWebhookError, mutatePath, mutatingWebhook, silentLogger, validatePath, validatingWebhook } from '../src/index.js';
import type { AdmissionReview, Validator, Webhook } from '../src/index.js';
import { admissionReview } from './support.js';

interface HardDisk extends KubeObject {
  apiVersion?: 'crd-demo.io/v1';
  kind?: 'HardDisk';
  spec: { size: number; storageClass?: string; labels?: Record<string, string>; zones?: string[] };
}
const HardDisk = defineKind<HardDisk>({ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk', plural: 'harddisks', namespaced: true });

const context = { signal: new AbortController().signal, log: silentLogger };

function disk(name: string, spec: HardDisk['spec']): HardDisk {
  return { apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name, namespace: 'default' }, spec };
}

function request(operation: string, object: unknown, oldObject: unknown = null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return admissionReview({
    uid: 'uid-1',
    kind: { group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' },
    resource: { group: 'crd-demo.io', version: 'v1', resource: 'harddisks' },
    name: 'd1',
    namespace: 'default',
    operation,
    userInfo: { username: 'alice' },
    object,
    oldObject,
    ...extra,
  });
}

async function run(hook: Webhook, body: unknown): Promise<{ status: number; review: AdmissionReview }> {
  const answer = await hook.handle(body, context);
  return { status: answer.status, review: answer.body as AdmissionReview };
}

const validator: Validator<HardDisk> = {
  validateCreate: (d) => {
    const errors = [];
    if (!(d.spec.size > 0)) errors.push(fieldError.invalid('spec.size', d.spec.size, 'must be positive'));
    if (d.spec.storageClass !== undefined && !['ssd', 'hdd'].includes(d.spec.storageClass)) errors.push(fieldError.notSupported('spec.storageClass', d.spec.storageClass, ['ssd', 'hdd']));
    return errors;
  },
  validateUpdate: (d, old) => {
    if (d.spec.size < old.spec.size) return Admission.invalid([fieldError.forbidden('spec.size', 'a disk cannot shrink')]);
    return d.spec.size > 1000 ? Admission.allow('disks over 1000 GiB are slow to provision') : undefined;
  },
  validateDelete: (d) => (d.metadata?.labels?.['protected'] === 'true' ? Admission.deny(`disk ${d.metadata.name} is protected`) : undefined),
};

describe('paths', () => {
  it('are controller-runtime\'s', () => {
    expect(validatePath(HardDisk)).toBe('/validate-crd-demo-io-v1-harddisk');
    expect(mutatePath(HardDisk)).toBe('/mutate-crd-demo-io-v1-harddisk');
    expect(validatePath({ group: '', version: 'v1', kind: 'Pod' })).toBe('/validate--v1-pod');
    expect(validatingWebhook(HardDisk, {}).path).toBe('/validate-crd-demo-io-v1-harddisk');
    expect(mutatingWebhook(HardDisk, () => undefined, { path: '/custom' }).path).toBe('/custom');
  });

  it('refuse what cannot be a webhook', () => {
    expect(() => validatingWebhook({} as never, {})).toThrow(/kind descriptor/);
    expect(() => validatingWebhook(HardDisk, undefined as never)).toThrow(/validator object/);
    expect(() => mutatingWebhook(HardDisk, {} as never)).toThrow(/defaulter/);
    try {
      mutatingWebhook(HardDisk, 42 as never);
    } catch (err) {
      expect(isWebhookError(err) && err.reason).toBe('InvalidOptions');
    }
  });
});

describe('validating webhook', () => {
  const hook = validatingWebhook(HardDisk, validator);

  it('allows a valid create, echoing the uid', async () => {
    const { status, review } = await run(hook, request('CREATE', disk('d1', { size: 10, storageClass: 'ssd' })));
    expect(status).toBe(200);
    expect(review).toEqual({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'uid-1', allowed: true } });
  });

  it('denies an invalid create as Invalid with every field, as the API server writes them', async () => {
    const { review } = await run(hook, request('CREATE', disk('d1', { size: -1, storageClass: 'tape' })));
    expect(review.response).toEqual({
      uid: 'uid-1',
      allowed: false,
      status: {
        status: 'Failure',
        code: 422,
        reason: 'Invalid',
        message: 'HardDisk.crd-demo.io "d1" is invalid: [spec.size: Invalid value: -1: must be positive, spec.storageClass: Unsupported value: "tape": supported values: "ssd", "hdd"]',
        details: {
          name: 'd1',
          group: 'crd-demo.io',
          kind: 'HardDisk',
          causes: [
            { reason: 'FieldValueInvalid', message: 'Invalid value: -1: must be positive', field: 'spec.size' },
            { reason: 'FieldValueNotSupported', message: 'Unsupported value: "tape": supported values: "ssd", "hdd"', field: 'spec.storageClass' },
          ],
        },
      },
    });
  });

  it('names the object from metadata when the request has no name (generateName)', async () => {
    const { review } = await run(hook, request('CREATE', { ...disk('', { size: 0 }), metadata: { generateName: 'd-', namespace: 'default' } }, null, { name: '' }));
    expect(review.response?.status?.message).toBe('HardDisk.crd-demo.io "" is invalid: spec.size: Invalid value: 0: must be positive');
  });

  it('gives update the old object, and passes warnings on', async () => {
    const shrink = await run(hook, request('UPDATE', disk('d1', { size: 5 }), disk('d1', { size: 10 })));
    expect(shrink.review.response?.allowed).toBe(false);
    expect(shrink.review.response?.status?.message).toBe('HardDisk.crd-demo.io "d1" is invalid: spec.size: Forbidden: a disk cannot shrink');
    const grow = await run(hook, request('UPDATE', disk('d1', { size: 2000 }), disk('d1', { size: 10 })));
    expect(grow.review.response).toEqual({ uid: 'uid-1', allowed: true, warnings: ['disks over 1000 GiB are slow to provision'] });
  });

  it('gives delete the object being deleted (oldObject) and denies with 403 Forbidden', async () => {
    const protectedDisk = { ...disk('d1', { size: 1 }), metadata: { name: 'd1', namespace: 'default', labels: { protected: 'true' } } };
    const { review } = await run(hook, request('DELETE', null, protectedDisk));
    expect(review.response).toEqual({ uid: 'uid-1', allowed: false, status: { status: 'Failure', code: 403, reason: 'Forbidden', message: 'disk d1 is protected' } });
    expect((await run(hook, request('DELETE', null, disk('d1', { size: 1 })))).review.response?.allowed).toBe(true);
  });

  it('allows operations the validator has no method for', async () => {
    const createOnly = validatingWebhook(HardDisk, { validateCreate: () => [fieldError.required('spec.size')] });
    expect((await run(createOnly, request('UPDATE', disk('d1', { size: 1 }), disk('d1', { size: 1 })))).review.response?.allowed).toBe(true);
    expect((await run(createOnly, request('DELETE', null, disk('d1', { size: 1 })))).review.response?.allowed).toBe(true);
    expect((await run(createOnly, request('CONNECT', disk('d1', { size: 1 })))).review.response?.allowed).toBe(true);
  });

  it('accepts async validators and verdict constructors', async () => {
    const hook2 = validatingWebhook(HardDisk, {
      validateCreate: async (d) => {
        await new Promise((r) => setTimeout(r, 5));
        return d.spec.size > 100 ? Admission.deny('too big', { code: 400, warnings: ['think again'] }) : Admission.allow('ok, but deprecated');
      },
    });
    expect((await run(hook2, request('CREATE', disk('d1', { size: 1 })))).review.response).toEqual({ uid: 'uid-1', allowed: true, warnings: ['ok, but deprecated'] });
    expect((await run(hook2, request('CREATE', disk('d1', { size: 101 })))).review.response).toEqual({
      uid: 'uid-1',
      allowed: false,
      warnings: ['think again'],
      status: { status: 'Failure', code: 400, message: 'too big' },
    });
  });

  it('refuses reviews that are malformed or for another kind or version, with a reason', async () => {
    const cases: [unknown, RegExp][] = [
      ['a string', /expected an admission.k8s.io\/v1 AdmissionReview, got string/],
      [{ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', request: { uid: 'u' } }, /got admission.k8s.io\/v1beta1 AdmissionReview/],
      [admissionReview({ operation: 'CREATE' }), /no request with a uid/],
      [{ ...request('CREATE', disk('d1', { size: 1 })), request: { ...(request('CREATE', {}).request as object), kind: { group: '', version: 'v1', kind: 'Pod' } } }, /admits HardDisk.crd-demo.io, the request is for Pod.v1./],
      [{ ...request('CREATE', disk('d1', { size: 1 })), request: { ...(request('CREATE', {}).request as object), kind: { group: 'crd-demo.io', version: 'v2', kind: 'HardDisk' } } }, /holds version v2: register the webhook's rules for v1/],
      [request('CREATE', null), /CREATE request without an object/],
      [request('UPDATE', disk('d1', { size: 1 }), null), /UPDATE request needs both/],
    ];
    for (const [body, message] of cases) {
      const answer = await hook.handle(body, context);
      expect(answer.status).toBe(200);
      expect(answer.problem).toBe('MalformedRequest');
      const response = (answer.body as AdmissionReview).response!;
      expect(response.allowed).toBe(false);
      expect(response.status?.code).toBe(400);
      expect(response.status?.message).toMatch(message);
    }
  });

  it('lets a throwing validator reject, for the server to answer as a handler error', async () => {
    const throwing = validatingWebhook(HardDisk, { validateCreate: () => { throw new Error('boom'); } });
    await expect(throwing.handle(request('CREATE', disk('d1', { size: 1 })), context)).rejects.toThrow('boom');
    const answer = throwing.failure({ reason: 'HandlerError', code: 500, message: 'the webhook handler failed: boom', body: request('CREATE', {}) });
    expect(answer.body).toEqual({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'uid-1', allowed: false, status: { status: 'Failure', code: 500, message: 'the webhook handler failed: boom' } } });
  });

  it('refuses a validator result that is not a verdict', async () => {
    const odd = validatingWebhook(HardDisk, { validateCreate: () => ({ nonsense: true }) as never });
    await expect(odd.handle(request('CREATE', disk('d1', { size: 1 })), context)).rejects.toThrow(/must return undefined, an array of field errors, or an Admission verdict/);
  });
});

describe('mutating webhook', () => {
  function patchOf(review: AdmissionReview): fastJsonPatch.Operation[] {
    expect(review.response?.patchType).toBe('JSONPatch');
    return JSON.parse(Buffer.from(review.response!.patch!, 'base64').toString('utf8')) as fastJsonPatch.Operation[];
  }

  it('answers the JSON patch from the object to the defaulted one', async () => {
    const hook = mutatingWebhook(HardDisk, (d) => {
      d.spec.storageClass ??= 'standard';
      d.metadata!.labels = { ...d.metadata!.labels, 'app.kubernetes.io/managed-by': 'kubeloop' };
      d.spec.zones?.push('c');
    });
    const original = { ...disk('d1', { size: 10, zones: ['a', 'b'] }) };
    const { review } = await run(hook, request('CREATE', original));
    expect(review.response?.allowed).toBe(true);
    const ops = patchOf(review);
    expect(ops).toEqual(
      expect.arrayContaining([
        { op: 'add', path: '/spec/storageClass', value: 'standard' },
        { op: 'add', path: '/metadata/labels', value: { 'app.kubernetes.io/managed-by': 'kubeloop' } },
        { op: 'add', path: '/spec/zones/2', value: 'c' },
      ]),
    );
    const patched = fastJsonPatch.applyPatch(structuredClone(original), ops).newDocument;
    expect(patched.spec).toEqual({ size: 10, zones: ['a', 'b', 'c'], storageClass: 'standard' });
  });

  it('escapes keys holding / and ~, and removes fields the defaulter deleted', async () => {
    const hook = mutatingWebhook(HardDisk, {
      default(d) {
        d.spec.labels = { ...d.spec.labels, 'a/b~c': 'x' };
        delete d.spec.storageClass;
      },
    });
    const { review } = await run(hook, request('UPDATE', disk('d1', { size: 1, storageClass: 'old', labels: {} }), disk('d1', { size: 1 })));
    expect(patchOf(review)).toEqual(expect.arrayContaining([{ op: 'remove', path: '/spec/storageClass' }, { op: 'add', path: '/spec/labels/a~1b~0c', value: 'x' }]));
  });

  it('takes a returned replacement object', async () => {
    const hook = mutatingWebhook(HardDisk, (d) => ({ ...d, spec: { ...d.spec, size: d.spec.size * 2 } }));
    const { review } = await run(hook, request('CREATE', disk('d1', { size: 4 })));
    expect(patchOf(review)).toEqual([{ op: 'replace', path: '/spec/size', value: 8 }]);
  });

  it('answers no patch when nothing changed, and skips DELETE and CONNECT', async () => {
    let calls = 0;
    const hook = mutatingWebhook(HardDisk, () => {
      calls++;
    });
    expect((await run(hook, request('CREATE', disk('d1', { size: 1 })))).review.response).toEqual({ uid: 'uid-1', allowed: true });
    expect((await run(hook, request('DELETE', null, disk('d1', { size: 1 })))).review.response).toEqual({ uid: 'uid-1', allowed: true });
    expect((await run(hook, request('CONNECT', {}))).review.response).toEqual({ uid: 'uid-1', allowed: true });
    expect(calls).toBe(1);
  });

  it('gives the defaulter the request and a signal', async () => {
    let seen: { user?: string | undefined; dryRun?: boolean | undefined; aborted?: boolean } = {};
    const hook = mutatingWebhook(HardDisk, (_d, ctx) => {
      seen = { user: ctx.request.userInfo.username, dryRun: ctx.request.dryRun, aborted: ctx.signal.aborted };
    });
    await run(hook, request('CREATE', disk('d1', { size: 1 }), null, { dryRun: true }));
    expect(seen).toEqual({ user: 'alice', dryRun: true, aborted: false });
  });

  it('refuses a defaulter that returns a non-object', async () => {
    const hook = mutatingWebhook(HardDisk, () => 'nope' as never);
    await expect(hook.handle(request('CREATE', disk('d1', { size: 1 })), context)).rejects.toThrow(/not an object/);
  });
});
