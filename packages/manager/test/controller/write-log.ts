/**
 * The fencing tests' record of who wrote what, read from the API server:
 * numbered ConfigMaps a reconcile annotates with its writer, the time its
 * reconcile started and the round of data it saw; a watch of them keeps
 * each new write in the order the server committed it, and `lateWrites`
 * names every write that landed after another member's write of a
 * reconcile that started later (what a fence must prevent).
 */
import { mergePatch } from '@kubeloop/client';
import type { Client, WatchEvent } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';

export const WRITER = 'fencing.kubeloop.dev/writer';
export const STARTED = 'fencing.kubeloop.dev/started';
export const ROUND = 'fencing.kubeloop.dev/round';

export interface Write {
  readonly name: string;
  readonly writer: string;
  /** When the reconcile that wrote it started (epoch ms; one machine, one clock). */
  readonly started: number;
  readonly round: string;
}

export interface WriteLog {
  /** Every write seen, in commit order. */
  readonly writes: readonly Write[];
  /** Objects whose last write is of `round`. */
  written(round: string): Promise<number>;
  /** Give every object `round` as its data (what the reconciles then write back). */
  touchAll(round: string): Promise<unknown>;
  /** Writes that landed after another member's write of a reconcile that started later. */
  lateWrites(): string[];
  stop(): void;
}

/** Create `objects` ConfigMaps `cm-0`... (round 1) in `ns` and watch their writes. */
export async function startWriteLog(admin: Client, ns: string, objects: number): Promise<WriteLog> {
  const writes: Write[] = [];
  const watching = new AbortController();
  await Promise.all(Array.from({ length: objects }, (_, i) => admin.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns }, data: { round: '1' } })));
  const list = await admin.list(ConfigMap, { namespace: ns });
  const events = await admin.watch(ConfigMap, { namespace: ns, resourceVersion: list.metadata!.resourceVersion!, signal: watching.signal });
  void (async () => {
    try {
      for await (const e of events as AsyncIterable<WatchEvent<ConfigMap>>) {
        const a = e.object.metadata?.annotations;
        if (e.type !== 'MODIFIED' || !a?.[WRITER]) continue;
        const last = writes.findLast((w) => w.name === e.object.metadata!.name);
        if (last && last.writer === a[WRITER] && String(last.started) === a[STARTED]) continue; // not a new write of the annotations
        writes.push({ name: e.object.metadata!.name!, writer: a[WRITER], started: Number(a[STARTED]), round: a[ROUND] ?? '' });
      }
    } catch {
      /* stopped */
    }
  })();
  return {
    writes,
    async written(round) {
      const items = (await admin.list(ConfigMap, { namespace: ns })).items;
      return items.filter((c) => c.metadata?.name?.startsWith('cm-') && c.metadata.annotations?.[ROUND] === round).length;
    },
    touchAll: (round) => Promise.all(Array.from({ length: objects }, (_, i) => admin.patch(ConfigMap, { namespace: ns, name: `cm-${i}` }, mergePatch({ data: { round } })))),
    lateWrites() {
      const late: string[] = [];
      const byName = new Map<string, Write[]>();
      for (const w of writes) byName.set(w.name, [...(byName.get(w.name) ?? []), w]);
      for (const [name, list] of byName)
        list.forEach((w, i) => {
          const newer = list.slice(0, i).find((earlier) => earlier.writer !== w.writer && earlier.started > w.started);
          if (newer) late.push(`${name}: ${w.writer}'s write (round ${w.round}, reconcile started ${w.started}) landed after ${newer.writer}'s (round ${newer.round}, started ${newer.started})`);
        });
      return late;
    },
    stop: () => watching.abort(),
  };
}
