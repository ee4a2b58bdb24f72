/** Shared by the manager tests that run against the real API server. */
import { afterEach } from 'vitest';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import type { Registry } from 'prom-client';
import { createLogger, createManager } from '../src/index.js';
import type { Manager, ManagerOptions } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

/** A client of the shared control plane (close its transport when done). */
export function testClient(fieldOwner = 'manager-test'): Client {
  return createClient({ kubeConfig: testKubeConfig(), fieldOwner });
}

/** A fresh namespace. */
export async function newNamespace(client: Client, prefix = 'mgr'): Promise<string> {
  const ns = uniqueName(prefix);
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  return ns;
}

/** A quiet manager on the shared control plane, caching `ns` only. */
export function testManager(ns: string, options: ManagerOptions = {}): Manager {
  return createManager({ kubeConfig: testKubeConfig(), namespaces: [ns], logger: createLogger({ level: 'silent' }), fieldOwner: 'manager-test', ...options });
}

/** A started manager: `stop()` aborts it and waits for start() to settle (rethrowing what it threw). */
export interface Running {
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * The `start(manager)` of a test file whose tests each start managers: every
 * manager started through it is stopped after the test that started it (a
 * stop that fails is ignored: the test has already said what it found).
 */
export function startsPerTest(): (manager: Manager) => Running {
  const running: Running[] = [];
  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop().catch(() => undefined);
  });
  return (manager) => {
    const r = run(manager);
    running.push(r);
    return r;
  };
}

export function run(manager: Manager): Running {
  const ac = new AbortController();
  const done = manager.start(ac.signal);
  // observed here so that a rejection before stop() is not unhandled
  done.catch(() => undefined);
  return {
    done,
    stop: async () => {
      ac.abort();
      await done;
    },
  };
}

/** Poll `read` until `ok`; fail with `what` and the last value after `timeoutMs`. */
export async function eventually<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      last = await read();
      if (ok(last)) return last;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)?.slice(0, 500)}${lastError === undefined ? '' : `; last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}`}`);
    }
    await sleep(25);
  }
}

/** Wait until every controller of `manager` has synced its sources and started its workers. */
export function synced(manager: Manager): Promise<unknown> {
  return eventually(() => manager.controllers(), (cs) => cs.length > 0 && cs.every((c) => c.synced), 'controllers to sync');
}

/** The value of one sample of a metric (labels matched exactly on the ones given). */
export async function metric(registry: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = registry.getSingleMetric(name);
  if (!m) return undefined;
  const { values } = await m.get();
  const found = values.find((v) => Object.entries(labels).every(([k, val]) => String(v.labels[k]) === val) && Object.keys(v.labels).length === Object.keys(labels).length);
  return found?.value;
}

/** A writable stream collecting JSON log lines. */
export class LogCapture extends Writable {
  readonly raw: string[] = [];

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.raw.push(chunk.toString());
    callback();
  }

  /** Everything written so far. */
  text(): string {
    return this.raw.join('');
  }

  /** Every line, parsed (a line that is not JSON fails the test). */
  lines(): Record<string, unknown>[] {
    return this.text()
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

/** A runnable that counts its starts and its stops (it runs until its signal aborts). */
export function probe(): { state: { started: number; stopped: number }; runnable: (signal: AbortSignal) => Promise<void> } {
  const state = { started: 0, stopped: 0 };
  const runnable = async (signal: AbortSignal): Promise<void> => {
    state.started++;
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    state.stopped++;
  };
  return { state, runnable };
}

/** `GET /readyz?verbose` on a manager's probe server: its status and the checks it lists. */
export async function readyz(manager: Manager): Promise<{ status: number; body: string }> {
  const res = await fetch(`${manager.healthUrl!}/readyz?verbose`);
  return { status: res.status, body: await res.text() };
}
