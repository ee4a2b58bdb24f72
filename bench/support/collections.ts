/**
 * Full collections forced in a running Node process from outside it, through
 * its inspector (`pnpm bench:memory --collect`; docs/benchmarks.md,
 * "Returning the burst's memory"). The process must have been started with
 * `--inspect-port=127.0.0.1:<port>`: that only says where the inspector is to
 * listen once activated, so the process runs as it would without it until
 * SIGUSR1 opens it.
 *
 * The steps, each read from /proc (RSS, anonymous, V8's heap pages from
 * smaps) and, once the inspector is open, from `process.memoryUsage()` in the
 * process:
 *
 * 1. before: as the process was, right after the caller scraped its /metrics
 *    (the heap figures are that scrape's; the scrape itself adds about 1 MiB of RSS);
 * 2. attached: SIGUSR1, the inspector's WebSocket connected, and V8's `gc`
 *    function made in a new context (`--expose-gc` set with
 *    `v8.setFlagsFromString`, then `vm.runInNewContext('gc')`): the inspector's
 *    and that context's own memory;
 * 3. ordinary: `gc()`, a full (mark-compact) collection as any heap growth
 *    starts one;
 * 4. last resort: `gc({ type: 'major', flavor: 'last-resort' })`, V8's
 *    collection of all it can (several mark-compacts, memory-reducing: the
 *    pooled pages handed back), what the memory reducer would have run.
 *
 * After each collection the reading waits `pauseMs` (V8 frees pages on
 * background threads).
 */
import { WebSocket } from 'node:http';
import { procStatus, sleep } from './processes.ts';
import { smapsGroups } from './smaps.ts';

export const COLLECTION_STEPS = ['before', 'attached', 'ordinary', 'last resort'] as const;
export type CollectionStep = (typeof COLLECTION_STEPS)[number];

/** One reading, bytes. heapTotal and heapUsed undefined when the process did not say. */
export interface CollectionReading {
  readonly step: CollectionStep;
  readonly rss: number;
  readonly anon: number;
  /** Resident 256 KiB mappings (support/smaps.ts: "V8's heap pages"). */
  readonly v8Pages: number;
  readonly heapTotal: number | undefined;
  readonly heapUsed: number | undefined;
}

const V8_PAGES = "V8's heap pages (256 KiB mappings)";

function read(pid: number, step: CollectionStep, heap: { heapTotal?: number | undefined; heapUsed?: number | undefined }): CollectionReading {
  const s = procStatus(pid);
  return { step, rss: s.rss, anon: s.anon, v8Pages: smapsGroups(pid).groups[V8_PAGES], heapTotal: heap.heapTotal, heapUsed: heap.heapUsed };
}

/** The inspector's WebSocket URL once it answers on `port` (after SIGUSR1). */
async function debuggerUrl(port: number, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl?: string }[];
      const url = targets.find((t) => t.webSocketDebuggerUrl)?.webSocketDebuggerUrl;
      if (url) return url;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`no inspector on 127.0.0.1:${port} after SIGUSR1`);
    await sleep(100);
  }
}

/** A minimal Chrome DevTools Protocol client: `Runtime.evaluate`, its value returned. */
async function connect(url: string): Promise<{ evaluate: (expression: string) => Promise<unknown>; close: () => void }> {
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve(), { once: true });
    ws.addEventListener('error', () => reject(new Error(`inspector WebSocket ${url} failed`)), { once: true });
  });
  let nextId = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  ws.addEventListener('message', (event: MessageEvent) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: { result?: { value?: unknown }; exceptionDetails?: { text?: string; exception?: { description?: string } } }; error?: { message: string } };
    const w = message.id === undefined ? undefined : waiting.get(message.id);
    if (!w) return;
    waiting.delete(message.id!);
    const failed = message.error?.message ?? (message.result?.exceptionDetails ? (message.result.exceptionDetails.exception?.description ?? message.result.exceptionDetails.text ?? 'exception') : undefined);
    if (failed) w.reject(new Error(`Runtime.evaluate: ${failed}`));
    else w.resolve(message.result?.result?.value);
  });
  return {
    evaluate: (expression) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        waiting.set(id, { resolve, reject });
        ws.send(JSON.stringify({ id, method: 'Runtime.evaluate', params: { expression, returnByValue: true, awaitPromise: true } }));
      }),
    close: () => ws.close(),
  };
}

/** The process's heap as it reports it, through the inspector. */
const MEMORY = 'JSON.stringify(process.memoryUsage())';

/**
 * The four readings of one process (see the file's comment). `before` carries the heap the caller read
 * from the process's metrics. The inspector stays open in the process afterwards.
 */
export async function forceCollections(pid: number, port: number, before: { heapTotal?: number | undefined; heapUsed?: number | undefined }, pauseMs = 2000): Promise<CollectionReading[]> {
  const readings = [read(pid, 'before', before)];
  process.kill(pid, 'SIGUSR1');
  const inspector = await connect(await debuggerUrl(port, 10_000));
  try {
    const heap = async (): Promise<{ heapTotal: number; heapUsed: number }> => JSON.parse(String(await inspector.evaluate(MEMORY))) as { heapTotal: number; heapUsed: number };
    await inspector.evaluate(`globalThis.__benchGc = (process.getBuiltinModule('node:v8').setFlagsFromString('--expose-gc'), process.getBuiltinModule('node:vm').runInNewContext('gc')), typeof globalThis.__benchGc`);
    await sleep(pauseMs);
    readings.push(read(pid, 'attached', await heap()));
    await inspector.evaluate(`globalThis.__benchGc(), 'ok'`);
    await sleep(pauseMs);
    readings.push(read(pid, 'ordinary', await heap()));
    await inspector.evaluate(`globalThis.__benchGc({ type: 'major', flavor: 'last-resort' }), 'ok'`);
    await sleep(pauseMs);
    readings.push(read(pid, 'last resort', await heap()));
  } finally {
    inspector.close();
  }
  return readings;
}
