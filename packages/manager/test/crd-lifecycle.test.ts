/**
 * CRDs that come and go under a running manager, against the real API
 * server: a controller whose `for` CRD is deleted (with a custom resource
 * whose finalizer keeps the CRD Terminating until the controller has run its
 * finalizer logic) stops its sources and informer, drops the kind from the
 * mapper, says in `/readyz` that it waits for its CRD, sends no stream of
 * requests and logs no stream of errors while it waits, and reconciles
 * existing and new objects once the CRD is installed again. A watched
 * (`owns`) kind whose CRD goes away leaves the controller running for its
 * `for` kind; the watch comes back with the CRD. The wait shows on the
 * inspect endpoint, and the first list of a source started again when its
 * CRD is back is reported to the reconciler as `crd-established`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNoKindMatch, isNotFound, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createLogger, Result } from '../src/index.js';
import type { ControllerInspection, Manager, Trigger } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';
import { eventually, LogCapture, newNamespace, readyz, run, testClient, testManager } from './support.js';

const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' };
const FINALIZER = 'kubeloop.test/cleanup';
/** pino's warn level: lines at it or above are the error stream a CRD outage must not cause. */
const WARN = 40;

let client: Client;
let ns: string;
let proxy: ApiProxy;

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'crdlife');
  proxy = await startApiProxy(testKubeConfig());
});
afterAll(async () => {
  await proxy.close();
  client.transport.close();
});

async function deleteCRD(name: string): Promise<void> {
  await client.delete(CRD, { name }).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
}

/** Resolves once the CRD is gone from the API server (its Terminating phase over). */
async function crdGone(name: string, timeoutMs = 60_000): Promise<void> {
  await eventually(
    () => client.get(CRD, { name }).then(() => false, (err: unknown) => isNotFound(err)),
    (gone) => gone,
    `CRD ${name} to be gone`,
    timeoutMs,
  );
}

/** Requests the proxy saw for a group's resources (lists, watches, writes; not discovery). */
function resourceRequests(group: string, since: number): number {
  return proxy.count((r) => r.at >= since && r.path.startsWith(`/apis/${group}/`));
}

function warnings(logs: LogCapture): Record<string, unknown>[] {
  return logs.lines().filter((l) => typeof l['level'] === 'number' && l['level'] >= WARN);
}

