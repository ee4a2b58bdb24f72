/** A program that logs JSON lines (an example's dist/main.js), run by a test: its log as it comes, its stderr, and how it ends. */
import { spawn } from 'node:child_process';

/** The running program. */
export interface Running {
  readonly lines: Record<string, unknown>[];
  /** Resolves with the first log line that matches; rejects, with the log and stderr, if the process exits first. */
  until(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Resolves with the exit code once every line of stdout has been read ('close', not 'exit'). */
  readonly exited: Promise<number | null>;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM. */
  kill(): void;
}

/**
 * Starts `node [nodeArgs] script [args]` with KUBELOOP_LOG_LEVEL=info (plus `env`), in `cwd`.
 *
 * @example
 * ```ts
 * const op = startLogged(main, ['--envtest']);
 * await op.until((l) => l['msg'] === 'operator started');
 * op.kill();
 * expect(await op.exited).toBe(0);
 * ```
 */
export function startLogged(script: string, args: readonly string[], options: { nodeArgs?: readonly string[]; env?: Record<string, string>; cwd?: string } = {}): Running {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...(options.cwd ? { cwd: options.cwd } : {}), env: { ...process.env, KUBELOOP_LOG_LEVEL: 'info', ...options.env } });
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  let buffer = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    for (const p of parts) {
      try {
        lines.push(JSON.parse(p) as Record<string, unknown>);
      } catch {
        /* not JSON */
      }
    }
    for (const w of waiters) w();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return {
    lines,
    exited,
    until: (match) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const check = (): void => {
          const found = lines.find(match);
          if (!found) return;
          waiters.delete(check);
          resolve(found);
        };
        waiters.add(check);
        check();
        void exited.then((code) => {
          if (!waiters.has(check)) return;
          waiters.delete(check);
          reject(new Error(`exited ${code} early:\n${lines.map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`));
        });
      }),
    stderr: () => stderr,
    kill: () => child.kill('SIGTERM'),
  };
}

