// ESLint flat config: typescript-eslint's type-aware rules over every package,
// its tests and the examples. no-floating-promises and no-misused-promises
// matter most in reconcile loops. The type information comes from one program over every
// linted file (tsconfig.eslint.json, packages resolved to their sources): one program per package
// tsconfig took twice the time and memory (75 s and 4.1 GB against 47 s and 2.1 GB here).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Node builtins whose ES import reads lazy getters (docs/architecture.md, "Builtins"): value imports refused where an operator loads them. */
const builtins = ['node:fs', 'node:fs/promises', 'node:crypto', 'node:util', 'node:net', 'node:http', 'node:child_process', 'node:worker_threads', 'node:zlib'].map((name) => ({
  name,
  allowTypeImports: true,
  message: `an ES import of ${name} loads its lazy parts too: use process.getBuiltinModule('${name}') (docs/architecture.md, "Builtins")`,
}));

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', 'eslint.config.js', 'packages/*/.tmp-*/**', 'bench/.tmp-*/**', 'test/.tmp-*/**', 'packages/create-kubeloop/templates/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        project: ['./tsconfig.eslint.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/internal/*', '!./internal/*', '!../internal/*', '!../src/internal/*', '!../../src/internal/*'], message: 'internal modules are private to their package' }] }],
    },
  },
  {
    // What an operator process loads: node's builtins whose ES namespace reads lazy getters (node:fs's
    // promises, node:crypto's webcrypto, node:http's WebSocket, ...) come through process.getBuiltinModule
    // (docs/architecture.md, "Builtins"); child_process and fs/promises only where used.
    files: ['packages/{cache,client,leaderelection,manager,mapper,pki,scheme,webhook,workqueue}/src/**/*.ts', 'examples/*/src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { paths: builtins }],
    },
  },
  {
    // prom-client's index loads its Pushgateway (node:zlib), Summary and @opentelemetry/api: the
    // packages take its classes from its own files through one module each (src/metrics/prom.ts, src/prom.ts).
    files: ['packages/{manager,webhook}/src/**/*.ts'],
    ignores: ['packages/manager/src/metrics/prom.ts', 'packages/webhook/src/prom.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [...builtins, { name: 'prom-client', allowTypeImports: true, message: "prom-client's index loads what an operator never uses: take its classes from this package's prom module" }],
        },
      ],
    },
  },
  {
    // Plain JavaScript scripts are outside every tsconfig: lint them without types.
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { parserOptions: { project: false, projectService: false }, globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    files: ['**/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
);
