/**
 * Sources on a real informer cache: a kind source enqueues the initial list
 * at low priority and later changes at normal priority, maps and filters
 * each event, contains errors of user callbacks, says why it is waiting;
 * an Observable source delivers single requests and batches.
 */
import { Subject } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInformerCache } from '@kubeloop/cache';
import type { InformerCache } from '@kubeloop/cache';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap, defineKind } from '@kubeloop/scheme';
import { LOW_PRIORITY } from '@kubeloop/workqueue';
import { enqueueMapped, enqueueObject, kindSource, observableSource } from '../../src/index.js';
import type { Request } from '../../src/index.js';
import type { SourceContext } from '../../src/internal-api.js';
import { eventually, newNamespace, testClient } from '../support.js';

let client: Client;
let ns: string;
let cache: InformerCache;

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'source');
  cache = createInformerCache({ client, namespaces: [ns] });
});
afterAll(async () => {
  await cache.stop();
  client.transport.close();
});

/** A context that records what a source enqueues and the errors it reports. */
function recorder(signal: AbortSignal): { context: SourceContext; queued: [string, number][]; errors: string[] } {
  const queued: [string, number][] = [];
  const errors: string[] = [];
  return {
    queued,
    errors,
    context: {
      cache,
      signal,
      enqueue: (r: Request, priority = 0) => queued.push([r.name, priority]),
      onError: (err, where) => errors.push(`${where}: ${err instanceof Error ? err.message : String(err)}`),
    },
  };
}

describe('kindSource', () => {
  it('enqueues the initial list at low priority, later changes at normal priority, and resolves once synced', async () => {
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before-start', namespace: ns } });
    const ac = new AbortController();
    const { context, queued } = recorder(ac.signal);
    await kindSource(ConfigMap, enqueueObject()).start(context);
    expect(queued.filter(([name]) => name === 'before-start')).toEqual([['before-start', LOW_PRIORITY]]);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-start', namespace: ns } });
    await client.patch(ConfigMap, { namespace: ns, name: 'before-start' }, mergePatch({ data: { edited: 'yes' } }));
    await eventually(() => queued.length, (n) => n >= 3, 'the add and the update');
    expect(queued).toContainEqual(['after-start', 0]);
    expect(queued.filter(([name]) => name === 'before-start')).toEqual([['before-start', LOW_PRIORITY], ['before-start', 0]]);
    ac.abort();
  });

  it('applies predicates and the handler, and contains what they throw', async () => {
    const ac = new AbortController();
    const { context, queued, errors } = recorder(ac.signal);
    const source = kindSource(
      ConfigMap,
      enqueueMapped((obj) => {
        if (obj.metadata?.name === 'map-throws') throw new Error('bad map');
        return [{ namespace: ns, name: `mapped-${obj.metadata?.name ?? ''}` }];
      }),
      [
        (e) => {
          if (e.object.metadata?.name === 'predicate-throws') throw new Error('bad predicate');
          return e.object.metadata?.name !== 'filtered-out';
        },
      ],
    );
    await source.start(context);
    for (const name of ['predicate-throws', 'map-throws', 'filtered-out', 'kept']) {
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
    }
    await eventually(() => queued.map(([n]) => n), (names) => names.includes('mapped-kept'), 'the kept object');
    expect(queued.map(([n]) => n)).not.toContain('mapped-filtered-out');
    expect(errors).toEqual([`add event of ${ns}/predicate-throws: bad predicate`, `add event of ${ns}/map-throws: bad map`]);
    ac.abort();
  });

  it('says why it waits: the informer error of a kind that is not served', async () => {
    const Missing = defineKind({ group: 'nowhere.example.com', version: 'v1', kind: 'Missing', plural: 'missings', namespaced: true });
    const source = kindSource(Missing, enqueueObject());
    const ac = new AbortController();
    const started = source.start(recorder(ac.signal).context).catch(() => undefined);
    const reason = await eventually(() => source.waitingReason?.(cache), (r) => r !== undefined, 'a waiting reason');
    expect(reason).toMatch(/Missing|nowhere\.example\.com|no matches/i);
    ac.abort();
    await started;
  });
});

describe('observableSource', () => {
  it('delivers single requests and batches; an error is reported once', async () => {
    const ac = new AbortController();
    const { context, queued, errors } = recorder(ac.signal);
    const subject = new Subject<Request | readonly Request[]>();
    await observableSource(subject, 'feed').start(context);
    subject.next({ namespace: ns, name: 'one' });
    subject.next([{ namespace: ns, name: 'two' }, { namespace: ns, name: 'three' }]);
    subject.error(new Error('feed down'));
    expect(queued).toEqual([['one', 0], ['two', 0], ['three', 0]]);
    expect(errors).toEqual(['feed: feed down']);
    ac.abort();
  });
});
