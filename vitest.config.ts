import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources in tests (the
// `@kubeloop/source` export condition), so tests never run stale builds.
const conditions = ['@kubeloop/source', 'module', 'node', 'development|production'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
    // One real control plane for the whole run; tests that need their own
    // (fault injection, start failures) create it themselves.
    globalSetup: ['./test/support/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 240_000,
    typecheck: {
      enabled: true,
      include: ['packages/*/test/**/*.test-d.ts', 'test/**/*.test-d.ts'],
      tsconfig: './test/tsconfig.json',
    },
  },
});
