/** What the narrowing stages (filter, shard) do to what comes back: stages/scope.ts. */
import { describe, expect, it } from 'vitest';
import type { WatchEvent } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import { eventsInScope, pageInScope } from '../src/stages/scope.js';

const obj = (name: string, rv: string, keep: boolean): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, resourceVersion: rv, labels: { keep: String(keep) } } });
const keep = (o: KubeObject): boolean => o.metadata?.labels?.['keep'] === 'true';

async function* stream(events: WatchEvent<KubeObject>[]): AsyncIterableIterator<WatchEvent<KubeObject>> {
  yield* events;
}

async function collect(events: AsyncIterableIterator<WatchEvent<KubeObject>>): Promise<string[]> {
  const out: string[] = [];
  for await (const e of events) out.push(`${e.type} ${e.object.metadata?.name ?? '-'} ${e.object.metadata?.resourceVersion ?? ''}`);
  return out;
}

describe('stages narrowing a kind', () => {
  it('a list page keeps what is in scope, and objects without metadata for the reflector to report', () => {
    const page = { apiVersion: 'v1', kind: 'ConfigMapList', metadata: {}, items: [obj('a', '1', true), obj('b', '2', false), { kind: 'junk' } as KubeObject] };
    expect(pageInScope(page, keep).items.map((o) => o.metadata?.name ?? 'junk')).toEqual(['a', 'junk']);
    const all = { ...page, items: [obj('a', '1', true)] };
    expect(pageInScope(all, keep)).toBe(all);
  });

  it('a streaming list drops its initial events out of scope; after its end, an ADDED out of scope is a bookmark, a MODIFIED a DELETED', async () => {
    let dropped = 0;
    const events: WatchEvent<KubeObject>[] = [
      { type: 'ADDED', object: obj('in', '1', true) },
      { type: 'ADDED', object: obj('out', '2', false) },
      { type: 'BOOKMARK', object: { metadata: { resourceVersion: '3', annotations: { 'k8s.io/initial-events-end': 'true' } } } },
      { type: 'ADDED', object: obj('late', '4', false) },
      { type: 'MODIFIED', object: obj('in', '5', false) },
      { type: 'DELETED', object: obj('gone', '6', false) },
    ];
    expect(await collect(eventsInScope(stream(events), keep, true, () => dropped++))).toEqual(['ADDED in 1', 'BOOKMARK - 3', 'BOOKMARK - 4', 'DELETED in 5', 'DELETED gone 6']);
    expect(dropped).toBe(1);
    // Not streaming: the first out-of-scope ADDED is a bookmark as well.
    expect(await collect(eventsInScope(stream(events.slice(0, 2)), keep, false))).toEqual(['ADDED in 1', 'BOOKMARK - 2']);
  });
});
