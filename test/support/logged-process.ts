/** A program that logs JSON lines (an example's dist/main.js), run by a test: its log as it comes, its stderr, and how it ends. */
import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

/** The running program. */
export interface Running {
  readonly lines: Record<string, unknown>[];
  /** Resolves with the first log line that matches; rejects, with the log and stderr, if the process exits first. */
  until(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Resolves with the exit code once every line of stdout has been read ('close', not 'exit'). */
  readonly exited: Promise<number | null>;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM (default) or another signal (`SIGKILL`): to the program, or to a command's whole process group. */
  kill(signal?: NodeJS.Signals): void;
}

/** Options of {@link startLogged} and {@link startLoggedCommand}. */
export interface LoggedOptions {
  /** Node.js flags before the script. Default: none. */
  readonly nodeArgs?: readonly string[];
  /** Added to the test's environment, over KUBELOOP_LOG_LEVEL=info. Default: none. */
  readonly env?: Record<string, string>;
  /** Working directory. Default: the test's. */
  readonly cwd?: string;
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
export function startLogged(script: string, args: readonly string[], options: LoggedOptions = {}): Running {
  return track(spawn(process.execPath, [...(options.nodeArgs ?? []), script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...(options.cwd ? { cwd: options.cwd } : {}), env: { ...process.env, KUBELOOP_LOG_LEVEL: 'info', ...options.env } }), false);
}

/**
 * Runs a documented command line exactly as written (`sh -c`), in a process
 * group of its own: `kill` signals the shell and the program it started.
 *
 * @example
 * ```ts
 * const op = startLoggedCommand('node dist/main.js --no-sample', { cwd: exampleDir, env: { KUBECONFIG: kubeconfigPath } });
 * await op.until((l) => l['msg'] === 'manager started');
 * op.kill();
 * ```
 */
export function startLoggedCommand(text: string, options: Omit<LoggedOptions, 'nodeArgs'> = {}): Running {
  return track(spawn('sh', ['-c', text], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...(options.cwd ? { cwd: options.cwd } : {}), env: { ...process.env, KUBELOOP_LOG_LEVEL: 'info', ...options.env } }), true);
}

function track(child: ChildProcessByStdio<null, Readable, Readable>, group: boolean): Running {
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
        let seen = 0; // lines already looked at: a long (debug) log is scanned once, not on every chunk
        const check = (): void => {
          const found = lines.slice(seen).find(match);
          seen = lines.length;
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
    kill: (signal = 'SIGTERM') => {
      if (group && child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, signal);
      else child.kill(signal);
    },
  };
}
