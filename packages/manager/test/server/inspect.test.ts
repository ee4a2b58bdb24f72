/**
 * The inspect endpoint on a plain (unauthenticated) metrics server, against
 * the real API server: reads are served as /metrics is (a controller, its
 * keys in flight with their reconcile ID, a key's triggers), a pause is
 * refused (403: nobody is authenticated), unknown controllers and paths are
 * 404; without `inspect: true` a plain server serves none of it, nor with `inspect: false`. The secured server's
 * authorization is tested through `kubeloop inspect` (packages/cli/test/inspect.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';
import { Result } from '../../src/index.js';
import type { ControllerInspection, KeyInspection } from '../../src/index.js';
import { eventually, newNamespace, run, synced, testClient, testManager } from '../support.js';

let client: Client;

beforeAll(() => {
  client = testClient();
});
afterAll(() => {
  client.transport.close();
});

describe('the inspect endpoint on a plain metrics server', () => {
  it('serves reads (a key in flight with its reconcile ID, its triggers) and refuses a pause with 403', async () => {
    const ns = await newNamespace(client, 'inspect-plain');
    const m = testManager(ns, { metricsBindAddress: '127.0.0.1:0', inspect: true });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reconcileID = '';
    m.controller().named('slow').for(ConfigMap).complete(async (_req, ctx) => {
      reconcileID = ctx.reconcileID;
      await held;
      return Result.done();
    });
    const r = run(m);
    try {
      await synced(m);
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'held', namespace: ns } });
      const base = `${m.metricsUrl!}/inspect`;
      const view = await eventually(async () => (await (await fetch(`${base}/slow`)).json()) as ControllerInspection, (v) => v.inFlight.length === 1, 'the key in flight');
      expect(view.inFlight[0]).toMatchObject({ key: `${ns}/held`, reconcileID });
      expect(view.inFlight[0]!.elapsedMs).toBeGreaterThanOrEqual(0);
      // Changed while held: the next reconcile's trigger waits.
      await client.patch(ConfigMap, { namespace: ns, name: 'held' }, mergePatch({ data: { v: '1' } }));
      const key = await eventually(async () => (await (await fetch(`${base}/slow/${ns}/held`)).json()) as KeyInspection, (k) => k.pendingTriggers.length === 1, 'the update waiting');
      expect(key).toMatchObject({ controller: 'slow', key: `${ns}/held`, waiting: true, inFlight: { reconcileID }, pendingTriggers: [{ source: 'for', event: 'update', kind: 'ConfigMap', name: 'held' }] });
      const list = (await (await fetch(base)).json()) as { controllers: ControllerInspection[] };
      expect(list.controllers.map((c) => c.name)).toEqual(['slow']);

      const pause = await fetch(`${base}/slow/pause`, { method: 'POST' });
      expect(pause.status).toBe(403);
      expect(((await pause.json()) as { error: string }).error).toContain('needs the metrics server\'s authorization');
      expect(m.controllers()[0]!.paused).toBe(false);
      expect((await fetch(`${base}/nope`)).status).toBe(404);
      expect((await fetch(`${base}/slow/a/b/c`)).status).toBe(404);
      expect((await fetch(base, { method: 'DELETE' })).status).toBe(405);
    } finally {
      release();
      await r.stop();
    }
  });

  it.each([
    ['on a plain metrics server unless asked for (object names and errors would reach anyone)', {}],
    ['with inspect: false', { inspect: false }],
  ] as const)('is not served %s', async (_, options) => {
    const ns = await newNamespace(client, 'inspect-off');
    const m = testManager(ns, { metricsBindAddress: '127.0.0.1:0', ...options });
    m.controller().named('quiet').for(ConfigMap).complete(() => Result.done());
    const r = run(m);
    try {
      await synced(m);
      expect((await fetch(`${m.metricsUrl!}/inspect`)).status).toBe(404);
      expect((await fetch(`${m.metricsUrl!}/metrics`)).status).toBe(200);
    } finally {
      await r.stop();
    }
  });
});
