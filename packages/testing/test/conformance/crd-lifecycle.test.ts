/**
 * Conformance: a CRD deleted while a custom resource holds a finalizer.
 * The server's CRD storage adds the `customresourcecleanup` finalizer and
 * the CRD stays, Terminating (`InstanceDeletionInProgress`); every custom
 * resource is deleted (the one a finalizer holds is marked and stays),
 * creates are refused with 403 (dry runs too) while updates go through;
 * when the finalizer is released the object goes, then the CRD, and an open
 * watch of the kind ends. Written from kube-apiserver v1.37.2's answers
 * (issue 40); each step failed on the fake before (it deleted at once and
 * the watch never ended).
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../../src/index.js';
import { BACKENDS, useBackend } from './backends.js';
import { raw, thingCRD } from './support.js';


describe.each(BACKENDS)('CRD lifecycle ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it('a created CRD has the strategy\'s zero status; established, kube-apiserver owns the names and conditions it wrote, and the Terminating reason and message when its deletion starts', async () => {
    const group = `${h().name('status')}.conformance.kubeloop.dev`;
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.${group}`;
    const created = await raw(h(), 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: thingCRD(group) });
    expect([created.status, created.body['status']]).toEqual([201, { conditions: null, acceptedNames: { plural: '', kind: '' }, storedVersions: ['v1'] }]);
    type Entry = { manager: string; operation: string; subresource?: string; fieldsV1: Record<string, unknown> };
    const entries = async (): Promise<Record<string, unknown>> => {
      const got = await raw(h(), 'GET', crdPath);
      const managed = ((got.body['metadata'] as { managedFields: Entry[] }).managedFields).filter((e) => e.manager === 'kube-apiserver');
      return Object.fromEntries(managed.map((e) => [`${e.operation} ${e.subresource ?? ''}`, e.fieldsV1]));
    };
    const condition = { '.': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} };
    const established = { 'f:acceptedNames': { 'f:kind': {}, 'f:listKind': {}, 'f:plural': {}, 'f:singular': {} }, 'f:conditions': { 'k:{"type":"Established"}': condition, 'k:{"type":"NamesAccepted"}': condition } };
    await eventually(async () => expect(await entries()).toEqual({ 'Update status': { 'f:status': established } }), { timeoutMs: 15_000 });

    // a custom resource held by a finalizer keeps the CRD Terminating: the finalizer controller's status write is recorded
    const path = `/apis/${group}/v1/namespaces/${h().namespace}/things`;
    await eventually(async () => expect((await raw(h(), 'POST', path, { body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'held', finalizers: ['example.com/hold'] } } })).status).toBe(201), { timeoutMs: 15_000 });
    expect((await raw(h(), 'DELETE', crdPath)).status).toBe(200);
    const terminating = { ...established, 'f:conditions': { ...established['f:conditions'], 'k:{"type":"Terminating"}': { 'f:message': {}, 'f:reason': {} } } };
    await eventually(async () => expect(await entries()).toEqual({ 'Update status': { 'f:status': terminating } }), { timeoutMs: 30_000 });
    expect((await raw(h(), 'PATCH', `${path}/held`, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' })).status).toBe(200);
    await eventually(async () => expect((await raw(h(), 'GET', crdPath)).status).toBe(404), { timeoutMs: 30_000 });
  }, 90_000);

  it('a CRD whose custom resource holds a finalizer stays Terminating, refuses creates, and goes with the last object, ending watches', async () => {
    const group = `${h().name('life')}.conformance.kubeloop.dev`;
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.${group}`;
    const path = `/apis/${group}/v1/namespaces/${h().namespace}/things`;
    const thing = (name: string, finalizers?: string[]): Record<string, unknown> => ({ apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name, ...(finalizers ? { finalizers } : {}) } });
    expect((await raw(h(), 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: thingCRD(group) })).status).toBe(201);
    await eventually(async () => expect((await raw(h(), 'POST', path, { body: thing('held', ['example.com/hold']) })).status).toBe(201), { timeoutMs: 15_000 });
    expect((await raw(h(), 'POST', path, { body: thing('free') })).status).toBe(201);

    const watch = await h().client().transport.stream({ method: 'GET', path, query: { watch: 'true', resourceVersion: '0' } });
    let text = '';
    let endedByServer = false;
    const ended = new Promise<void>((resolve) => {
      watch.on('data', (d: Buffer) => (text += d.toString()));
      watch.on('end', () => {
        endedByServer = true;
        resolve();
      });
    });

    const deleted = await raw(h(), 'DELETE', crdPath);
    const dm = deleted.body['metadata'] as { deletionTimestamp?: string; deletionGracePeriodSeconds?: number; finalizers?: string[]; generation?: number };
    expect({ status: deleted.status, marked: dm.deletionTimestamp !== undefined, grace: dm.deletionGracePeriodSeconds, finalizers: dm.finalizers, generation: dm.generation }).toEqual({ status: 200, marked: true, grace: undefined, finalizers: ['customresourcecleanup.apiextensions.k8s.io'], generation: 1 });

    // Terminating, the free object gone, the held one marked
    await eventually(async () => {
      const got = await raw(h(), 'GET', crdPath);
      const terminating = ((got.body['status'] as { conditions?: { type: string; status: string; reason: string; message: string }[] }).conditions ?? []).find((c) => c.type === 'Terminating');
      expect(terminating).toMatchObject({ status: 'True', reason: 'InstanceDeletionInProgress', message: 'CustomResource deletion is in progress' });
      const items = ((await raw(h(), 'GET', path)).body['items'] as { metadata: { name: string; deletionTimestamp?: string } }[]).map((i) => `${i.metadata.name} ${i.metadata.deletionTimestamp ? 'marked' : 'live'}`);
      expect(items).toEqual(['held marked']);
    }, { timeoutMs: 30_000 });

    for (const query of [{}, { dryRun: 'All' }]) {
      const refused = await raw(h(), 'POST', path, { query, body: thing('new') });
      expect({ status: refused.status, reason: refused.body['reason'], message: refused.body['message'] }).toEqual({ status: 403, reason: 'Forbidden', message: `things.${group} "new" is forbidden: create not allowed while custom resource definition is terminating` });
    }
    const updated = await raw(h(), 'PATCH', `${path}/held`, { body: { metadata: { labels: { a: 'b' } } }, contentType: 'application/merge-patch+json' });
    expect(updated.status).toBe(200);

    // the finalizer released: the object goes, the CRD after it, the watch ends
    expect((await raw(h(), 'PATCH', `${path}/held`, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' })).status).toBe(200);
    await eventually(async () => expect((await raw(h(), 'GET', crdPath)).status).toBe(404), { timeoutMs: 30_000 });
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 20_000))]);
    const endedBeforeWeLeft = endedByServer;
    watch.destroy();
    const events = text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string; deletionTimestamp?: string } } });
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}${e.object.metadata.deletionTimestamp ? ' marked' : ''}`)).toEqual(['ADDED free', 'ADDED held', 'DELETED free', 'MODIFIED held marked', 'MODIFIED held marked', 'DELETED held marked']);
    expect(endedBeforeWeLeft, 'the server ends an open watch of the kind when its CRD goes').toBe(true);
  }, 90_000);
});