describe('a controller whose CRD is deleted and installed again', () => {
  it('runs its finalizer while the CRD terminates, then waits quietly for the CRD and reconciles again once it is back', { timeout: 180_000 }, async () => {
    const group = `${uniqueName('gone')}.kubeloop.test`;
    const crd = testCRD(group, 'Gizmo');
    const crdName = crd.metadata.name;
    await installCRDs(testKubeConfig(), [crd]);
    const Gizmo = { apiVersion: `${group}/v1`, kind: 'Gizmo' };
    const logs = new LogCapture();
    const m: Manager = testManager(ns, {
      kubeConfig: proxy.kubeConfig,
      healthProbeBindAddress: '127.0.0.1:0',
      crdPollIntervalMs: 1000,
      logger: createLogger({ level: 'info', destination: logs }),
    });
    const seen: string[] = [];
    const finalized: string[] = [];
    m.controller()
      .named('gizmos')
      .for(Gizmo)
      .complete(async (req) => {
        const key = { namespace: req.namespace!, name: req.name };
        let gizmo: { metadata: { deletionTimestamp?: string; finalizers?: readonly string[] }; spec?: { size?: number } };
        try {
          gizmo = (await m.client.get(Gizmo, key)) as typeof gizmo;
        } catch (err) {
          if (isNotFound(err)) return Result.done();
          throw err;
        }
        if (gizmo.metadata.deletionTimestamp) {
          // The finalizer's work, then the finalizer off: only then can the CRD finish terminating.
          finalized.push(req.name);
          await m.client.patch(Gizmo, key, mergePatch({ metadata: { finalizers: null } }));
          return Result.done();
        }
        if (!gizmo.metadata.finalizers?.includes(FINALIZER)) await m.client.patch(Gizmo, key, mergePatch({ metadata: { finalizers: [FINALIZER] } }));
        seen.push(`${req.name}:${gizmo.spec?.size ?? '?'}`);
        return Result.done();
      });
    const r = run(m);
    try {
      await client.create({ ...Gizmo, metadata: { name: 'g1', namespace: ns }, spec: { size: 1 } });
      await eventually(() => seen, (s) => s.includes('g1:1'), 'g1 reconciled');
      await eventually(() => client.get(Gizmo, { namespace: ns, name: 'g1' }), (g) => (g.metadata?.finalizers ?? []).includes(FINALIZER), 'the finalizer on g1');
      expect(m.cache.informers().map((i) => i.kind)).toContain(`Gizmo.${group}/v1`);

      // Delete the CRD with g1 still there: the API server deletes g1, whose finalizer keeps the CRD Terminating
      // until the controller has run its finalizer logic.
      await deleteCRD(crdName);
      await eventually(() => finalized, (f) => f.includes('g1'), 'the finalizer logic of g1 while the CRD terminates', 60_000);
      await crdGone(crdName);

      // Stopped, not failing: readiness passes and names the wait; the informer is dropped; the mapper forgot the kind.
      const status = await eventually(() => m.controllers().find((c) => c.name === 'gizmos')!, (c) => c.forKindMissing, 'the controller to wait for its CRD', 60_000);
      expect(status.waitingForCRD).toEqual([`Gizmo.${group}/v1`]);
      expect(status.synced).toBe(false);
      await eventually(() => m.cache.informers().map((i) => i.kind), (kinds) => !kinds.includes(`Gizmo.${group}/v1`), 'the Gizmo informer to be dropped');
      const ready = await readyz(m);
      expect(ready.status).toBe(200);
      expect(ready.body).toContain(`[+]controllers ok: gizmos waits for the CRD of Gizmo.${group}/v1`);
      // A live read of the gone kind is NoKindMatch once the server's discovery has dropped it (it may trail the
      // CRD's deletion by a moment on a busy server).
      await eventually(() => m.apiReader.list(Gizmo, { namespace: ns }).then(() => undefined, (err: unknown) => err), (err) => isNoKindMatch(err), 'a live list of the gone kind to be NoKindMatch', 60_000);

      // No error loop: over a quiet spell, no request for the kind's resources, a few discovery polls, no warnings.
      const warnedBefore = warnings(logs).length;
      const since = Date.now();
      await sleep(12_000);
      const resources = resourceRequests(group, since);
      const discovery = proxy.count((r) => r.at >= since && (r.path === '/apis' || r.path === '/api' || r.path.startsWith(`/apis/${group}`)));
      expect(resources).toBe(0);
      // One poll per second asks the mapper, whose miss cache (5 s) lets at most one discovery request through every 5 s.
      expect(discovery).toBeLessThanOrEqual(6);
      expect(warnings(logs).length).toBe(warnedBefore);
      expect(logs.lines().filter((l) => String(l['msg']).includes('not served')).length).toBeLessThanOrEqual(1);
      expect(seen.length).toBeGreaterThan(0);

      // Installed again, with an object created before the controller has noticed: both reconciled.
      const reconciledBefore = seen.length;
      await installCRDs(testKubeConfig(), [crd]);
      await client.create({ ...Gizmo, metadata: { name: 'g2', namespace: ns }, spec: { size: 2 } });
      await eventually(() => seen, (s) => s.includes('g2:2'), 'g2, created as the CRD came back, reconciled', 60_000);
      await eventually(() => m.controllers().find((c) => c.name === 'gizmos')!, (c) => c.synced && !c.forKindMissing && c.waitingForCRD.length === 0, 'the controller to run again');
      await client.create({ ...Gizmo, metadata: { name: 'g3', namespace: ns }, spec: { size: 3 } });
      await eventually(() => seen, (s) => s.includes('g3:3'), 'g3, created after, reconciled');
      await client.patch(Gizmo, { namespace: ns, name: 'g3' }, mergePatch({ spec: { size: 4 } }));
      await eventually(() => seen, (s) => s.includes('g3:4'), 'the change to g3 reconciled');
      expect(seen.length).toBeGreaterThan(reconciledBefore);
      expect((await readyz(m)).body).toContain('[+]controllers ok\n');
      expect(warnings(logs)).toEqual([]);
    } finally {
      await r.stop();
      for (const name of ['g1', 'g2', 'g3']) {
        await client.patch(Gizmo, { namespace: ns, name }, mergePatch({ metadata: { finalizers: null } })).catch(() => undefined);
      }
      await deleteCRD(crdName);
    }
  });

  it('a CRD deleted with no objects, and one missing at start: the controller waits, then starts when it is installed', { timeout: 120_000 }, async () => {
    const group = `${uniqueName('late')}.kubeloop.test`;
    const crd = testCRD(group, 'Widget');
    const crdName = crd.metadata.name;
    const Widget = { apiVersion: `${group}/v1`, kind: 'Widget' };
    const m = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0', crdPollIntervalMs: 500 });
    const seen: string[] = [];
    m.controller()
      .named('widgets')
      .for(Widget)
      .complete((req) => {
        seen.push(req.name);
        return Result.done();
      });
    const r = run(m);
    try {
      // Not installed at start: a wait, not a fault.
      await eventually(() => m.controllers()[0]!, (c) => c.forKindMissing, 'the controller to wait for its CRD');
      await eventually(() => readyz(m), (res) => res.status === 200 && res.body.includes(`widgets waits for the CRD of Widget.${group}/v1`), 'readyz to name the wait');
      await installCRDs(testKubeConfig(), [crd]);
      await client.create({ ...Widget, metadata: { name: 'w1', namespace: ns } });
      await eventually(() => seen, (s) => s.includes('w1'), 'w1 reconciled once the CRD is installed', 60_000);

      // Deleted with no objects left, installed again: the same.
      await client.delete(Widget, { namespace: ns, name: 'w1' });
      await deleteCRD(crdName);
      await crdGone(crdName);
      await eventually(() => m.controllers()[0]!, (c) => c.forKindMissing, 'the controller to wait again', 60_000);
      await installCRDs(testKubeConfig(), [crd]);
      await client.create({ ...Widget, metadata: { name: 'w2', namespace: ns } });
      await eventually(() => seen, (s) => s.includes('w2'), 'w2 reconciled after the reinstall', 60_000);
    } finally {
      await r.stop();
      await deleteCRD(crdName);
    }
  });
});

