/**
 * The fake's decoding of built-in kinds against kube-apiserver's: generated
 * base64 byte fields (a Secret's data) and timestamps (a Node condition's
 * `Time`, a Lease's `MicroTime`), over the grammar and beside it, are sent
 * to the shared envtest in dry-run creates; the server's stored form or its
 * refusal's message is what the fake's decoder gives.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { decodeBuiltin, DecodeError } from '../../src/internal/openapi/decode.js';
import type { Json } from '../../src/internal/json.js';
import { testKubeconfigPath } from '../../../../test/support/env.js';

/** A fixed seed in CI; KUBELOOP_DECODE_SEED=random (and KUBELOOP_DECODE_RUNS) explores. */
const SEED = process.env['KUBELOOP_DECODE_SEED'] === 'random' ? undefined : Number(process.env['KUBELOOP_DECODE_SEED'] ?? 24);
const RUNS = Number(process.env['KUBELOOP_DECODE_RUNS'] ?? 60);

let client: Client;
beforeAll(async () => {
  const env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  client = createClient({ kubeConfig: env.kubeConfig, transportOptions: { qps: 0 } });
});

interface Probe {
  readonly path: string;
  readonly object: Json;
  /** The value the probe is about, in a stored object. */
  readonly pick: (stored: Json) => unknown;
}

/** `= stored value` or `! message` (the server's, less the "cannot be handled as a Kind: " prefix). */
async function server(probe: Probe, kind: string): Promise<string> {
  const res = await client.transport.request({ method: 'POST', path: probe.path, query: { dryRun: 'All' }, body: JSON.stringify(probe.object) });
  const body = JSON.parse(res.body) as Json & { message?: string };
  if (res.status === 201) return `= ${JSON.stringify(probe.pick(body))}`;
  return `! ${(body.message ?? '').replace(new RegExp(`^${kind} in version "[^"]+" cannot be handled as a ${kind}: `), '')}`;
}

function fake(probe: Probe, apiVersion: string, kind: string): string {
  try {
    const decoded = decodeBuiltin(probe.object, apiVersion, kind, 'Warn')!;
    return `= ${JSON.stringify(probe.pick(decoded.object))}`;
  } catch (err) {
    if (err instanceof DecodeError) return `! ${err.message}`;
    throw err;
  }
}

const secret = (value: string): Probe => ({
  path: '/api/v1/namespaces/default/secrets',
  object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'decode-probe' }, data: { k: value } },
  pick: (o) => (o as { data?: { k?: unknown } }).data?.k,
});
const node = (time: string): Probe => ({
  path: '/api/v1/nodes',
  object: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'decode-probe' }, status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: time }] } },
  pick: (o) => (o as { status?: { conditions?: { lastHeartbeatTime?: unknown }[] } }).status?.conditions?.[0]?.lastHeartbeatTime,
});
const lease = (time: string): Probe => ({
  path: '/apis/coordination.k8s.io/v1/namespaces/default/leases',
  object: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'decode-probe' }, spec: { renewTime: time } },
  pick: (o) => (o as { spec?: { renewTime?: unknown } }).spec?.renewTime,
});

const base64 = fc.oneof(
  // valid base64 of random bytes, sometimes broken by newlines, cut short or with a stray byte
  fc.tuple(fc.uint8Array({ maxLength: 10 }), fc.nat(16), fc.constantFrom('', '\n', '\r\n', '=', '!', ' ', '-')).map(([bytes, at, extra]) => {
    const text = Buffer.from(bytes).toString('base64');
    const i = Math.min(at, text.length);
    return `${text.slice(0, i)}${extra}${text.slice(i)}`;
  }),
  fc.array(fc.constantFrom(...'AQZaz09+/=\n\r!_'), { maxLength: 10 }).map((c) => c.join('')),
);

const two = (max: number): fc.Arbitrary<string> => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
const timestamp = fc
  .tuple(
    fc.oneof(fc.integer({ min: 1, max: 9999 }).map((n) => String(n).padStart(4, '0')), fc.constantFrom('999', '20266')),
    two(13),
    two(32),
    fc.constantFrom('T', 'T', 'T', 't', ' '),
    fc.oneof(two(24), fc.constantFrom('5', '')),
    two(60),
    two(60),
    fc.constantFrom('', '', '.1', '.123456', '.1234567', '.000000', ',5', '.'),
    fc.constantFrom('Z', 'Z', '+01:00', '-00:30', '+1:00', '', 'z', '+24:00', '-05:60', '+25:00', '-23:59', '*01:00'),
    fc.constantFrom('', '', '', 'x', ' ', 'Z'),
  )
  .map(([y, mo, d, t, h, mi, s, frac, zone, extra]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}${frac}${zone}${extra}`);

describe('decoding built-in kinds, as kube-apiserver does', () => {
  it('base64 byte fields (a Secret): the same canonical text or the same refusal', async () => {
    await fc.assert(
      fc.asyncProperty(base64, async (value) => {
        expect(fake(secret(value), 'v1', 'Secret'), JSON.stringify(value)).toBe(await server(secret(value), 'Secret'));
      }),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
  });

  it('Time (a Node condition) and MicroTime (a Lease): the same UTC form or the same refusal', async () => {
    await fc.assert(
      fc.asyncProperty(timestamp, async (time) => {
        expect(fake(node(time), 'v1', 'Node'), `Time ${time}`).toBe(await server(node(time), 'Node'));
        expect(fake(lease(time), 'coordination.k8s.io/v1', 'Lease'), `MicroTime ${time}`).toBe(await server(lease(time), 'Lease'));
      }),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
  });
});
