/**
 * A control-plane component run as a child process in its own process group,
 * its output appended to a log file.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { tail } from './exec.js';

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export class ComponentProcess {
  readonly name: string;
  readonly logPath: string;
  private child: ChildProcess | undefined;
  private exitPromise: Promise<ExitInfo> | undefined;
  private exitInfo: ExitInfo | undefined;

  constructor(name: string, logPath: string) {
    this.name = name;
    this.logPath = logPath;
  }

  /** The process group id (the child's pid, since it leads its group). */
  get pgid(): number | undefined {
    return this.child?.pid;
  }

  /** Defined once the process has exited. */
  get exited(): ExitInfo | undefined {
    return this.exitInfo;
  }

  /** Resolves when the process exits. */
  waitExit(): Promise<ExitInfo> {
    return this.exitPromise ?? Promise.resolve({ code: null, signal: null });
  }

  start(binary: string, args: readonly string[], env?: NodeJS.ProcessEnv): void {
    const fd = openSync(this.logPath, 'a');
    try {
      const child = spawn(binary, args, {
        detached: true, // own process group: one signal reaches it and anything it forks
        stdio: ['ignore', fd, fd],
        env: env ?? process.env,
      });
      this.child = child;
      this.exitInfo = undefined;
      this.exitPromise = new Promise<ExitInfo>((resolve) => {
        child.once('error', (err) => {
          // The binary could not be spawned at all (ENOENT, EACCES).
          this.exitInfo = { code: null, signal: null };
          this.spawnError = err;
          resolve(this.exitInfo);
        });
        child.once('exit', (code, signal) => {
          this.exitInfo = { code, signal };
          resolve(this.exitInfo);
        });
      });
    } finally {
      closeSync(fd);
    }
  }

  /** Set when the binary could not be spawned at all. */
  spawnError: Error | undefined;

  /** The last lines of the component's log. */
  logTail(lines = 25): string {
    try {
      return tail(readFileSync(this.logPath, 'utf8'), lines);
    } catch {
      return '';
    }
  }

  /** SIGTERM to the whole group; SIGKILL after `timeoutMs`. Resolves once exited. */
  async stop(timeoutMs: number): Promise<void> {
    const pgid = this.pgid;
    if (pgid === undefined || this.exitInfo) return;
    signalGroup(pgid, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = await Promise.race([
      this.waitExit().then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    if (timer) clearTimeout(timer);
    if (killed) {
      signalGroup(pgid, 'SIGKILL');
      await this.waitExit();
    }
    // Anything the component forked into its group goes too.
    signalGroup(pgid, 'SIGKILL');
  }

  /** SIGKILL the group at once (fault tests: a crashed component). */
  async kill(): Promise<void> {
    const pgid = this.pgid;
    if (pgid === undefined || this.exitInfo) return;
    signalGroup(pgid, 'SIGKILL');
    await this.waitExit();
  }
}

/** Send a signal to a process group; a group that is already gone is fine. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}