describe('a watched kind whose CRD is deleted', () => {
  it('keeps the controller running for its for kind, says so in readiness, and watches again when the CRD is back', { timeout: 120_000 }, async () => {
    const group = `${uniqueName('owned')}.kubeloop.test`;
    const crd = testCRD(group, 'Part');
    const crdName = crd.metadata.name;
    await installCRDs(testKubeConfig(), [crd]);
    const Part = { apiVersion: `${group}/v1`, kind: 'Part' };
    const prefix = uniqueName('cm');
    const m = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0', crdPollIntervalMs: 500 });
    const seen: string[] = [];
    m.controller()
      .named('assemblies')
      .for(ConfigMap, { predicates: [(e) => e.object.metadata?.name?.startsWith(prefix) ?? false] })
      .owns(Part)
      .complete((req) => {
        seen.push(req.name);
        return Result.done();
      });
    const r = run(m);
    try {
      const owner = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-a`, namespace: ns } });
      await eventually(() => seen, (s) => s.includes(`${prefix}-a`), 'the ConfigMap reconciled');

      await deleteCRD(crdName);
      await crdGone(crdName);
      const status = await eventually(() => m.controllers()[0]!, (c) => c.waitingForCRD.length === 1, 'the watch to wait for its CRD', 60_000);
      expect(status.forKindMissing).toBe(false);
      expect(status.waitingForCRD).toEqual([`Part.${group}/v1`]);
      const ready = await readyz(m);
      expect(ready.status).toBe(200);
      expect(ready.body).toContain(`[+]controllers ok: assemblies runs without its watch of Part.${group}/v1`);
      expect(m.cache.informers().map((i) => i.kind)).not.toContain(`Part.${group}/v1`);

      // The for kind is still reconciled.
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-b`, namespace: ns } });
      await eventually(() => seen, (s) => s.includes(`${prefix}-b`), 'a ConfigMap reconciled while the Part CRD is gone');

      // Back: a Part owned by the first ConfigMap enqueues its owner again.
      await installCRDs(testKubeConfig(), [crd]);
      await eventually(() => m.controllers()[0]!, (c) => c.waitingForCRD.length === 0 && c.synced, 'the watch to start again', 60_000);
      const before = seen.filter((n) => n === `${prefix}-a`).length;
      const uid = owner.metadata.uid!;
      await client.create({
        ...Part,
        metadata: { name: 'p1', namespace: ns, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: `${prefix}-a`, uid, controller: true }] },
      });
      await eventually(() => seen.filter((n) => n === `${prefix}-a`).length, (n) => n > before, 'the owner reconciled for its new Part');
      expect((await readyz(m)).body).toContain('[+]controllers ok\n');
    } finally {
      await r.stop();
      await deleteCRD(crdName);
    }
  });
});

