/**
 * A controller of the manager's own cluster as a registry entry: one
 * `Controller`, its workers in the leader-only group (or the others, when it
 * needs no leadership) and, on a warm standby, its sources in the caches
 * group for the manager's life.
 */
import type { KindRef } from '@kubeloop/client';
import type { RunnableEntry, RunnableGroup } from '../runnable-groups.js';
import type { ControllerDefinition } from './builder.js';
import type { Controller, ControllerStatus } from './controller.js';
import type { ControllerEntry } from './registry.js';

/** The groups a manager's controller runs in. */
export interface HostGroups {
  /** Sources of warm leader-only controllers, for the manager's life. */
  readonly caches: RunnableGroup;
  readonly others: RunnableGroup;
  readonly leaderOnly: RunnableGroup;
}

/** Put `controller` into the manager's groups (its sources warm on a standby when `warm`) and describe it as a registry entry. */
export function hostControllerEntry(controller: Controller, definition: ControllerDefinition, groups: HostGroups, warmDefault: boolean): ControllerEntry {
  const name = controller.name;
  const runs: { readonly group: RunnableGroup; readonly entry: RunnableEntry }[] = [];
  const warm = controller.needLeaderElection && (definition.options?.warmStandby ?? warmDefault);
  if (warm) {
    // The sources run for the manager's life; the workers only while leading.
    runs.push({ group: groups.caches, entry: { run: (s) => controller.warmup(s).then(() => untilAborted(s)), name: `controller ${name} (sources)` } });
  }
  runs.push({ group: controller.needLeaderElection ? groups.leaderOnly : groups.others, entry: { run: (s) => controller.start(s), name: `controller ${name}` } });
  for (const { group, entry } of runs) group.add(entry);
  return {
    name,
    warm,
    definition,
    status: (): ControllerStatus => controller.status(),
    instances: () => [controller],
    pause: () => controller.pause(),
    resume: () => controller.resume(),
    hostKinds: (): readonly KindRef[] => controller.kinds(),
    async stop(reason) {
      // Workers first (a reconcile in flight finishes), then the sources.
      for (const { group, entry } of [...runs].reverse()) await group.remove(entry, reason);
    },
  };
}

/** Resolves when `signal` aborts. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
