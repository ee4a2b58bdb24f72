/**
 * Structural-schema validation of custom resources, on both backends: a
 * value of the wrong type, a missing required field, an enum, a pattern and
 * a bound refused with 422 Invalid and the same causes; unknown fields
 * pruned and defaults applied on the way to storage; an update or a status
 * write that breaks the schema refused with the stored object unchanged.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CustomResourceDefinition, defineKind } from '@kubeloop/scheme';
import type { ClientError } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import { eventually } from '../../src/index.js';
import { BACKENDS, useBackend } from './backends.js';
import { expectStatus } from './support.js';

interface Volume extends KubeObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

function crd(group: string): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `volumes.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'volumes', singular: 'volume', kind: 'Volume', listKind: 'VolumeList' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  required: ['sizeGiB'],
                  properties: {
                    sizeGiB: { type: 'integer', minimum: 1, maximum: 1024 },
                    media: { type: 'string', enum: ['ssd', 'hdd'], default: 'ssd' },
                    label: { type: 'string', pattern: '^[a-z]+$' },
                  },
                },
                status: { type: 'object', properties: { phase: { type: 'string', enum: ['Pending', 'Bound'] } } },
              },
            },
          },
        },
      ],
    },
  };
}

/** `reason field` of each cause, sorted. */
function causes(err: ClientError): string[] {
  return (err.status?.details?.causes ?? []).map((c) => `${c.reason} ${c.field}`).sort();
}

describe.each(BACKENDS)('schema validation of custom resources ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  let group: string;
  let Volume: ReturnType<typeof defineKind<Volume>>;
  const volume = (name: string, spec: Record<string, unknown>): Volume & { apiVersion: string; kind: string } => ({ apiVersion: `${group}/v1`, kind: 'Volume', metadata: { name, namespace: h().namespace }, spec });

  beforeAll(async () => {
    group = `${h().name('sv')}.conformance.kubeloop.dev`;
    Volume = defineKind<Volume>({ group, version: 'v1', kind: 'Volume', plural: 'volumes', namespaced: true });
    const client = h().client();
    await client.create(crd(group) as never);
    await eventually(async () => {
      const got = await client.get(CustomResourceDefinition, { name: `volumes.${group}` });
      expect(got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')).toBe(true);
    });
    // the kind is served once a create goes through
    await eventually(() => client.create(volume('warmup', { sizeGiB: 1 })), { timeoutMs: 15_000 });
  }, 60_000);

  it('a value of the wrong type is refused: 422 Invalid naming the field and the type', async () => {
    const err = await expectStatus(h().client().create(volume('wrong-type', { sizeGiB: 'ten' })), 422, 'Invalid');
    expect(causes(err)).toEqual(['FieldValueTypeInvalid spec.sizeGiB']);
    expect(err.message).toContain('spec.sizeGiB: Invalid value: "string": spec.sizeGiB in body must be of type integer: "string"');
  });

  it('a missing required field, a value outside the enum, a pattern mismatch and a bound are all reported at once', async () => {
    const err = await expectStatus(h().client().create(volume('many', { media: 'tape', label: 'Not Lower' })), 422, 'Invalid');
    expect(causes(err)).toEqual(['FieldValueInvalid spec.label', 'FieldValueNotSupported spec.media', 'FieldValueRequired spec.sizeGiB']);
    const big = await expectStatus(h().client().create(volume('big', { sizeGiB: 4096 })), 422, 'Invalid');
    expect(causes(big)).toEqual(['FieldValueInvalid spec.sizeGiB']);
    expect(big.message).toContain('should be less than or equal to 1024');
    // nothing was stored
    await expectStatus(h().client().get(Volume, { namespace: h().namespace, name: 'many' }), 404, 'NotFound');
  });

  it('unknown fields are pruned and defaults applied before the object is stored', async () => {
    const created = await h().client().create(volume('pruned', { sizeGiB: 10, colour: 'blue' }));
    expect(created.spec).toEqual({ sizeGiB: 10, media: 'ssd' });
    const stored = await h().client().get(Volume, { namespace: h().namespace, name: 'pruned' });
    expect(stored.spec).toEqual({ sizeGiB: 10, media: 'ssd' });
    expect(stored.metadata?.uid).toBeTruthy();
    expect(stored.metadata?.generation).toBe(1);
  });

  it('an update or a status write that breaks the schema is refused and the stored object stays as it was', async () => {
    const client = h().client();
    const created = await client.create(volume('kept', { sizeGiB: 5 }));
    await expectStatus(client.update({ ...created, apiVersion: `${group}/v1`, kind: 'Volume', spec: { sizeGiB: 0 } }), 422, 'Invalid');
    const status = await expectStatus(client.status().update({ ...created, apiVersion: `${group}/v1`, kind: 'Volume', status: { phase: 'Lost' } }), 422, 'Invalid');
    expect(causes(status)).toEqual(['FieldValueNotSupported status.phase']);
    const after = await client.get(Volume, { namespace: h().namespace, name: 'kept' });
    expect(after.spec).toEqual({ sizeGiB: 5, media: 'ssd' });
    expect(after.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });
});