describe('triggers and the inspect endpoint across a CRD outage', () => {
  it('shows the wait on the inspect endpoint, and reports the first list of the source started again as crd-established', { timeout: 120_000 }, async () => {
    const group = `${uniqueName('back')}.kubeloop.test`;
    const crd = testCRD(group, 'Sprocket');
    const crdName = crd.metadata.name;
    await installCRDs(testKubeConfig(), [crd]);
    const Sprocket = { apiVersion: `${group}/v1`, kind: 'Sprocket' };
    const m = testManager(ns, { kubeConfig: proxy.kubeConfig, metricsBindAddress: '127.0.0.1:0', inspect: true, crdPollIntervalMs: 500 });
    const seen: { name: string; triggers: readonly Trigger[] }[] = [];
    m.controller()
      .named('sprockets')
      .for(Sprocket)
      .complete((req, ctx) => {
        seen.push({ name: req.name, triggers: ctx.triggers });
        return Result.done();
      });
    const r = run(m);
    try {
      await client.create({ ...Sprocket, metadata: { name: 's1', namespace: ns } });
      await eventually(() => seen, (s) => s.some((e) => e.name === 's1'), 's1 reconciled');
      await deleteCRD(crdName);
      await crdGone(crdName);
      const inspect = async (): Promise<ControllerInspection> => (await (await fetch(`${m.metricsUrl!}/inspect/sprockets`)).json()) as ControllerInspection;
      const waiting = await eventually(inspect, (v) => v.forKindMissing, 'the inspect endpoint to show the wait for the CRD', 60_000);
      expect(waiting.waitingForCRD).toEqual([`Sprocket.${group}/v1`]);
      expect(waiting.synced).toBe(false);

      // The CRD comes back and an object is created while the manager cannot reach the API server:
      // the source started again finds it in its first list.
      await proxy.refuse();
      try {
        await installCRDs(testKubeConfig(), [crd]);
        await client.create({ ...Sprocket, metadata: { name: 's2', namespace: ns } });
      } finally {
        await proxy.accept();
      }
      await eventually(() => seen, (s) => s.some((e) => e.name === 's2'), 's2 reconciled once the CRD is back', 60_000);
      expect(seen.find((e) => e.name === 's2')!.triggers).toEqual([expect.objectContaining({ source: 'for', event: 'crd-established', kind: 'Sprocket', name: 's2' })]);
      const running = await eventually(inspect, (v) => v.synced && !v.forKindMissing, 'the inspect endpoint to show the controller running again');
      expect(running.waitingForCRD).toEqual([]);
    } finally {
      await r.stop();
      await deleteCRD(crdName);
    }
  });
});
