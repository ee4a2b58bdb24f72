/**
 * Every command README.md, docs/*.md and the scaffold's README tell users to
 * run has a place where a test runs it exactly as written: the registry e2e's
 * walkthrough of a new project (test/e2e/registry-docs.test.ts), or another test
 * named in test/support/doc-commands.ts, or a reason it cannot run on a test
 * machine (no container runtime). A command added to a doc without one fails
 * here; an entry whose command left the docs fails too.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONG_RUNNING, NOT_IN_WALKTHROUGH, WALKTHROUGH_FILES, commandsOf, documentedCommands } from './support/doc-commands.js';

const root = join(import.meta.dirname, '..');
const commands = documentedCommands(root);

describe('the documented commands', () => {
  it('are found in the docs (code blocks, comments and continuations resolved)', () => {
    expect(commands.length).toBeGreaterThan(30);
    expect(commandsOf('x.md', ['```sh', "pnpm build   # tsc → dist/", "curl -s '127.0.0.1:8081/readyz?verbose'  # a #hash", 'kubeloop generate rbac --name demo \\', '  --check', '```', '```ts', 'not.a(command)', '```'].join('\n'))).toEqual([
      { file: 'x.md', line: 2, text: 'pnpm build', block: 0 },
      { file: 'x.md', line: 3, text: "curl -s '127.0.0.1:8081/readyz?verbose'", block: 0 },
      { file: 'x.md', line: 4, text: 'kubeloop generate rbac --name demo --check', block: 0 },
    ]);
  });

  it('each run by a test, or said why not', () => {
    const walked = new Set<string>(WALKTHROUGH_FILES);
    const unaccounted = commands.filter((c) => !walked.has(c.file) && !(c.text in NOT_IN_WALKTHROUGH)).map((c) => `${c.file}:${c.line}: ${c.text}`);
    expect(unaccounted).toEqual([]);
    const texts = new Set(commands.map((c) => c.text));
    expect(Object.keys(NOT_IN_WALKTHROUGH).filter((t) => !texts.has(t))).toEqual([]);
    expect(Object.keys(LONG_RUNNING).filter((t) => !texts.has(t))).toEqual([]);
  });
});
