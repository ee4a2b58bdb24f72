/**
 * Operator processes for the benchmarks that run them as shipped (bench:memory, bench:churn): started,
 * their JSON log lines read, their memory and CPU read from /proc, their Prometheus metrics scraped, and
 * controller-runtime's side built from support/controller-runtime.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const here = dirname(fileURLToPath(import.meta.url));

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
export const mib = (bytes: number | undefined): number | undefined => (bytes === undefined ? undefined : Number((bytes / 1048576).toFixed(1)));

/** Run `fn(0..count-1)` with at most `limit` calls in flight. */
export async function pool(count: number, limit: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

/** VmRSS and VmHWM of a process, and RSS split into anonymous (heaps, malloc) and file-backed (the node binary's pages) memory, bytes. */
export function procStatus(pid: number): { rss: number; hwm: number; anon: number; file: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** CPU time the process has used (user + system), ms, from /proc/<pid>/stat (clock ticks of 10 ms). */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Reset the peak (VmHWM) to the current RSS (Linux clear_refs 5). */
export function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** A loopback port free now (for a process that cannot say which port it bound). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** How to start one process and how to tell it has synced. */
export interface ProcessSpec {
  readonly name: string;
  readonly command: readonly string[];
  readonly cwd?: string;
  readonly env?: Record<string, string>;
  /** A line of its stdout saying it has synced. */
  readonly synced: (line: Record<string, unknown>) => boolean;
  /** How many such lines make "synced" (one per controller). */
  readonly syncLines?: number;
  /** Its metrics URL (`http://host:port`) when its log does not say it (controller-runtime's bound port). */
  readonly metricsUrl?: string;
  /** Keep only the first this many JSON lines of its stdout (a process logging per reconcile for minutes). Default: all. */
  readonly keepLines?: number;
}

/** A started process: its JSON stdout lines as they come. */
export interface Running {
  readonly proc: ChildProcess;
  readonly lines: Record<string, unknown>[];
  readonly startedAt: number;
  readonly spec: ProcessSpec;
  waitFor(match: (l: Record<string, unknown>) => boolean, count: number, timeoutMs: number): Promise<Record<string, unknown>>;
  /** SIGTERM, then resolves once it has exited. */
  stop(): Promise<void>;
}

/** Start a process from `cwd` (default bench/), its stdout read as JSON lines (BENCH_TEE appends each to a file too). */
export function startProcess(spec: ProcessSpec): Running {
  const [cmd, ...args] = spec.command;
  const proc = spawn(cmd!, args, { cwd: spec.cwd ?? join(here, '..'), env: { ...process.env, KUBELOOP_LOG_LEVEL: 'info', ...spec.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Record<string, unknown>[] = [];
  const keep = spec.keepLines ?? Infinity;
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  createInterface({ input: proc.stdout }).on('line', (line) => {
    if (process.env['BENCH_TEE']) appendFileSync(process.env['BENCH_TEE'], line + '\n');
    if (lines.length >= keep) return;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      /* not JSON */
    }
  });
  let exited = false;
  proc.once('exit', () => (exited = true));
  return {
    proc,
    lines,
    spec,
    startedAt: performance.now(),
    waitFor: async (match, count, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.filter(match);
        if (found.length >= count) return found[count - 1]!;
        if (exited) throw new Error(`${spec.name} exited early:\n${lines.slice(-5).map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`);
        if (Date.now() > deadline) throw new Error(`${spec.name}: timed out after ${timeoutMs} ms\n${stderr}`);
        await sleep(20);
      }
    },
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null || proc.signalCode !== null ? r(undefined) : proc.once('exit', r)));
    },
  };
}

/**
 * A process's Prometheus metrics: each series summed over its labels under its name, and each labelled series
 * under `name{labels}` too; undefined when it serves none (or has not said where).
 */
export async function metricsOf(p: Running): Promise<Map<string, number> | undefined> {
  const base = p.spec.metricsUrl ?? (p.lines.find((l) => l['msg'] === 'metrics listening' && typeof l['url'] === 'string')?.['url'] as string | undefined);
  if (!base) return undefined;
  const text = await (await fetch(`${base}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (!m) continue;
    out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[3])); // summed over labels
    if (m[2]) out.set(`${m[1]!}${m[2]}`, Number(m[3]));
  }
  return out;
}

/**
 * The controller-runtime operator (support/controller-runtime) built into `dir`, or undefined (with the reason
 * logged) when Go is missing or the build fails. The first build downloads modules and takes minutes.
 */
export function buildControllerRuntime(dir: string, log: (line: string) => void): string | undefined {
  const out = join(dir, 'controller-runtime');
  const built = spawnSync('go', ['build', '-o', out, '.'], { cwd: join(here, 'controller-runtime'), encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'] });
  if (built.error || built.status !== 0) {
    log(`controller-runtime left out: go build failed (${built.error?.message ?? built.stderr.trim().split('\n').slice(-3).join(' / ')})`);
    return undefined;
  }
  return out;
}

/**
 * The bench's own child scripts (files of support/) compiled to .mjs in a new temporary folder under bench/
 * whose name starts with `prefix` (so their @kubeloop/* imports resolve to this workspace): run as .ts, node
 * would load its type stripper into them, about 25 MiB an operator never carries. The caller removes the folder.
 */
export function compileScripts(names: readonly string[], prefix: string): Map<string, string> {
  const dir = mkdtempSync(join(here, '..', prefix));
  const out = new Map<string, string>();
  for (const name of names) {
    const source = readFileSync(join(here, name), 'utf8');
    const target = join(dir, name.replace(/\.ts$/, '.mjs'));
    writeFileSync(target, ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 }, fileName: name }).outputText);
    out.set(name, target);
  }
  return out;
}
