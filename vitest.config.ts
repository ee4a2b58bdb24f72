import { configDefaults, defineConfig } from 'vitest/config';
import { ISOLATED_FILES, SERIAL_FILES, StartLongFilesFirst, testWorkers } from './test/support/schedule.js';

// Workspace packages resolve to their TypeScript sources in tests (the
// `@kubeloop/source` export condition), so tests never run stale builds.
const conditions = ['@kubeloop/source', 'module', 'node', 'development|production'];

const include = ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'examples/*/test/**/*.test.ts'];

// Groups of test files (test/support/schedule.ts says which and why):
// - `parallel`: most files, several at a time (they mostly wait on the control plane and on child
//   processes), the longest first so the registry walk overlaps everything else. Each worker process
//   runs its files one after another with the modules already loaded (`isolate: false`): a fresh
//   module graph per file (@kubernetes/client-node alone is about a second of CPU to load) cost a
//   quarter of these files' CPU;
// - `isolated`: the few files that replace a module (`vi.mock`), each in a fresh process, beside them;
// - `serial`: the few files that measure a deadline against the wall clock (kubelet's 1 s probe
//   timeout, lease hand-over), one at a time after the parallel group, on a machine the other files
//   no longer load.
// `pnpm exec vitest run --project serial` (or `--project parallel`, `--project isolated`) runs one group.
export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    // One real control plane for the whole run (both groups); tests that need their own
    // (fault injection, start failures) create it themselves. With KUBELOOP_E2E_REGISTRY=1, a
    // registry every public package is published to once, in the background, for the registry walk.
    globalSetup: ['./test/support/global-setup.ts', './test/support/registry-setup.ts'],
    // With KUBELOOP_FILE_CPU (scripts/test.sh), each file's CPU, its own and its children's, for the summary.
    setupFiles: ['./test/support/file-cpu.ts'],
    pool: 'forks',
    // Generous: tests wait for conditions, and several files at once on 2 cores make every step slower.
    testTimeout: 180_000,
    hookTimeout: 240_000,
    sequence: { sequencer: StartLongFilesFirst },
    projects: [
      {
        extends: true,
        test: {
          name: 'parallel',
          include,
          exclude: [...configDefaults.exclude, ...SERIAL_FILES, ...ISOLATED_FILES],
          maxWorkers: testWorkers(),
          // KUBELOOP_TEST_ISOLATE=1: a fresh process and module graph for every file, as vitest's default, to tell
          // whether a failure comes from what an earlier file in the same worker left behind.
          isolate: process.env['KUBELOOP_TEST_ISOLATE'] === '1',
          sequence: { groupOrder: 0 },
          typecheck: {
            enabled: true,
            include: ['packages/*/test/**/*.test-d.ts', 'test/**/*.test-d.ts'],
            // The type tests alone (the whole test project is `pnpm typecheck`'s): vitest runs them after every other group.
            tsconfig: './test/tsconfig.types.json',
          },
        },
      },
      {
        extends: true,
        test: {
          name: 'isolated',
          include: [...ISOLATED_FILES],
          maxWorkers: testWorkers(),
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'serial',
          include: [...SERIAL_FILES],
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
