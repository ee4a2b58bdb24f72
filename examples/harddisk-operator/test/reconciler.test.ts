/**
 * The HardDisk reconciler's tests, written once with the test kit
 * (`@kubeloop/testing`) and run on both backends: the fake API server in
 * memory and the real kube-apiserver envtest started. This is how an
 * operator author tests a reconciler: a test manager, a namespace per file,
 * waiting for reconciles and events rather than sleeping. The fake-only case
 * at the end injects a fault a real server will not produce on demand.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAll } from 'js-yaml';
import { createClient, isNotFound, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs } from '@kubeloop/envtest';
import { builtinScheme, ConfigMap } from '@kubeloop/scheme';
import { collectEvents, consistently, createFakeApiServer, createTestNamespace, eventually } from '@kubeloop/testing';
import type { FakeApiServer, TestNamespace } from '@kubeloop/testing';
import { startTestManager } from '@kubeloop/testing/manager';
import type { TestManager } from '@kubeloop/testing/manager';
import { FINALIZER, HardDisk, setupHardDiskController } from '../src/index.js';
import { testKubeConfig } from '../../../test/support/env.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scheme = builtinScheme.extend(HardDisk);
// plain YAML (client-node's loadAllYaml maps a CRD onto its model classes, renaming `enum` to `_enum`, which a real server refuses and so does the fake)
const crds = loadAll(readFileSync(join(root, 'crd', 'harddisks.crd-demo.io.yaml'), 'utf8')) as object[];

describe.each([{ backend: 'fake' as const }, { backend: 'envtest' as const }])('the HardDisk reconciler on $backend', ({ backend }) => {
  let fake: FakeApiServer | undefined;
  let client: Client;
  let ns: TestNamespace;
  let tm: TestManager;

  const disk = (name: string, size: string, storageClass = 'fast') => ({ apiVersion: 'crd-demo.io/v1' as const, kind: 'HardDisk' as const, metadata: { name, namespace: ns.name }, spec: { size, storageClass } });
  const getDisk = (name: string) => client.get(HardDisk, { namespace: ns.name, name });

  beforeAll(async () => {
    if (backend === 'fake') {
      fake = createFakeApiServer();
      await fake.installCRDs(crds); // the CRD as shipped: the same schema on both backends
      client = fake.client({ scheme, fieldOwner: 'test' });
    } else {
      await installCRDs(testKubeConfig(), [join(root, 'crd')]);
      client = createClient({ kubeConfig: testKubeConfig(), scheme, fieldOwner: 'test' });
    }
    ns = await createTestNamespace(client, { prefix: 'hd' });
    tm = await startTestManager({ backend: fake ?? testKubeConfig(), scheme, namespaces: [ns.name], fieldOwner: 'harddisk-operator', setup: (m) => setupHardDiskController(m, 'explicit') });
  });

  afterAll(async () => {
    await tm?.stop();
    await ns?.delete();
    await fake?.close();
  });

  it('binds a disk: its ConfigMap owned by it, Ready=True, a finalizer, a Provisioned event', async () => {
    const events = await collectEvents(client, { namespace: ns.name, regarding: { name: 'd1' } });
    await client.create(disk('d1', '10Gi'));
    const bound = await eventually(async () => {
      const d = await getDisk('d1');
      expect(d.status?.phase).toBe('Bound');
      return d;
    });
    expect(bound.metadata?.finalizers).toContain(FINALIZER);
    expect(bound.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Provisioned', observedGeneration: bound.metadata?.generation });
    const cm = await client.get(ConfigMap, { namespace: ns.name, name: 'd1-disk' });
    expect(cm.data).toEqual({ size: '10Gi', storageClass: 'fast', medium: 'ssd', iops: '16000' });
    expect(cm.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'HardDisk', name: 'd1', uid: bound.metadata?.uid, controller: true })]);
    expect((await events.waitFor((e) => e.reason === 'Provisioned')).type).toBe('Normal');
    await events.stop();
  });

  it('resizes the ConfigMap when the spec changes, and repairs a hand edit', async () => {
    // Waiting for a state, not for "the next reconcile": one queued by an earlier write may finish first.
    const cmData = async () => (await client.get(ConfigMap, { namespace: ns.name, name: 'd1-disk' })).data;
    await client.patch(HardDisk, { namespace: ns.name, name: 'd1' }, mergePatch({ spec: { size: '20Gi', storageClass: 'standard' } }));
    await eventually(async () => expect(await cmData()).toMatchObject({ size: '20Gi', medium: 'hdd' }));
    await client.patch(ConfigMap, { namespace: ns.name, name: 'd1-disk' }, mergePatch({ data: { size: '1Ki' } }));
    await eventually(async () => expect((await cmData())?.['size']).toBe('20Gi'));
  });

  it('an invalid size is reported in status and not retried', async () => {
    const reconciles: string[] = [];
    const off = tm.manager.onReconcile((r) => {
      if (r.request.name === 'bad') reconciles.push(r.result);
    });
    try {
      await client.create(disk('bad', 'lots'));
      const invalid = await eventually(async () => {
        const d = await getDisk('bad');
        expect(d.status?.phase).toBe('Invalid');
        return d;
      });
      expect(invalid.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
      await expect(client.get(ConfigMap, { namespace: ns.name, name: 'bad-disk' })).rejects.toSatisfy(isNotFound);
      // settled: no further reconciles of it, so no retries with backoff
      const settled = reconciles.length;
      await consistently(() => expect(reconciles.length).toBe(settled), { durationMs: 1_000 });
      expect(reconciles).not.toContain('error');
    } finally {
      off();
    }
  });

  it('a size that is not a string never gets stored: the CRD schema refuses it on both backends', async () => {
    const err = await client.create({ ...disk('typed', '1Gi'), spec: { size: 10 as unknown as string } }).then(() => undefined, (e: unknown) => e);
    expect((err as Error).message).toContain('spec.size: Invalid value: "integer": spec.size in body must be of type string: "integer"');
  });

  it('releases the disk through its finalizer on delete', async () => {
    await client.delete(HardDisk, { namespace: ns.name, name: 'd1' });
    await eventually(async () => {
      await expect(getDisk('d1')).rejects.toSatisfy(isNotFound);
    });
    // the ConfigMap goes with it: deleted by the finalizer on both backends (no garbage collector needed)
    await expect(client.get(ConfigMap, { namespace: ns.name, name: 'd1-disk' })).rejects.toSatisfy(isNotFound);
  });

  it.runIf(backend === 'fake')('retries a reconcile whose status write fails, and binds the disk in the end (fault injected on the fake)', async () => {
    const failing = fake!.inject({ subresource: 'status', kind: 'HardDisk', times: 2 }, { error: 'InternalError' });
    const failed = tm.waitForReconcile({ namespace: ns.name, name: 'flaky' }, { results: ['error'] });
    await client.create(disk('flaky', '5Gi'));
    const retried = await failed;
    expect(retried.result).toBe('error');
    await eventually(async () => expect((await getDisk('flaky')).status?.phase).toBe('Bound'), { timeoutMs: 15_000 });
    expect(failing.hits).toBe(2);
  });
});
