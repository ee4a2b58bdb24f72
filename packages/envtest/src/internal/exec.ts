/** Run a command to completion, capturing output, with an optional line callback. */
import { spawn } from 'node:child_process';

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
  /** Called with each complete line of stderr (go build -v writes package names there). */
  readonly onStderrLine?: (line: string) => void;
}

/** Spawn `command args`, resolve when it exits. Rejects only if it cannot be spawned (ENOENT...). */
export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: options.signal,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let partial = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => {
      err.push(d);
      if (options.onStderrLine) {
        partial += d.toString('utf8');
        const lines = partial.split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) options.onStderrLine(line);
      }
    });
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (partial && options.onStderrLine) options.onStderrLine(partial);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}

/** The last `n` lines of a text, for error messages. */
export function tail(text: string, n = 20): string {
  const lines = text.trimEnd().split('\n');
  return lines.slice(-n).join('\n');
}
