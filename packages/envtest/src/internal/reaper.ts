/**
 * No orphaned control planes. Every running environment leaves a record in a
 * run directory (owner pid, process groups, temp dir) and a tiny shell
 * watchdog that kills those groups as soon as the owner dies; the next start
 * in any process sweeps records whose owner is gone, in case the watchdog was
 * killed too.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../binaries.js';
import { signalGroup } from './process.js';

export interface RunRecord {
  readonly ownerPid: number;
  readonly dir: string;
  readonly pgids: readonly number[];
  readonly watchdogPid?: number;
}

function recordPath(runDir: string, dir: string): string {
  return join(runDir, `${Buffer.from(dir).toString('base64url')}.json`);
}

/** Whether pid's command line mentions `marker` (guards against pid reuse). */
function commandMentions(pid: number, marker: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
  } catch {
    return false;
  }
}

export async function writeRecord(runDir: string, record: RunRecord): Promise<void> {
  await mkdir(runDir, { recursive: true });
  await writeFile(recordPath(runDir, record.dir), JSON.stringify(record));
  // The watchdog reads the groups from here when the owner dies.
  await writeFile(join(record.dir, 'pgids'), record.pgids.join(' '));
}

export async function removeRecord(runDir: string, dir: string): Promise<void> {
  await rm(recordPath(runDir, dir), { force: true });
}

/**
 * Kill the process groups and remove the temp dirs of environments whose
 * owner process is gone. Returns how many were swept.
 */
export async function sweepStale(runDir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(runDir);
  } catch {
    return 0;
  }
  let swept = 0;
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    const path = join(runDir, name);
    let record: RunRecord;
    try {
      record = JSON.parse(await readFile(path, 'utf8')) as RunRecord;
    } catch {
      await rm(path, { force: true });
      continue;
    }
    if (processAlive(record.ownerPid)) continue;
    for (const pgid of record.pgids) {
      if (processAlive(pgid) && commandMentions(pgid, record.dir)) signalGroup(pgid, 'SIGKILL');
    }
    await rm(record.dir, { recursive: true, force: true });
    await rm(path, { force: true });
    swept++;
  }
  return swept;
}

const WATCHDOG = `
owner="$1"; dir="$2"
while kill -0 "$owner" 2>/dev/null; do sleep 1; done
pgids=$(cat "$dir/pgids" 2>/dev/null)
for pg in $pgids; do kill -TERM -"$pg" 2>/dev/null; done
sleep 3
for pg in $pgids; do kill -KILL -"$pg" 2>/dev/null; done
rm -rf "$dir"
`;

/** Start a detached watchdog for `dir`; returns its pid. Kill it on a clean stop. */
export function startWatchdog(ownerPid: number, dir: string): number | undefined {
  const child = spawn('/bin/sh', ['-c', WATCHDOG, 'kubeloop-envtest-watchdog', String(ownerPid), dir], {
    detached: true,
    stdio: 'ignore',
  });
  child.on('error', () => undefined); // no /bin/sh: the sweep still covers us
  child.unref();
  return child.pid;
}

export function stopWatchdog(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}
