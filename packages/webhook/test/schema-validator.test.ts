/**
 * schemaValidator: a schema-first kind's own schema as an admission
 * validator. What it finds is what the API server finds for the same object
 * (the kind's generated CRD installed on envtest, the same invalid objects
 * created there): the same field paths and error types; the kind's own
 * checks are answered beside them; deletes go to them alone.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient, isInvalid } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs } from '@kubeloop/envtest';
import { builtinScheme, defineKind } from '@kubeloop/scheme';
import type { ObjectOf } from '@kubeloop/scheme';
import { Type, generateCRDs, k8s } from '@kubeloop/scheme/schema';
import { fieldError, isWebhookError, schemaValidator } from '../src/index.js';
import type { AdmissionContext, FieldError } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const group = `${uniqueName('schemaval')}.webhook.kubeloop.dev`;
const Tank = defineKind({
  group,
  version: 'v1',
  kind: 'Tank',
  plural: 'tanks',
  namespaced: true,
  schema: {
    spec: Type.Object({
      litres: Type.Integer({ minimum: 1, maximum: 1000 }),
      fluid: k8s.Enum(['water', 'oil']),
      label: Type.Optional(Type.String({ pattern: '^[a-z]+$', maxLength: 8 })),
    }),
  },
});
type Tank = ObjectOf<typeof Tank>;
/** A Tank with any spec, valid or not (the point is to send invalid ones). */
function tankOf(name: string, spec: Record<string, unknown>): Tank {
  return { apiVersion: `${group}/v1`, kind: 'Tank', metadata: { name, namespace: 'default' }, spec } as unknown as Tank;
}

let client: Client;
const context = {} as AdmissionContext<Tank>;
const invalid = [
  { litres: 0, fluid: 'water' },
  { litres: 2000, fluid: 'mercury' },
  { fluid: 'oil' },
  { litres: 'ten', fluid: 'oil' },
  { litres: 5, fluid: 'oil', label: 'Way Too Long' },
];

beforeAll(async () => {
  const kc = testKubeConfig();
  await installCRDs(kc, generateCRDs([Tank]));
  client = createClient({ kubeConfig: kc, scheme: builtinScheme.extend(Tank), fieldOwner: 'schema-validator-test' });
});

/** The API server's causes for creating the object: `type field`, sorted. */
async function serverCauses(spec: Record<string, unknown>): Promise<string[]> {
  const err = await client.create(tankOf(uniqueName('t'), spec) as Tank & { apiVersion: string; kind: 'Tank' }, { dryRun: true }).then(() => undefined, (e: unknown) => e);
  expect(isInvalid(err)).toBe(true);
  const causes = (err as { status?: { details?: { causes?: { reason: string; field: string }[] } } }).status?.details?.causes ?? [];
  return causes.map((c) => `${c.reason} ${c.field}`).sort();
}

describe('schemaValidator', () => {
  it.each(invalid)('finds what the API server finds: %j', async (spec) => {
    const found = (await schemaValidator(Tank).validateCreate!(tankOf('t', spec), context)) as FieldError[];
    const ours = found.map((e) => `${e.type} ${e.field}`).sort();
    // Type errors are FieldValueTypeInvalid on the server; admission has no such type and answers Invalid.
    expect(ours).toEqual((await serverCauses(spec)).map((c) => c.replace('FieldValueTypeInvalid', 'FieldValueInvalid')));
  });

  it('passes a valid object, adds the kind’s own checks, leaves deletes to them', async () => {
    const own = {
      validateCreate: (t: Tank) => (t.spec.fluid === 'oil' && t.spec.litres > 100 ? [fieldError.forbidden('spec.litres', 'oil tanks hold at most 100 litres')] : undefined),
      validateDelete: () => [fieldError.forbidden('metadata.name', 'tanks are never deleted')],
    };
    const v = schemaValidator(Tank, own);
    expect(await v.validateCreate!(tankOf('ok', { litres: 5, fluid: 'water' }), context)).toBeUndefined();
    const both = (await v.validateCreate!(tankOf('b', { litres: 500, fluid: 'oil', label: 'UPPER' }), context)) as FieldError[];
    expect(both.map((e) => `${e.type} ${e.field}`)).toEqual(['FieldValueInvalid spec.label', 'FieldValueForbidden spec.litres']);
    expect(await v.validateDelete!(tankOf('d', { litres: 5, fluid: 'water' }), context)).toEqual([fieldError.forbidden('metadata.name', 'tanks are never deleted')]);
    expect(schemaValidator(Tank).validateDelete).toBeUndefined();
  });

  it('a kind without a schema is a typed error', () => {
    const Plain = defineKind<{ apiVersion?: string; kind?: 'Plain' }>({ group, version: 'v1', kind: 'Plain', plural: 'plains', namespaced: true });
    let err: unknown;
    try {
      schemaValidator(Plain);
    } catch (e) {
      err = e;
    }
    expect(isWebhookError(err) && err.reason).toBe('InvalidOptions');
  });
});
