/**
 * The fake's quantities against kube-apiserver's: generated quantities
 * (fast-check, over the grammar and beside it) are sent to the shared
 * envtest inside a Node's capacity (a resource list, dry run) and the
 * server's answer, written form or refusal, is what the fake's parser and
 * formatter give.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { formatQuantity, parseQuantity, QuantityError, roundUpToMilli } from '../../src/internal/openapi/quantity.js';
import { testKubeconfigPath } from '../../../../test/support/env.js';

let client: Client;
beforeAll(async () => {
  const env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  client = createClient({ kubeConfig: env.kubeConfig, transportOptions: { qps: 0 } });
});

/** What the server stores for `value` in a resource list, or its refusal's message. */
async function server(value: string | number): Promise<string> {
  const res = await client.transport.request({
    method: 'POST',
    path: '/api/v1/nodes',
    query: { dryRun: 'All' },
    body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'quantity-probe' }, status: { capacity: { cpu: value } } }),
  });
  const body = JSON.parse(res.body) as { status?: { capacity?: { cpu?: string } }; message?: string };
  if (res.status === 201) return `= ${body.status?.capacity?.cpu ?? '(none)'}`;
  // a negative quantity is decoded, then refused by the Node's validation, which shows it as written
  const negative = /Invalid value: "([^"]*)": must be greater than or equal to 0/.exec(body.message ?? '');
  if (res.status === 422 && negative) return `= ${negative[1]!}`;
  return `! ${(body.message ?? '').replace('Node in version "v1" cannot be handled as a Node: ', '')}`;
}

function fake(value: string | number): string {
  try {
    return `= ${formatQuantity(roundUpToMilli(parseQuantity(String(value))))}`;
  } catch (err) {
    if (err instanceof QuantityError) return `! ${err.message}`;
    throw err;
  }
}

const digits = (max: number): fc.Arbitrary<string> => fc.array(fc.constantFrom(...'0123456789'), { minLength: 0, maxLength: max }).map((d) => d.join(''));
const suffix = fc.oneof(
  fc.constantFrom('', 'n', 'u', 'm', 'k', 'M', 'G', 'T', 'P', 'E', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'),
  fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.integer({ min: 0, max: 21 })).map(([e, s, n]) => `${e}${s}${n}`),
  fc.constantFrom('x', 'Kii', 'e', '.', 'i'),
);
const quantity = fc.tuple(fc.constantFrom('', '', '+', '-'), digits(8), fc.option(digits(10)), suffix).map(([sign, whole, fraction, sfx]) => `${sign}${whole}${fraction === null ? '' : `.${fraction}`}${sfx}`);

describe('quantities, as kube-apiserver writes them', () => {
  it('the cases from the issue: 0.25 -> 250m, 1024Mi -> 1Gi', () => {
    expect(fake(0.25)).toBe('= 250m');
    expect(fake('1024Mi')).toBe('= 1Gi');
  });

  it('generated quantities: the same written form or the same refusal as the server', async () => {
    const seen: string[] = [];
    await fc.assert(
      fc.asyncProperty(quantity, async (q) => {
        seen.push(q);
        expect(fake(q), q).toBe(await server(q));
      }),
      { numRuns: 80, seed: 24 },
    );
    expect(seen.length).toBe(80);
  });
});
