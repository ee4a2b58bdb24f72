// Reads vitest's JSON report and prints the closing line "N passed, N failed"
// (failed typecheck/lint steps count as failures). Exits 1 if anything failed
// or no test ran. Before it, on stderr, the ten slowest test files (wall time
// of each file, from the report's start and end times) and the span of the
// whole run (files run side by side, so it is less than their sum), so a slow
// suite says where its time goes; with KUBELOOP_FILE_CPU (scripts/test.sh), the ten
// costliest files by CPU (test/support/file-cpu.ts).
import { existsSync, readFileSync } from 'node:fs';

const [report, failedChecksArg = '0'] = process.argv.slice(2);
const failedChecks = Number.parseInt(failedChecksArg, 10) || 0;
let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const json = JSON.parse(readFileSync(report, 'utf8'));
  passed = json.numPassedTests ?? 0;
  failed = json.numFailedTests ?? 0;
  skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
  // Suites that failed to load (syntax errors, a broken setup) have no tests to count.
  const brokenSuites = (json.testResults ?? []).filter((r) => r.status === 'failed' && (r.assertionResults ?? []).length === 0).length;
  failed += brokenSuites;
  const timed = (json.testResults ?? [])
    .filter((r) => typeof r.startTime === 'number' && typeof r.endTime === 'number')
    .map((r) => ({ file: String(r.name).replace(`${process.cwd()}/`, ''), seconds: (r.endTime - r.startTime) / 1000 }))
    .sort((a, b) => b.seconds - a.seconds);
  if (timed.length > 0) {
    const total = timed.reduce((sum, r) => sum + r.seconds, 0);
    const results = (json.testResults ?? []).filter((r) => typeof r.startTime === 'number' && typeof r.endTime === 'number');
    const wall = (Math.max(...results.map((r) => r.endTime)) - Math.min(...results.map((r) => r.startTime))) / 1000;
    console.error(`summarize-tests: the ten slowest of ${timed.length} test files (${total.toFixed(0)} s of file time in all, ${wall.toFixed(0)} s from the first file's start to the last one's end, files side by side):`);
    for (const r of timed.slice(0, 10)) console.error(`  ${r.seconds.toFixed(1).padStart(7)} s  ${r.file}`);
  }
  // test/support/file-cpu.ts's lines (KUBELOOP_FILE_CPU): each file's CPU, the worker's and its finished children's
  const cpuFile = process.env.KUBELOOP_FILE_CPU;
  if (cpuFile && existsSync(cpuFile)) {
    const files = readFileSync(cpuFile, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l)).map((r) => ({ ...r, cpu: r.ownCpuSeconds + r.childCpuSeconds })).sort((a, b) => b.cpu - a.cpu);
    const sum = files.reduce((s, r) => s + r.cpu, 0);
    console.error(`summarize-tests: the ten costliest of ${files.length} test files by CPU (${sum.toFixed(0)} CPU-s in all: each file's worker and the processes it started and stopped; not the shared control plane):`);
    for (const r of files.slice(0, 10)) console.error(`  ${r.cpu.toFixed(1).padStart(7)} CPU-s  (worker ${r.ownCpuSeconds.toFixed(1)}, children ${r.childCpuSeconds.toFixed(1)}, ${r.wallSeconds.toFixed(0)} s)  ${r.file}`);
  }
  if (json.success === false && failed === 0) failed = 1; // e.g. global setup failed
} catch (err) {
  console.error(`summarize-tests: no readable report at ${report}: ${err.message}`);
  failed = 1;
}
failed += failedChecks;
const line = `${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : '');
console.log(line);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
