/**
 * The `ts` blocks of the docs that promise to run as written
 * (docs/day-two.md: "every ts block below is a complete program"): each is
 * type-checked with the workspace's compiler options, as
 * scripts/check-examples.ts checks TSDoc examples, then run, as the module
 * it is, on the fake API server it makes itself. A snippet that no longer
 * compiles, or that throws, fails here with its file and line.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
/** Docs whose every `ts` block is a complete program. */
const RUNNABLE_DOCS = ['docs/day-two.md'];

interface Snippet {
  readonly file: string;
  /** 1-based line of the block's first code line. */
  readonly line: number;
  readonly code: string;
}

/** The ```ts blocks of a markdown text. */
function tsBlocks(file: string, markdown: string): Snippet[] {
  const out: Snippet[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^```ts\s*$/.test(lines[i]!)) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`${file}:${i + 1}: a ts block that never ends`);
    out.push({ file, line: i + 2, code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return out;
}

const snippets = RUNNABLE_DOCS.flatMap((f) => tsBlocks(f, readFileSync(join(root, f), 'utf8')));
// Inside the workspace, so `@kubeloop/*` resolve as in the tests (to the packages' sources).
const dir = join(root, 'test', `.tmp-doc-snippets-${process.pid}`);
mkdirSync(dir, { recursive: true });
const files = snippets.map((s, i) => {
  const path = join(dir, `snippet-${i}.ts`);
  // `export {}` keeps a snippet without imports a module (top-level await).
  writeFileSync(path, `${s.code}\nexport {};\n`);
  return path;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the runnable docs', () => {
  it('have snippets, found as the reader sees them', () => {
    expect(snippets.length).toBeGreaterThanOrEqual(6);
    expect(tsBlocks('x.md', ['text', '```ts', 'const a = 1;', '```', '```sh', 'ls', '```', '```ts', 'const b = 2;', '', '```'].join('\n'))).toEqual([
      { file: 'x.md', line: 3, code: 'const a = 1;' },
      { file: 'x.md', line: 9, code: 'const b = 2;\n' },
    ]);
  });

  it('type-check with the workspace\'s compiler options', () => {
    const config = ts.getParsedCommandLineOfConfigFile(join(root, 'test', 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
    if (!config) throw new Error('test/tsconfig.json cannot be read');
    const program = ts.createProgram(files, { ...config.options, noEmit: true, customConditions: ['@kubeloop/source'] });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file && files.includes(d.file.fileName))
      .map((d) => {
        const i = files.indexOf(d.file!.fileName);
        const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
        return `${snippets[i]!.file}:${snippets[i]!.line + line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n  ')}`;
      });
    expect(problems).toEqual([]);
  }, 600_000); // a whole program from the packages' sources: minutes on a loaded machine

  for (const [i, s] of snippets.entries()) {
    it(`runs ${s.file}:${s.line} as written`, async () => {
      try {
        await import(pathToFileURL(files[i]!).href);
      } catch (err) {
        throw new Error(`${s.file}:${s.line} (${relative(root, files[i]!)}) threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`, { cause: err });
      }
    }, 60_000);
  }
});
