/**
 * Profiles on demand, served by the metrics server behind its authentication
 * and authorization (docs/tracing.md, "Profiles"): a CPU profile for N
 * seconds (`.cpuprofile`, which Chrome DevTools and speedscope open), a heap
 * snapshot (`.heapsnapshot`), a sampling heap profile for N seconds
 * (`.heapprofile`). Taken through `node:inspector`, loaded at the first
 * request (no new dependency, nothing loaded while nobody asks); one at a
 * time, bounded in duration and size.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as InspectorPromises from 'node:inspector/promises';
import { ManagerError } from '../errors.js';

/**
 * Profiling endpoints ({@link ManagerOptions.profiling}).
 *
 * @example
 * ```ts
 * const profiling: ProfilingOptions = { maxDurationMs: 120_000, maxHeapSnapshotBytes: 1024 ** 3 };
 * ```
 */
export interface ProfilingOptions {
  /** Longest CPU or sampling heap profile a caller may ask for (`?seconds=`), ms. Default: 60 000. */
  readonly maxDurationMs?: number;
  /** Largest heap snapshot sent, bytes: a bigger one is cut off (the connection closed, the file unusable). Default: 512 MiB. */
  readonly maxHeapSnapshotBytes?: number;
}

/** The paths served, under the metrics server. */
export const PROFILE_PATHS = {
  cpu: '/debug/profile/cpu',
  heap: '/debug/profile/heap',
  heapSampling: '/debug/profile/heap-sampling',
} as const;

/** The default `seconds` of a CPU or sampling heap profile. */
const DEFAULT_SECONDS = 30;

type InspectorSession = InstanceType<typeof InspectorPromises.Session>;

function answer(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' }).end(body);
}

/** Resolves after `ms`, or early when `signal` aborts (the caller went away). */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Serves the profile endpoints, one profile at a time. */
export class Profiler {
  private readonly maxDurationMs: number;
  private readonly maxHeapSnapshotBytes: number;
  /** What is being taken now, if anything. */
  private busy: string | undefined;

  constructor(options: ProfilingOptions = {}) {
    const max = options.maxDurationMs ?? 60_000;
    const bytes = options.maxHeapSnapshotBytes ?? 512 * 1024 * 1024;
    if (!Number.isFinite(max) || max < 1_000) throw new ManagerError('InvalidOptions', `profiling.maxDurationMs must be a number of ms >= 1000, got ${String(options.maxDurationMs)}`);
    if (!Number.isFinite(bytes) || bytes < 1) throw new ManagerError('InvalidOptions', `profiling.maxHeapSnapshotBytes must be a number of bytes > 0, got ${String(options.maxHeapSnapshotBytes)}`);
    this.maxDurationMs = max;
    this.maxHeapSnapshotBytes = bytes;
  }

  /** Whether `path` is one of the profile endpoints. */
  serves(path: string): boolean {
    return path === PROFILE_PATHS.cpu || path === PROFILE_PATHS.heap || path === PROFILE_PATHS.heapSampling;
  }

  /** Answer a GET of one of {@link PROFILE_PATHS} (the caller checked authorization and the method). */
  async handle(path: string, query: URLSearchParams, req: IncomingMessage, res: ServerResponse): Promise<void> {
    let seconds = DEFAULT_SECONDS;
    if (path !== PROFILE_PATHS.heap) {
      const given = query.get('seconds');
      if (given !== null) {
        seconds = Number(given);
        if (!/^\d+(\.\d+)?$/.test(given) || seconds <= 0 || seconds * 1000 > this.maxDurationMs) {
          return answer(res, 400, `seconds must be a number greater than 0 and at most ${this.maxDurationMs / 1000} (profiling.maxDurationMs), got ${JSON.stringify(given.slice(0, 32))}\n`);
        }
      }
    }
    if (this.busy !== undefined) return answer(res, 409, `a ${this.busy} is being taken; one profile at a time: try again when it is done\n`);
    const what = path === PROFILE_PATHS.cpu ? 'CPU profile' : path === PROFILE_PATHS.heap ? 'heap snapshot' : 'sampling heap profile';
    this.busy = what;
    // The answer comes after `seconds` of silence: the server's idle timeout must not cut it.
    req.socket.setTimeout(0);
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    const { Session } = process.getBuiltinModule('node:inspector/promises');
    const session: InspectorSession = new Session();
    session.connect();
    try {
      if (path === PROFILE_PATHS.cpu) await this.cpu(session, seconds, gone.signal, res);
      else if (path === PROFILE_PATHS.heap) await this.heap(session, res);
      else await this.sampling(session, seconds, gone.signal, res);
    } catch (err) {
      answer(res, 500, `the ${what} failed: ${err instanceof Error ? err.message : String(err)}\n`);
    } finally {
      session.disconnect();
      this.busy = undefined;
    }
  }

  private async cpu(session: InspectorSession, seconds: number, gone: AbortSignal, res: ServerResponse): Promise<void> {
    await session.post('Profiler.enable');
    try {
      await session.post('Profiler.start');
      await wait(seconds * 1000, gone);
      const { profile } = await session.post('Profiler.stop');
      if (gone.aborted) return;
      this.sendJson(res, profile, 'kubeloop.cpuprofile');
    } finally {
      await session.post('Profiler.disable');
    }
  }

  private async sampling(session: InspectorSession, seconds: number, gone: AbortSignal, res: ServerResponse): Promise<void> {
    await session.post('HeapProfiler.enable');
    try {
      await session.post('HeapProfiler.startSampling', { samplingInterval: 32_768 });
      await wait(seconds * 1000, gone);
      const { profile } = await session.post('HeapProfiler.stopSampling');
      if (gone.aborted) return;
      this.sendJson(res, profile, 'kubeloop.heapprofile');
    } finally {
      await session.post('HeapProfiler.disable');
    }
  }

  private async heap(session: InspectorSession, res: ServerResponse): Promise<void> {
    let sent = 0;
    let cut = false;
    res.writeHead(200, { 'content-type': 'application/json', 'content-disposition': 'attachment; filename="kubeloop.heapsnapshot"', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' });
    const onChunk = (message: { params: { chunk: string } }): void => {
      if (cut || res.destroyed) return;
      sent += Buffer.byteLength(message.params.chunk);
      if (sent > this.maxHeapSnapshotBytes) {
        cut = true;
        res.destroy(new Error(`the heap snapshot passed profiling.maxHeapSnapshotBytes (${this.maxHeapSnapshotBytes})`));
        return;
      }
      res.write(message.params.chunk);
    };
    session.on('HeapProfiler.addHeapSnapshotChunk', onChunk);
    try {
      // Synchronous in V8: the process does nothing else while the snapshot is taken (docs/tracing.md).
      await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
    } finally {
      session.off('HeapProfiler.addHeapSnapshotChunk', onChunk);
    }
    if (!cut) res.end();
  }

  private sendJson(res: ServerResponse, value: unknown, filename: string): void {
    const body = JSON.stringify(value);
    res.writeHead(200, { 'content-type': 'application/json', 'content-disposition': `attachment; filename="${filename}"`, 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' }).end(body);
  }
}
