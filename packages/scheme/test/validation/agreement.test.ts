/**
 * Local validation agrees with kube-apiserver: objects generated from each
 * kind's schema (fixed seed) are validated by createValidator and by a
 * server-side dry-run create with strict field validation. On kinds whose
 * every check is local the verdicts must agree on every object, and each
 * refusal must name the fields the server names; on the kind with CEL rules
 * the only disagreements allowed are refusals by a CEL rule.
 * The benchmark (pnpm bench:schema) runs the same with thousands of objects.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { installCRDs } from '@kubeloop/envtest';
import type { ResourceDescriptor } from '../../src/index.js';
import { generateCRDs } from '../../src/schema/index.js';
import { createValidator } from '../../src/validation/index.js';
import { ALL_KINDS, LOCAL_KINDS, Rules, measureAgreement, objectsOf } from '../../../../bench/support/schema-agreement.ts';
import type { DryRunCreate } from '../../../../bench/support/schema-agreement.ts';
import { testKubeConfig } from '../../../../test/support/env.js';
import { kubeRequest } from '../../../../test/support/kube-request.js';

const SEED = 1207;
const PER_KIND = 150;

const dryRun: DryRunCreate = (kind, object) =>
  kubeRequest('POST', `/apis/${kind.group}/${kind.version}/namespaces/default/${String(kind.plural)}?dryRun=All&fieldValidation=Strict`, object);

function sample(kind: ResourceDescriptor, n: number, seed: number): Record<string, unknown>[] {
  return fc.sample(objectsOf(kind), { numRuns: n, seed });
}

describe('local validation agrees with the API server (fixed seed)', () => {
  beforeAll(async () => {
    await installCRDs(testKubeConfig(), generateCRDs(ALL_KINDS));
  });

  for (const kind of LOCAL_KINDS) {
    it(`${kind.kind}: same verdict and same fields on ${PER_KIND} objects`, async () => {
      const objects = sample(kind, PER_KIND, SEED);
      const tally = await measureAgreement(kind, createValidator(kind, { unknownFields: 'error' }), objects, dryRun);
      expect(tally.examples.map((e) => `${JSON.stringify(e.object.spec)}\n  local: ${e.local.join(' / ')}\n  server: ${e.server.join(' / ')}`).join('\n')).toBe('');
      expect(tally.agreed).toBe(PER_KIND);
      expect(tally.fieldMismatches.map((e) => `${JSON.stringify(e.object.spec)}\n  local: ${e.local.join(' / ')}\n  server: ${e.server.join(' / ')}`).join('\n')).toBe('');
      expect(tally.sameFields).toBe(tally.bothRefused);
      // the sample exercises both sides
      expect(tally.serverAccepted).toBeGreaterThan(PER_KIND / 5);
      expect(tally.serverAccepted).toBeLessThan(PER_KIND);
    });
  }

  it('Rules: the only disagreements are refusals by a CEL rule (server-only)', async () => {
    const objects = sample(Rules, PER_KIND, SEED);
    const tally = await measureAgreement(Rules, createValidator(Rules, { unknownFields: 'error' }), objects, dryRun);
    expect(tally.objects - tally.agreed).toBe(tally.celOnly);
    expect(tally.celOnly).toBeGreaterThan(0);
    expect(createValidator(Rules).validate(objects[0]).unchecked.some((u) => u.includes('CEL rule'))).toBe(true);
  });
});
