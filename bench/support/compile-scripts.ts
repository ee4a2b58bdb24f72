/**
 * The bench's own child scripts (bench/support/*.ts) compiled to .mjs in a
 * temporary folder under bench/ (so their @kubeloop/* imports resolve to
 * this workspace): run as .ts, node would load its type stripper into them,
 * about 25 MiB an operator never carries.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Compile the named files of bench/support; returns each one's .mjs path by name. Remove `dirname` of any of them when done. */
export function compileScripts(names: readonly string[]): Map<string, string> {
  const dir = mkdtempSync(join(bench, '.tmp-scripts-'));
  const out = new Map<string, string>();
  for (const name of names) {
    const source = readFileSync(join(bench, 'support', name), 'utf8');
    const target = join(dir, name.replace(/\.ts$/, '.mjs'));
    writeFileSync(target, ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 }, fileName: name }).outputText);
    out.set(name, target);
  }
  return out;
}
