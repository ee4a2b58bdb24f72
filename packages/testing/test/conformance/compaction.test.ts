/**
 * Conformance: 410 Expired after a compaction. On envtest this needs its own
 * control plane with the watch cache off (watches and lists then come from
 * etcd, whose compaction is what forgets history); on the fake,
 * `fake.compact()`.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isGone } from '@kubeloop/client';
import { watchEventError } from '@kubeloop/client/internal';
import type { Client, WatchEvent } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createFakeApiServer } from '../../src/index.js';
import type { FakeApiServer } from '../../src/index.js';
import { BACKENDS } from './backends.js';
import { configMap, failure } from './support.js';
import { uniqueName } from '../../../../test/support/env.js';

const run = promisify(execFile);

async function compactEtcd(env: Environment): Promise<void> {
  const endpoint = env.etcdUrl;
  const etcdctl = env.binaries?.etcdctl;
  if (!endpoint) throw new Error('compaction needs a local control plane');
  if (etcdctl) {
    const { stdout } = await run(etcdctl, ['--endpoints', endpoint, 'endpoint', 'status', '-w', 'json']);
    const revision = (JSON.parse(stdout) as { Status?: { header?: { revision?: number } } }[])[0]?.Status?.header?.revision;
    if (!revision) throw new Error(`etcdctl endpoint status gave no revision: ${stdout}`);
    // compacting at a revision already compacted (nothing written since) is fine
    await run(etcdctl, ['--endpoints', endpoint, 'compact', String(revision), '--physical']).catch((err: unknown) => {
      if (!String(err).includes('required revision has been compacted')) throw err;
    });
    return;
  }
  const range = (await (await fetch(`${endpoint}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) })).json()) as { header: { revision: string } };
  const res = await fetch(`${endpoint}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: range.header.revision, physical: true }) });
  if (res.status !== 200) throw new Error(`etcd compaction failed: ${res.status}`);
}

/** The 410 a watch from `resourceVersion` ends with: an HTTP error or an ERROR event. */
async function watchGone(client: Client, namespace: string, resourceVersion: string): Promise<unknown> {
  try {
    const events = await client.watch(ConfigMap, { namespace, resourceVersion });
    const first: IteratorResult<WatchEvent<ConfigMap>, undefined> = await events.next();
    await events.return?.();
    if (first.done) return new Error('the watch ended without an event');
    return first.value.type === 'ERROR' ? watchEventError(first.value) : new Error(`first event: ${first.value.type}`);
  } catch (err) {
    return err;
  }
}

describe.each(BACKENDS)('compaction ($backend)', ({ backend }) => {
  let env: Environment | undefined;
  let fake: FakeApiServer | undefined;
  let client: Client;
  let compact: () => Promise<void>;
  let namespace: string;

  beforeAll(async () => {
    if (backend === 'envtest') {
      const e = createEnvironment({ apiServerFlags: { 'watch-cache': 'false' } });
      env = e;
      await e.start();
      client = createClient({ kubeConfig: e.kubeConfig, fieldOwner: 'conformance', transportOptions: { qps: 0 } });
      compact = () => compactEtcd(e);
    } else {
      const f = createFakeApiServer();
      fake = f;
      client = f.client({ fieldOwner: 'conformance' });
      compact = async () => {
        f.compact();
      };
    }
    namespace = uniqueName('compact');
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  });
  afterAll(async () => {
    await fake?.close();
    await env?.stop();
  });

  it('a watch from a resourceVersion before the compaction gets 410 Expired', async () => {
    const old = await client.create(configMap(namespace, uniqueName('cm')));
    await client.create(configMap(namespace, uniqueName('cm')));
    await client.create(configMap(namespace, uniqueName('cm')));
    await compact();
    const err = await watchGone(client, namespace, old.metadata.resourceVersion!);
    expect(isGone(err), String(err)).toBe(true);
  });

  it('a continue token from before the compaction is 410 Expired', async () => {
    for (let i = 0; i < 3; i++) await client.create(configMap(namespace, uniqueName('page')));
    const first = await client.list(ConfigMap, { namespace, limit: 1 });
    await client.create(configMap(namespace, uniqueName('later')));
    await compact();
    const err = await failure(client.list(ConfigMap, { namespace, limit: 1, continue: first.metadata!.continue! }));
    expect(err.code).toBe(410);
    expect(isGone(err)).toBe(true);
  });

  it('an exact list at a compacted resourceVersion is 410 Expired', async () => {
    const old = await client.create(configMap(namespace, uniqueName('cm')));
    await client.create(configMap(namespace, uniqueName('cm')));
    await compact();
    const err = await failure(client.list(ConfigMap, { namespace, resourceVersion: old.metadata.resourceVersion!, resourceVersionMatch: 'Exact' }));
    expect(isGone(err)).toBe(true);
  });

  it('a watch from the current resourceVersion after a compaction works', async () => {
    await compact();
    const list = await client.list(ConfigMap, { namespace });
    const events = await client.watch(ConfigMap, { namespace, resourceVersion: list.metadata!.resourceVersion! });
    const name = uniqueName('fresh');
    await client.create(configMap(namespace, name));
    const next: IteratorResult<WatchEvent<ConfigMap>, undefined> = await events.next();
    await events.return?.();
    expect(next.value?.type).toBe('ADDED');
    expect(next.value?.object.metadata?.name).toBe(name);
  });
});
