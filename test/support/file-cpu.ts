/**
 * Where the suite's CPU goes, per test file (a vitest setup file). With
 * `KUBELOOP_FILE_CPU=<file>` (scripts/test.sh sets it), each test file appends
 * one JSON line there when it ends: its wall time and the CPU seconds of the
 * worker process while it ran, its own and its finished child processes'
 * (the operators, kubectl, tsc, pnpm and control planes it started and
 * stopped: `/proc/self/stat`'s utime, stime, cutime and cstime, which count a
 * child once it has exited and been waited for). A worker runs one file at a
 * time, so the difference over a file is that file's. Not counted: the shared
 * control plane (global-setup.ts's, not a worker's child) and a child still
 * running when the file ends. `scripts/summarize-tests.mjs` prints the ten
 * costliest files. Without the variable it does nothing.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, expect } from 'vitest';

const out = process.platform === 'linux' ? process.env['KUBELOOP_FILE_CPU'] : undefined;

/** CPU seconds of this process and its waited-for children: [own, children]. */
function cpuSeconds(): [number, number] {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  const tick = (i: number): number => Number(fields[i]) / 100; // USER_HZ
  return [tick(11) + tick(12), tick(13) + tick(14)];
}

if (out) {
  // from before the test file is imported (a setup file runs first, for every file), so its import counts
  const started = Date.now();
  const before = cpuSeconds();
  afterAll(() => {
    const after = cpuSeconds();
    const file = (expect.getState().testPath ?? '?').replace(`${process.cwd()}/`, '');
    const line = { file, wallSeconds: (Date.now() - started) / 1000, ownCpuSeconds: +(after[0] - before[0]).toFixed(2), childCpuSeconds: +(after[1] - before[1]).toFixed(2) };
    appendFileSync(out, `${JSON.stringify(line)}\n`);
  });
}
