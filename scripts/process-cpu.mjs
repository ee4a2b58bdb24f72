#!/usr/bin/env node
// Where a test run's CPU goes, by kind of process (control planes, TypeScript programs, ESLint, operators, vitest...).
//
//   node scripts/process-cpu.mjs sample .tmp/process-cpu.json   # reads /proc every 2 s until stopped (SIGTERM)
//   node scripts/process-cpu.mjs summary .tmp/process-cpu.json  # prints the kinds, costliest first
//
// scripts/test.sh runs both (Linux only: it reads /proc). A process is seen if it lives through one sample, so
// processes shorter than 2 s, and the last 2 s of the others, are missed: the totals are a floor. Processes running
// before the sampler started count only the CPU they used after it. The summary sets the run's costs beside each
// other; the per-file figures (test/support/file-cpu.ts) say which test file started what.
import { readdirSync, readFileSync, readlinkSync, writeFileSync, renameSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { clearInterval, setInterval } from 'node:timers';
import { fileURLToPath } from 'node:url';

/** The workspace: a process working in it is the workspace's, one working elsewhere a project a test made. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const [command, file] = process.argv.slice(2);
if ((command !== 'sample' && command !== 'summary') || !file) {
  process.stderr.write('usage: node scripts/process-cpu.mjs sample|summary <file.json>\n');
  process.exit(2);
}

const TICKS = 100; // USER_HZ on Linux

/** utime + stime (ticks) and start time (ticks since boot) of a process, or undefined once it is gone. */
function stat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(') ') + 2).split(' ');
    return { cpu: Number(f[11]) + Number(f[12]), start: Number(f[19]) };
  } catch {
    return undefined;
  }
}

if (command === 'sample') {
  const self = stat(process.pid);
  /** pid:start → { args, first, last, before } */
  const seen = new Map();
  const tick = () => {
    let pids;
    try {
      pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
    } catch {
      return;
    }
    for (const pid of pids) {
      const st = stat(pid);
      if (!st) continue;
      const key = `${pid}:${st.start}`;
      // read each time: a shim (`/bin/sh node_modules/.bin/eslint`) execs into what it starts, keeping its pid
      let args = '';
      let cwd = '';
      try {
        args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().slice(0, 300);
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // gone, or not ours to read
      }
      const known = seen.get(key);
      if (known) {
        known.last = st.cpu;
        if (args !== '') Object.assign(known, { args, cwd: cwd || known.cwd });
        continue;
      }
      if (args === '') continue;
      // a process started before the sampler counts from the first sight; one started since, all of its CPU
      const before = self && st.start < self.start;
      seen.set(key, { args, cwd, first: before ? st.cpu : 0, last: st.cpu });
    }
  };
  const save = () => {
    const rows = [...seen.values()].filter((r) => r.last > r.first).map((r) => ({ args: r.args, cwd: r.cwd, cpuSeconds: (r.last - r.first) / TICKS }));
    writeFileSync(`${file}.tmp`, JSON.stringify(rows));
    renameSync(`${file}.tmp`, file);
  };
  tick();
  const parent = process.ppid;
  const timer = setInterval(() => {
    // the run that started it is gone (killed, or ended without stopping it): save and stop
    if (process.ppid !== parent) stop();
    tick();
  }, 2000);
  const saver = setInterval(save, 30_000);
  const stop = () => {
    clearInterval(timer);
    clearInterval(saver);
    tick();
    save();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  let rows;
  try {
    rows = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    process.stderr.write(`process-cpu: no samples in ${file} (${err.message})\n`);
    process.exit(0);
  }
  const inWorkspace = (row) => row.cwd === ROOT || row.cwd.startsWith(`${ROOT}/`);
  const KINDS = [
    ['kube-apiserver', (r) => /\/kube-apiserver\s/.test(r.args)],
    ['etcd', (r) => /\/etcd\s/.test(r.args)],
    ['tsc, workspace', (r) => /typescript\/bin\/tsc/.test(r.args) && inWorkspace(r)],
    ['tsc, projects the tests make', (r) => /typescript\/bin\/tsc/.test(r.args)],
    ['eslint, workspace', (r) => /eslint\/bin\/eslint/.test(r.args) && inWorkspace(r)],
    ['eslint, projects the tests make', (r) => /eslint\/bin\/eslint/.test(r.args)],
    ['vitest, workspace (workers and main)', (r) => /vitest/.test(r.args) && inWorkspace(r)],
    ['vitest, projects the tests make', (r) => /vitest/.test(r.args)],
    ['operators (built example and scaffolds)', (r) => /dist\/(main|operator)\.js/.test(r.args)],
    ['kubeloop CLI', (r) => /cli\/dist\/bin\.js|\.bin\/kubeloop/.test(r.args)],
    ['pnpm', (r) => /pnpm/.test(r.args)],
    ['verdaccio', (r) => /verdaccio/.test(r.args)],
    ['rolldown', (r) => /rolldown/.test(r.args)],
    ['kubectl', (r) => /kubectl/.test(r.args)],
    ['prometheus, jaeger, helm, go', (r) => /prometheus|jaeger|helm|\/go\s|\/go$/.test(r.args)],
    ['other node', (r) => /node/.test(r.args.split(' ')[0] ?? '')],
    ['other', () => true],
  ];
  const sums = new Map();
  for (const row of rows) {
    const [kind] = KINDS.find(([, test]) => test({ args: row.args, cwd: row.cwd ?? '' }));
    const s = sums.get(kind) ?? { n: 0, cpu: 0, max: 0 };
    s.n++;
    s.cpu += row.cpuSeconds;
    s.max = Math.max(s.max, row.cpuSeconds);
    sums.set(kind, s);
  }
  const total = [...sums.values()].reduce((a, s) => a + s.cpu, 0);
  if (rows.length === 0) {
    process.stdout.write('process-cpu: no process seen (it reads /proc: Linux only)\n');
    process.exit(0);
  }
  process.stdout.write(`process-cpu: the run's CPU by kind of process (${total.toFixed(0)} CPU-s seen; processes living 2 s or more):\n`);
  for (const [kind, s] of [...sums.entries()].sort((a, b) => b[1].cpu - a[1].cpu)) {
    process.stdout.write(`  ${s.cpu.toFixed(0).padStart(6)} CPU-s  ${String(s.n).padStart(4)} processes (the costliest ${s.max.toFixed(1)})  ${kind}\n`);
  }
}
