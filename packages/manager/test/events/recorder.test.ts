/**
 * The event recorder writes events.k8s.io/v1 Events through the manager's
 * client; it never throws and never blocks: failures are logged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client, Stored } from '@kubeloop/client';
import { eventsv1 } from '@kubeloop/scheme';
import type { ConfigMap } from '@kubeloop/scheme';
import { createLogger, createManager } from '../../src/index.js';
import type { Manager } from '../../src/index.js';
import { testKubeConfig, uniqueName } from '../../../../test/support/env.js';
import { LogCapture, newNamespace, testClient } from '../support.js';

let client: Client;
let ns: string;
let manager: Manager;
let out: LogCapture;
let subject: Stored<ConfigMap>;

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'recorder');
  out = new LogCapture();
  manager = createManager({
    kubeConfig: testKubeConfig(),
    namespaces: [ns],
    logger: createLogger({ level: 'info', destination: out }),
    leaderElection: { name: 'unused', identity: 'replica-7' },
  });
  subject = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'subject', namespace: ns } });
});
afterAll(() => {
  client.transport.close();
  manager.client.transport.close();
});

async function eventsIn(namespace: string): Promise<eventsv1.Event[]> {
  return (await client.list(eventsv1.Event, { namespace })).items;
}

describe('recorderFor(name).event', () => {
  it('creates an events.k8s.io/v1 Event about the object, reported by the named controller', async () => {
    const recorder = manager.recorderFor('disk-controller');
    const returned: unknown = recorder.event({ ...subject, apiVersion: 'v1', kind: 'ConfigMap' }, 'Normal', 'Provisioned', 'Reconcile', 'created ConfigMap subject-disk');
    expect(returned).toBeUndefined();
    await recorder.flush();
    const events = (await eventsIn(ns)).filter((e) => e.reason === 'Provisioned');
    expect(events).toHaveLength(1);
    const e = events[0]!;
    expect(e).toMatchObject({
      type: 'Normal',
      reason: 'Provisioned',
      action: 'Reconcile',
      note: 'created ConfigMap subject-disk',
      reportingController: 'disk-controller',
      reportingInstance: 'replica-7',
      regarding: { apiVersion: 'v1', kind: 'ConfigMap', name: 'subject', namespace: ns, uid: subject.metadata.uid, resourceVersion: subject.metadata.resourceVersion },
    });
    expect(e.metadata?.namespace).toBe(ns);
    expect(e.metadata?.name).toMatch(/^subject\.[0-9a-f]{16}$/);
    // MicroTime: microsecond precision
    expect(String(e.eventTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it('records warnings, and truncates a long note to the 1 kB the API allows', async () => {
    const recorder = manager.recorderFor('disk-controller');
    recorder.event({ ...subject, apiVersion: 'v1', kind: 'ConfigMap' }, 'Warning', 'TooLong', 'Reconcile', 'x'.repeat(5000));
    await recorder.flush();
    const e = (await eventsIn(ns)).find((ev) => ev.reason === 'TooLong');
    expect(e?.type).toBe('Warning');
    expect(e?.note).toHaveLength(1024);
    expect(e?.note?.endsWith('...')).toBe(true);
  });

  it('an event about a cluster-scoped object goes to the default namespace', async () => {
    const recorder = manager.recorderFor('ns-controller');
    const namespace = await client.get({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns });
    const reason = `Seen${uniqueName('x').slice(2)}`;
    recorder.event(namespace, 'Normal', reason, 'Observe', 'namespace seen');
    await recorder.flush();
    const e = (await eventsIn('default')).find((ev) => ev.reason === reason);
    expect(e?.regarding).toMatchObject({ kind: 'Namespace', name: ns, uid: namespace.metadata?.uid });
    expect(e?.regarding?.namespace).toBeUndefined();
  });

  it('flush waits for every pending event of every recorder', async () => {
    const a = manager.recorderFor('a');
    const b = manager.recorderFor('b');
    for (let i = 0; i < 5; i++) {
      a.event({ ...subject, apiVersion: 'v1', kind: 'ConfigMap' }, 'Normal', 'Burst', 'Reconcile', `a${i}`);
      b.event({ ...subject, apiVersion: 'v1', kind: 'ConfigMap' }, 'Normal', 'Burst', 'Reconcile', `b${i}`);
    }
    await a.flush();
    const notes = (await eventsIn(ns)).filter((e) => e.reason === 'Burst').map((e) => e.note);
    expect(notes.sort()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'b0', 'b1', 'b2', 'b3', 'b4']);
  });

  it('a failing write (its namespace does not exist) is logged, never thrown', async () => {
    const recorder = manager.recorderFor('disk-controller');
    const missing = uniqueName('no-such-ns');
    const orphan = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ghost', namespace: missing, uid: '00000000-0000-0000-0000-000000000000' } };
    expect(() => recorder.event(orphan, 'Warning', 'Lost', 'Reconcile', 'nobody hears this')).not.toThrow();
    await expect(recorder.flush()).resolves.toBeUndefined();
    const line = out.lines().find((l) => l['msg'] === 'could not record event');
    expect(line).toMatchObject({ level: 40, reason: 'Lost', object: `${missing}/ghost` });
    expect(JSON.stringify(line?.['err'])).toMatch(/not ?found/i);
    // and the recorder still works afterwards
    recorder.event({ ...subject, apiVersion: 'v1', kind: 'ConfigMap' }, 'Normal', 'StillWorks', 'Reconcile', 'ok');
    await recorder.flush();
    expect((await eventsIn(ns)).some((e) => e.reason === 'StillWorks')).toBe(true);
  });
});
