/**
 * How vitest.config.ts schedules the test files: which run one at a time
 * (SERIAL_FILES), how many of the rest run side by side (testWorkers), and
 * in what order they start (StartLongFilesFirst: the longest first, so the
 * registry walk and the files that wait minutes on the control plane overlap
 * everything else instead of ending the run alone).
 */
import { relative } from 'node:path';
import { BaseSequencer } from 'vitest/node';
import type { TestSpecification } from 'vitest/node';

/**
 * Files that measure a deadline against the wall clock and cannot say the
 * same thing with a wider bound, or that change what other files use: they
 * run one at a time, after the parallel group, when nothing else loads the
 * machine. Each entry says why. Keep this list short: its files add their
 * whole time to the run's.
 */
export const SERIAL_FILES: readonly string[] = [
  // Probes from a kubelet (1 s timeout, a new connection each) answered while 200 slow connections or a
  // reconnecting flood of 300 hold the server, attacker and server in one process.
  'packages/manager/test/server/http-servers.test.ts',
  // Lease hand-over and renew-deadline timing of real leader election (bounds in lease durations).
  'packages/leaderelection/test/leader-elector.test.ts',
  'packages/manager/test/leader-loss.test.ts',
  // `bash scripts/dev.sh` as the README has it: its bootstrap runs `pnpm install` and `pnpm build` in this
  // checkout (rewriting the example's bundle other files start) and the operator binds 127.0.0.1:8080 and :8081.
  'test/e2e/readme-commands.test.ts',
  // The sharded example files (paused.test.ts, sharded.test.ts) ran here for a while: beside the other heavy files
  // they left disks unreconciled for minutes. They were stalled, not starved: a renewal answered past the renew
  // deadline left buckets worked on under fences revoked in the lapse, their keys passed over (fixed in
  // @kubeloop/leaderelection, packages/leaderelection/test/fencing.test.ts); six runs of the four heaviest files side
  // by side since, 0 stalls, so they run in the parallel group again.
];

/**
 * Files that need modules of their own: the parallel group runs each worker's
 * files one after another in one process with the modules they loaded
 * (vitest's `isolate: false`: no fresh module graph, no @kubernetes/client-node
 * loaded again, for every file), so a file that replaces a module with
 * `vi.mock` would see the module another file loaded first. These run as
 * their own group, each in a fresh process, beside the parallel group.
 */
export const ISOLATED_FILES: readonly string[] = [
  // vi.mock of @kubeloop/client's fnv1a64, counting the hashes the cache and the controller make.
  'packages/cache/test/shard-hash.test.ts',
  'packages/manager/test/controller/sharded-hot-path.test.ts',
];

/**
 * Seconds each of the slowest files took in a fresh-clone run (2 cores, one
 * file at a time, `.tmp/vitest.json`; the registry walk's two files as split
 * since): the start order on a machine with no vitest results cache yet.
 * Files not listed start after these, in vitest's order (longest cached
 * duration first, else largest file first).
 */
const SECONDS: Readonly<Record<string, number>> = {
  // The registry walk (315 s as one file): each waits for the packages registry-setup.ts publishes (30 s), then
  // installs, builds, tests and runs a project of its own: minutes of child processes.
  'test/e2e/registry-docs.test.ts': 190,
  'test/e2e/registry.test.ts': 155,
  'examples/harddisk-operator/test/main.test.ts': 68,
  'packages/manager/test/fleet/secret-provider.test.ts': 61,
  'packages/cache/test/faults.test.ts': 58,
  'examples/harddisk-operator/test/rbac.test.ts': 54,
  'packages/cli/test/dev-webhooks.test.ts': 49,
  'packages/manager/test/crd-lifecycle.test.ts': 44,
  'packages/cli/test/scaffold-sharding.test.ts': 42,
  'packages/cache/test/informer-cache.test.ts': 42,
  'packages/manager/test/fleet/fleet.test.ts': 41,
  'packages/cli/test/dev.test.ts': 39,
  'examples/harddisk-operator/test/paused.test.ts': 38,
  'test/profiles.test.ts': 38,
  'packages/webhook/test/rotation-apiserver.test.ts': 34,
  'packages/manager/test/memory-reducer.test.ts': 30,
  'examples/harddisk-operator/test/operator.test.ts': 29,
  'examples/harddisk-operator/test/sharded.test.ts': 29,
  'packages/envtest/test/cli.test.ts': 20,
  'packages/manager/test/controller/triggers.test.ts': 20,
  'packages/client/test/watch.test.ts': 18,
  'packages/cli/test/scaffold-webhooks.test.ts': 17,
  'packages/envtest/test/reaper.test.ts': 16,
  'packages/envtest/test/environment.test.ts': 15,
  'packages/testing/test/conformance/negotiation.test.ts': 14,
  'packages/manager/test/controller/fencing.test.ts': 14,
};

/** Files side by side in the parallel group: KUBELOOP_TEST_WORKERS, else 4 (most files wait on I/O, not on the 2 cores). */
export function testWorkers(): number {
  const asked = process.env['KUBELOOP_TEST_WORKERS'];
  if (asked === undefined || asked === '') return 4;
  const n = Number(asked);
  if (!Number.isInteger(n) || n < 1) throw new Error(`KUBELOOP_TEST_WORKERS must be a whole number of test files to run at once (1 or more), not ${JSON.stringify(asked)}`);
  return n;
}

/**
 * vitest's order, then the longest files first within each group: the
 * duration vitest cached from an earlier run here, else SECONDS. With several
 * workers, a long file started last would run alone at the end.
 */
export class StartLongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const weight = (spec: TestSpecification): number => {
      const cached = this.ctx.cache.getTestSpecificationResult(spec)?.duration;
      if (typeof cached === 'number' && cached > 0) return cached;
      return (SECONDS[relative(spec.project.config.root, spec.moduleId)] ?? 0) * 1000;
    };
    const keyed = sorted.map((spec, index) => ({ spec, index, group: spec.project.config.sequence.groupOrder, weight: weight(spec) }));
    keyed.sort((a, b) => a.group - b.group || b.weight - a.weight || a.index - b.index);
    return keyed.map((k) => k.spec);
  }
}
