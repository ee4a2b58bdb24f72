/**
 * Differential: integers a strategic merge patch leaves in a built-in kind's
 * int32 field (a Deployment's `replicas`), in every literal form JSON allows
 * (plain integers of any size and sign, exponents, fractions, `-0`), sent as
 * the same bytes to kube-apiserver (envtest) and to the fake as dry runs. The
 * server's unstructured converter wraps what fits in int64 into int32, takes
 * integral floats, refuses fractions; answers (code, the stored replicas or
 * the message) must agree, but for a negative result, which the server's
 * validation of Deployments refuses and the fake (which does not validate
 * built-in fields) takes: there the value the server names must be the one
 * the fake stored.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { createFakeApiServer } from '../../src/index.js';
import type { FakeApiServer } from '../../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../../test/support/env.js';

const SEED = Number(process.env['KUBELOOP_FUZZ_SEED'] === 'random' ? Date.now() % 1_000_000_007 : (process.env['KUBELOOP_FUZZ_SEED'] ?? 12));
const RUNS = 120;

/** A JSON number literal: integers up to 25 digits either sign, exponent forms, fractions, negative zero. */
const literal = fc.oneof(
  fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
  fc.bigInt({ min: -(2n ** 65n), max: 2n ** 65n }).map(String),
  fc.integer({ min: -(2 ** 33), max: 2 ** 33 }).map(String),
  fc.tuple(fc.integer({ min: 1, max: 99 }), fc.integer({ min: 0, max: 25 }), fc.boolean()).map(([m, e, neg]) => `${neg ? '-' : ''}${m}e${e}`),
  fc.tuple(fc.integer({ min: 0, max: 5_000_000_000 }), fc.constantFrom('.0', '.5', '.25', '.000')).map(([i, f]) => `${i}${f}`),
  fc.constant('-0'),
);

interface Answer {
  readonly code: number;
  readonly replicas?: unknown;
  readonly message?: string | undefined;
}

async function send(client: Client, ns: string, text: string): Promise<Answer> {
  const res = await client.transport.request({
    method: 'PATCH',
    path: `/apis/apps/v1/namespaces/${ns}/deployments/d`,
    query: { dryRun: 'All' },
    contentType: 'application/strategic-merge-patch+json',
    body: `{"spec":{"replicas":${text}}}`,
  });
  const body = JSON.parse(res.body) as { kind?: string; message?: string; spec?: { replicas?: unknown } };
  return body.kind === 'Status' ? { code: res.status, message: body.message } : { code: res.status, replicas: body.spec?.replicas };
}

describe('integers a strategic merge patch leaves in an int32 field', () => {
  let fakeServer: FakeApiServer;
  let env: Environment;
  let backends: { name: string; client: Client; ns: string }[];

  beforeAll(async () => {
    fakeServer = createFakeApiServer();
    env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    backends = [
      { name: 'envtest', client: createClient({ kubeConfig: env.kubeConfig, transportOptions: { qps: 0 } }), ns: uniqueName('int32') },
      { name: 'fake', client: fakeServer.client(), ns: uniqueName('int32') },
    ];
    for (const b of backends) {
      await b.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: b.ns } });
      await b.client.create({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: b.ns }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } } } as never);
    }
  });
  afterAll(async () => {
    for (const b of backends ?? []) await b.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: b.ns }).catch(() => undefined);
    await fakeServer?.close();
    await env?.stop();
  });

  it(`seed ${SEED}: ${RUNS} literals answered alike (the wrapped value, or the same refusal)`, async () => {
    const disagreements: string[] = [];
    const codes = new Map<number, number>();
    let negative = 0;
    await fc.assert(
      fc.asyncProperty(literal, async (text) => {
        const [real, fake] = await Promise.all(backends.map((b) => send(b.client, b.ns, text)));
        codes.set(real!.code, (codes.get(real!.code) ?? 0) + 1);
        // A negative result is refused by the Deployment's validation on the server, which the fake does not run
        // (docs/testing-fake.md, "validation of built-in kinds"): the value the server names must be the fake's.
        const refused = /spec\.replicas: Invalid value: (-?\d+): must be greater than or equal to 0/.exec(real!.message ?? '');
        if (refused && fake!.code === 200 && fake!.replicas === Number(refused[1])) {
          negative++;
          return true;
        }
        if (JSON.stringify(real) !== JSON.stringify(fake)) disagreements.push(`${text}: envtest ${JSON.stringify(real)}, fake ${JSON.stringify(fake)}`);
        return true;
      }),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(`converter integers: seed ${SEED}, ${RUNS} literals, envtest answered ${[...codes].map(([c, n]) => `${c} x${n}`).join(', ')} (${negative} of them a negative result the fake takes, with the same value); ${disagreements.length} disagreements`);
    // all three kinds of answer were reached: values taken, wrapped below zero, and refused by the converter
    expect(codes.get(200) ?? 0).toBeGreaterThan(0);
    expect(negative).toBeGreaterThan(0);
    expect((codes.get(422) ?? 0) - negative).toBeGreaterThan(0);
    expect(disagreements).toEqual([]);
  });
});
