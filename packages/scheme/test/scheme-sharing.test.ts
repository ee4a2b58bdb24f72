/**
 * The seed scenario, as JS can have it. In Go, client constructors that call
 * AddToScheme on the shared global scheme while others read it crash the
 * process. Here a thousand async tasks interleave across awaits: consumers
 * build lookup views of one shared scheme and read from it, while others
 * register into builders, into one shared builder, and extend the shared
 * scheme. Nothing may throw, every reader must see the same scheme every
 * time, and the shared scheme must serialise byte for byte as before.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { builtinScheme, createSchemeBuilder, formatGroupVersionKind, isSchemeError } from '../src/index.js';
import type { ResourceDescriptor, Scheme } from '../src/index.js';
import { HardDisk, generatedKind } from './fixtures.js';

const TASKS = 1000;

/** A different interleaving per task: microtask hops, macrotask hops, or both. */
async function yieldTurn(task: number, step: number): Promise<void> {
  const hops = (task * 7 + step * 3) % 5;
  for (let i = 0; i < hops; i += 1) await Promise.resolve();
  if ((task + step) % 3 === 0) await nextMacrotask();
}

/** What a client constructor does with a scheme: read it into its own lookup view. */
function buildView(scheme: Scheme): Map<string, ResourceDescriptor> {
  const view = new Map<string, ResourceDescriptor>();
  for (const gvk of scheme.kinds()) {
    const d = scheme.lookup(gvk);
    if (d === undefined) throw new Error(`kinds() lists ${formatGroupVersionKind(gvk)} but lookup() misses it`);
    view.set(formatGroupVersionKind(gvk), d);
  }
  return view;
}

const samples = [
  { apiVersion: 'v1', kind: 'Pod' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' },
  { apiVersion: 'crd-demo.io/v1', kind: 'HardDiskList' },
  { apiVersion: 'gen.example.com/v1', kind: 'Widget1' },
];

describe('a shared scheme under concurrent construction, reads and registration', () => {
  it('never changes, and every reader sees the same scheme', async () => {
    const shared = builtinScheme.extend(HardDisk);
    const serialised = JSON.stringify(shared);
    const expectedKinds = shared.kinds().map(formatGroupVersionKind).join(',');
    const sharedBuilder = createSchemeBuilder().include(shared);
    const frozenBuilder = createSchemeBuilder().include(shared).freeze();

    const readerViews: string[] = [];
    const readerAnswers: string[] = [];
    const snapshotSizes: number[][] = [];
    const extendedSchemes: Scheme[] = [];
    let frozenRefusals = 0;

    async function consumer(task: number): Promise<void> {
      const view = buildView(shared);
      await yieldTurn(task, 0);
      const answers = samples.map((obj) => `${shared.recognize(obj)?.kind ?? '-'}/${shared.recognizeList(obj)?.kind ?? '-'}`).join(',');
      await yieldTurn(task, 1);
      const again = buildView(shared);
      if ([...again.keys()].join(',') !== [...view.keys()].join(',')) throw new Error(`task ${task}: the scheme changed under a reader`);
      readerViews.push([...view.keys()].join(','));
      readerAnswers.push(answers);
    }

    async function registrar(task: number): Promise<void> {
      const builder = createSchemeBuilder().include(shared);
      await yieldTurn(task, 0);
      builder.register(generatedKind(task), HardDisk);
      await yieldTurn(task, 1);
      const mine = builder.build();
      if (mine.lookup(generatedKind(task)) === undefined || mine.size !== shared.size + 1) throw new Error(`task ${task}: own registration lost`);
    }

    async function extender(task: number): Promise<void> {
      let scheme = shared;
      for (let step = 0; step < 3; step += 1) {
        await yieldTurn(task, step);
        scheme = scheme.extend(generatedKind(task, `v${step + 1}`));
      }
      extendedSchemes.push(scheme);
    }

    async function sharedBuilderUser(task: number): Promise<void> {
      // A snapshot taken before the awaits must not move while others register into the builder.
      const snapshot = sharedBuilder.build();
      const sizeBefore = snapshot.size;
      sharedBuilder.register(HardDisk); // idempotent: already there
      await yieldTurn(task, 0);
      sharedBuilder.register(generatedKind(task));
      await yieldTurn(task, 1);
      try {
        frozenBuilder.register(generatedKind(task));
      } catch (err) {
        if (!isSchemeError(err) || err.reason !== 'Frozen') throw err;
        frozenRefusals += 1;
      }
      snapshotSizes.push([sizeBefore, snapshot.size]);
    }

    const roles = [consumer, registrar, extender, sharedBuilderUser];
    const results = await Promise.allSettled(Array.from({ length: TASKS }, (_, task) => roles[task % roles.length]!(task)));

    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => String(r.reason));
    expect(failures).toEqual([]);

    // Every reader saw the same kinds and the same answers.
    expect(readerViews).toHaveLength(TASKS / 4);
    expect(new Set(readerViews)).toEqual(new Set([expectedKinds]));
    expect(new Set(readerAnswers)).toEqual(new Set(['Pod/-,Deployment/-,HardDisk/-,-/HardDisk,-/-']));

    // Snapshots of the shared builder did not move while it kept changing.
    expect(snapshotSizes).toHaveLength(TASKS / 4);
    expect(snapshotSizes.every(([before, after]) => before === after)).toBe(true);
    expect(frozenRefusals).toBe(TASKS / 4);
    expect(frozenBuilder.build().size).toBe(shared.size);

    // What others registered is in their schemes, not in the shared one.
    expect(extendedSchemes).toHaveLength(TASKS / 4);
    expect(extendedSchemes.every((s) => s.size === shared.size + 3)).toBe(true);
    expect(sharedBuilder.build().size).toBe(shared.size + TASKS / 4);
    for (let task = 0; task < TASKS; task += 1) expect(shared.lookup(generatedKind(task))).toBeUndefined();
    expect(JSON.stringify(shared)).toBe(serialised);
    expect(shared.kinds().map(formatGroupVersionKind).join(',')).toBe(expectedKinds);
  });
});
