// ESLint flat config: typescript-eslint's type-aware rules over every package,
// its tests and the examples. no-floating-promises and no-misused-promises
// matter most in reconcile loops.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', 'eslint.config.js', 'packages/*/.tmp-*/**', 'bench/.tmp-*/**', 'packages/create-kubeloop/templates/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        project: ['./packages/*/tsconfig.json', './examples/*/tsconfig.json', './test/tsconfig.json', './scripts/tsconfig.json'],
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
