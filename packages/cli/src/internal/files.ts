/** Writing generated files, or checking them: the comparison and the unified diff `--check` prints. */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { createTwoFilesPatch } from 'diff';

/** One generated file: its path and its whole text. */
export interface GeneratedFile {
  /** Where it goes, relative to the output directory. */
  readonly path: string;
  /** Its whole text. */
  readonly text: string;
}

/** What a write or a check found. */
export interface FileReport {
  /** Files written (write mode) or that would change (check mode). */
  readonly changed: readonly string[];
  /** Files already up to date. */
  readonly unchanged: readonly string[];
  /** Files generated earlier (they carry the marker) that nothing generates now. */
  readonly orphaned: readonly string[];
  /** Unified diffs of every changed or orphaned file (check mode). */
  readonly diff: string;
}

async function readOrUndefined(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Files in `dir` (not recursive) whose first line carries `marker`. */
async function markedFiles(dir: string, marker: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: string[] = [];
  for (const name of names.sort()) {
    const text = await readOrUndefined(join(dir, name)).catch(() => undefined);
    if (text?.split('\n', 1)[0]?.includes(marker)) out.push(join(dir, name));
  }
  return out;
}

/**
 * Writes the files (check: false) or compares them with what is on disk
 * (check: true). Files in `dir` whose first line carries `marker` but that
 * nothing generates any more are orphans: in check mode they make the
 * result stale (their removal is in the diff); in write mode they are
 * reported and left alone, since deleting files is the user's call.
 */
export async function syncFiles(files: readonly GeneratedFile[], options: { check: boolean; dir: string; marker: string; cwd: string }): Promise<FileReport> {
  const changed: string[] = [];
  const unchanged: string[] = [];
  let diff = '';
  for (const f of files) {
    const current = await readOrUndefined(f.path);
    if (current === f.text) {
      unchanged.push(f.path);
      continue;
    }
    changed.push(f.path);
    const name = relative(options.cwd, f.path);
    if (options.check) diff += createTwoFilesPatch(`a/${name}`, `b/${name}`, current ?? '', f.text, current === undefined ? '(missing)' : '(committed)', '(generated)');
    else {
      await mkdir(options.dir, { recursive: true });
      await writeFile(f.path, f.text);
    }
  }
  const generated = new Set(files.map((f) => f.path));
  const orphaned = (await markedFiles(options.dir, options.marker)).filter((p) => !generated.has(p));
  if (options.check) {
    for (const p of orphaned) {
      const name = relative(options.cwd, p);
      diff += createTwoFilesPatch(`a/${name}`, `b/${name}`, (await readOrUndefined(p)) ?? '', '', '(committed)', '(no longer generated)');
    }
  }
  return { changed, unchanged, orphaned, diff };
}
