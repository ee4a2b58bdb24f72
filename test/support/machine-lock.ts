/**
 * A lock one process on the machine holds at a time, across test files that
 * run side by side and across checkouts: a directory (mkdir is atomic) holding
 * the holder's pid. A waiter polls; a lock whose holder is gone is taken over.
 * The test tools' builds (tool-cache.ts) and the documented fixed ports
 * (fixed-ports.ts) take turns through it.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Options of {@link machineLock}. */
export interface MachineLockOptions {
  /** How often a waiter looks again, ms. Default 1,000. */
  readonly pollMs?: number;
  /** How long to wait before failing with a message naming the holder, ms. Default: no limit. */
  readonly timeoutMs?: number;
  /** What the lock guards, for that message. Default: the lock's path. */
  readonly what?: string;
}

/**
 * Takes the lock at `lockDir` (created with its parents), waiting while
 * another live process holds it; resolves with the function that releases it.
 */
export async function machineLock(lockDir: string, options: MachineLockOptions = {}): Promise<() => Promise<void>> {
  const pollMs = options.pollMs ?? 1_000;
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  await mkdir(dirname(lockDir), { recursive: true });
  for (;;) {
    try {
      await mkdir(lockDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(await readFile(join(lockDir, 'pid'), 'utf8').catch(() => ''));
      // A lock without a pid yet was taken a moment ago; one whose process is gone is stale.
      if (Number.isInteger(holder) && holder > 0 && !alive(holder)) {
        await rm(lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${options.what ?? lockDir}: still held by process ${holder || '(starting)'} after ${options.timeoutMs} ms (lock ${lockDir})`);
      await new Promise((r) => setTimeout(r, pollMs));
      continue;
    }
    await writeFile(join(lockDir, 'pid'), String(process.pid));
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      await rm(lockDir, { recursive: true, force: true });
    };
  }
}
