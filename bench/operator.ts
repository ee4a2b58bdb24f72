/**
 * Operator throughput on a real control plane: the example HardDisk operator
 * (examples/harddisk-operator, imported, not copied) against N HardDisks,
 * every request it makes counted at envtest's proxy by verb and resource,
 * next to a floor measured in the same run.
 *
 * The operator runs in a child process (this file with `--child`, which
 * loads only what the operator needs: the driver's envtest is imported
 * lazily), so its RSS and heap are its own, not the proxy's or this driver's. The driver
 * writes and observes through its own unthrottled client, straight to the
 * API server: it is not counted and not measured.
 *
 *   (a) N HardDisks exist, the operator starts: time until every one is
 *       `Bound` (status seen through a watch).
 *   (b) the operator runs, a client creates N (16 in flight): until all `Bound`.
 *   (c) the client deletes them all (16 in flight): until every ConfigMap
 *       the operator made is gone.
 *   (d) requests per reconcile, by verb and resource: on first reconciles
 *       (during (b)) and in steady state (an operator restarted over N
 *       HardDisks that are already `Bound`).
 *   (e) the operator's RSS and V8 heap (after a full GC) at idle before any
 *       HardDisk exists, and at the end, holding N.
 *   (f) the operator's CPU (user + system of its process) per phase, until it
 *       has settled: for (a) from its start (start-up and sync included), the
 *       median of the `--repeat` runs. On a shared machine the wall-clock
 *       ratios move with the floor's own times; the operator's CPU much less.
 *
 * The floor: a plain script (node's fetch, no framework, in a process of its
 * own as the operator is) that makes exactly the writes the reconciles make,
 * through the same proxy, with the operator's concurrency (one worker, its
 * default): for (a) one list of the disks (the operator too must learn
 * them from the API server), then the finalizer patch, the ConfigMap create, its Event
 * (written in the background, 4 in flight, as the operator's recorder writes
 * it) and the status patch per disk; for (b) the same, each disk as soon as
 * the client's create returns; for (c) the ConfigMap delete, its Event and
 * the finalizer removal, each disk as soon as the client's delete returns.
 * Both are timed by the same watches of the driver: until it sees every disk
 * `Bound` (or every ConfigMap gone). (a) runs `--repeat` times for each, in
 * alternating order, each in a fresh namespace (cleared afterwards, untimed),
 * and its ratio is the median of the pairs' ratios. Prints tables with
 * kubeloop/floor ratios, then one JSON line of the figures.
 *
 *   pnpm bench:operator              (from the repository root, after a build; N = 1000)
 *   pnpm bench:operator --n=200
 *   pnpm bench:operator --read-your-writes=off   (the manager's client without read-your-writes)
 *   pnpm bench:operator --triggers=off           (the controller without trigger attribution: `triggers: false`)
 *   pnpm bench:operator --repeat=5               (pairs of (a), default 3)
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Informer, clientListWatcher } from '@kubeloop/cache';
import { createClient, loadKubeConfig, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import type { RecordedRequest } from '@kubeloop/envtest';
import { createLogger, createManager, TOKENS } from '@kubeloop/manager';
import { ConfigMap, builtinScheme } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { FINALIZER, HardDisk, HardDiskReconciler, harddiskController, setupHardDiskController, StorageClassCatalog } from '@kubeloop/example-harddisk-operator';

const here = dirname(fileURLToPath(import.meta.url));
const GROUP_VERSION = 'crd-demo.io/v1';
const DRIVER_IN_FLIGHT = 16;
const PHASE_DEADLINE_MS = 45 * 60_000;

// --- the operator process ---------------------------------------------------------

interface ChildStats {
  readonly reconciles: number;
  readonly depth: number;
  readonly synced: boolean;
  readonly rss: number;
  readonly heapUsed: number;
  /** CPU the operator process has used since it started (user + system), in ms. */
  readonly cpuMs: number;
  /** Cached reads that waited for the operator's own writes, by outcome (so far). */
  readonly ryw: { readonly cache: number; readonly live: number };
}
type ToChild = { type: 'stats'; gc?: boolean } | { type: 'stop' };
type FromChild = { type: 'starting'; at: number } | ({ type: 'stats' } & ChildStats) | { type: 'error'; message: string };

async function child(kubeconfigPath: string, readYourWrites: boolean, triggers: boolean): Promise<void> {
  const send = (m: FromChild): void => void process.send?.(m);
  const manager = createManager({
    kubeConfig: loadKubeConfig(kubeconfigPath),
    ...(readYourWrites ? {} : { readYourWrites: false }),
    scheme: builtinScheme.extend(HardDisk),
    fieldOwner: 'harddisk-operator',
    // As the example runs (info); the output goes nowhere, its cost stays.
    logger: createLogger({ level: 'info' }),
  });
  if (triggers) setupHardDiskController(manager, 'explicit');
  else manager.register(HardDiskReconciler, { ...harddiskController, options: { triggers: false }, inject: [TOKENS.Client, TOKENS.EventRecorderProvider, StorageClassCatalog] });
  const stop = new AbortController();
  const sum = async (name: string, labels: Record<string, string> = {}): Promise<number> => {
    const metric = manager.registry.getSingleMetric(name);
    if (!metric) return 0;
    const { values } = await metric.get();
    return values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((a, v) => a + v.value, 0);
  };
  process.on('disconnect', () => stop.abort()); // the driver is gone: stop too
  process.on('message', (m: ToChild) => {
    if (m.type === 'stop') {
      stop.abort();
      return;
    }
    void (async () => {
      const gc = (globalThis as { gc?: () => void }).gc;
      if (m.gc && gc) {
        gc();
        await new Promise((r) => setImmediate(r));
        gc();
      }
      const mem = process.memoryUsage();
      send({
        type: 'stats',
        reconciles: await sum('controller_runtime_reconcile_total'),
        depth: await sum('workqueue_depth'),
        synced: manager.controllers().every((c) => c.synced),
        rss: mem.rss,
        heapUsed: mem.heapUsed,
        cpuMs: ((u) => (u.user + u.system) / 1000)(process.cpuUsage()),
        ryw: {
          cache: await sum('kubeloop_client_read_your_writes_total', { outcome: 'cache' }),
          live: await sum('kubeloop_client_read_your_writes_total', { outcome: 'live' }),
        },
      });
    })();
  });
  send({ type: 'starting', at: Date.now() });
  try {
    await manager.start(stop.signal);
  } catch (err) {
    send({ type: 'error', message: String(err) });
  }
  process.exit(0);
}

// --- the floor process ------------------------------------------------------------

type ToFloor =
  | { type: 'a'; ns: string; n: number }
  | { type: 'b'; ns: string; n: number }
  | { type: 'c'; ns: string; n: number }
  | { type: 'drain' };
type FromFloor = { type: 'done' } | { type: 'error'; message: string };

const diskName = (i: number): string => `disk-${String(i).padStart(5, '0')}`;
const diskObject = (ns: string, i: number): HardDisk & { apiVersion: 'crd-demo.io/v1'; kind: 'HardDisk' } => ({
  apiVersion: GROUP_VERSION,
  kind: 'HardDisk',
  metadata: { name: diskName(i), namespace: ns },
  spec: { size: `${10 + (i % 90)}Gi`, storageClass: i % 2 ? 'fast' : 'standard' },
});

/**
 * The floor: node's fetch and nothing else, in a process of its own as the
 * operator is (so neither shares a thread with the proxy or the driver's
 * watches). It makes a phase's writes when the driver asks; the driver times
 * the phase by its watches, as it times the operator's.
 */
function floorProcess(proxyUrl: string): void {
  const name = diskName;
  const call = async (method: string, path: string, body: unknown, contentType = 'application/json'): Promise<Record<string, unknown>> => {
    const res = await fetch(`${proxyUrl}${path}`, { method, headers: { 'content-type': contentType, accept: 'application/json' }, body: JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const MERGE = 'application/merge-patch+json';
  const paths = (ns: string) => ({
    disks: `/apis/${GROUP_VERSION}/namespaces/${ns}/harddisks`,
    configMaps: `/api/v1/namespaces/${ns}/configmaps`,
    events: `/apis/events.k8s.io/v1/namespaces/${ns}/events`,
  });
  /**
   * The Events the reconciles record ("Provisioned", "Released"), written as
   * the operator's recorder writes them: in the background, at most 4 in
   * flight (the recorder's default concurrency), never waited for by a reconcile.
   */
  const eventQueue: (() => Promise<unknown>)[] = [];
  let eventsInFlight = 0;
  let eventsIdle: (() => void) | undefined;
  const pumpEvents = (): void => {
    while (eventsInFlight < 4 && eventQueue.length > 0) {
      const write = eventQueue.shift()!;
      eventsInFlight++;
      void write()
        .catch((err: unknown) => process.stderr.write(`[bench:operator floor] event: ${String(err)}\n`))
        .finally(() => {
          eventsInFlight--;
          pumpEvents();
          if (eventsInFlight === 0 && eventQueue.length === 0) eventsIdle?.();
        });
    }
  };
  const recordEvent = (ns: string, i: number, uid: string, reason: 'Provisioned' | 'Released', note: string): void => {
    const at = new Date().toISOString().replace('Z', '000Z');
    eventQueue.push(() =>
      call('POST', paths(ns).events, {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: `${name(i)}.${reason.toLowerCase()}${Date.now().toString(16)}`, namespace: ns },
        eventTime: at,
        reportingController: 'harddisk-controller',
        reportingInstance: 'bench-floor',
        action: reason === 'Released' ? 'Finalize' : 'Reconcile',
        reason,
        type: 'Normal',
        note,
        regarding: { apiVersion: GROUP_VERSION, kind: 'HardDisk', namespace: ns, name: name(i), ...(uid ? { uid } : {}) },
      }),
    );
    pumpEvents();
  };
  const eventsDrained = (): Promise<void> =>
    eventsInFlight === 0 && eventQueue.length === 0 ? Promise.resolve() : new Promise<void>((r) => (eventsIdle = r));
  /** The writes of a first reconcile, for one disk: finalizer, ConfigMap, its Event (in the background), status. */
  const reconcileWrites = async (ns: string, i: number, uid: string): Promise<void> => {
    const d = diskObject(ns, i);
    const p = paths(ns);
    await call('PATCH', `${p.disks}/${name(i)}`, { metadata: { finalizers: [FINALIZER] } }, MERGE);
    await call('POST', p.configMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `${name(i)}-disk`,
        namespace: ns,
        labels: { 'crd-demo.io/disk': name(i) },
        ownerReferences: [{ apiVersion: GROUP_VERSION, kind: 'HardDisk', name: name(i), uid, controller: true, blockOwnerDeletion: true }],
      },
      data: { size: d.spec!.size, storageClass: d.spec!.storageClass!, medium: 'ssd', iops: '16000' },
    });
    recordEvent(ns, i, uid, 'Provisioned', `ConfigMap ${name(i)}-disk created`);
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await call(
      'PATCH',
      `${p.disks}/${name(i)}/status`,
      {
        status: {
          phase: 'Bound',
          configMapName: `${name(i)}-disk`,
          observedGeneration: 1,
          conditions: [{ type: 'Ready', status: 'True', reason: 'Provisioned', message: `ConfigMap ${name(i)}-disk`, observedGeneration: 1, lastTransitionTime: now }],
        },
      },
      MERGE,
    );
  };
  /** A single worker taking disks as the producer hands them over (the operator's one reconcile worker). */
  const worker = (work: (i: number, uid: string) => Promise<void>) => {
    const queue: { i: number; uid: string }[] = [];
    let wake: (() => void) | undefined;
    let closed = false;
    const done = (async () => {
      for (;;) {
        const next = queue.shift();
        if (next) {
          await work(next.i, next.uid);
          continue;
        }
        if (closed) return;
        await new Promise<void>((r) => (wake = r));
      }
    })();
    return {
      add: (i: number, uid: string) => {
        queue.push({ i, uid });
        wake?.();
      },
      close: () => {
        closed = true;
        wake?.();
        return done;
      },
    };
  };
  const created = (o: Record<string, unknown>): string => String((o['metadata'] as { uid?: string }).uid);

  const phase = async (m: ToFloor): Promise<void> => {
    if (m.type === 'drain') return eventsDrained();
    const p = paths(m.ns);
    if (m.type === 'a') {
      // As the operator must, it learns the disks from the API server first: one list.
      const list = (await (await fetch(`${proxyUrl}${p.disks}`, { headers: { accept: 'application/json' } })).json()) as { items: { metadata: { name: string; uid: string } }[] };
      const uids = new Map(list.items.map((d) => [d.metadata.name, d.metadata.uid]));
      for (let i = 0; i < m.n; i++) await reconcileWrites(m.ns, i, uids.get(name(i))!);
      return;
    }
    if (m.type === 'b') {
      const w = worker((i, uid) => reconcileWrites(m.ns, i, uid));
      await pool(m.n, DRIVER_IN_FLIGHT, async (i) => w.add(i, created(await call('POST', p.disks, diskObject(m.ns, i)))));
      await w.close();
      return;
    }
    const w = worker(async (i) => {
      await call('DELETE', `${p.configMaps}/${name(i)}-disk`, {});
      recordEvent(m.ns, i, '', 'Released', `released ConfigMap ${name(i)}-disk`);
      await call('PATCH', `${p.disks}/${name(i)}`, { metadata: { finalizers: null } }, MERGE);
    });
    await pool(m.n, DRIVER_IN_FLIGHT, async (i) => {
      await call('DELETE', `${p.disks}/${name(i)}`, {});
      w.add(i, '');
    });
    await w.close();
  };
  let chain = Promise.resolve();
  process.on('message', (m: ToFloor) => {
    chain = chain.then(() =>
      phase(m).then(
        () => void process.send?.({ type: 'done' } satisfies FromFloor),
        (err: unknown) => void process.send?.({ type: 'error', message: String(err) } satisfies FromFloor),
      ),
    );
  });
  process.on('disconnect', () => process.exit(0));
}

// --- the driver -------------------------------------------------------------------

function param(name: string, fallback: string): string {
  const flag = process.argv.find((a) => a.startsWith(`--${name}=`));
  return flag?.slice(name.length + 3) ?? fallback;
}

/** Run fn(0..count-1) with at most `limit` in flight. */
async function pool(count: number, limit: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

async function until(what: string, ok: () => boolean, timeoutMs = PHASE_DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `GET /…/harddisks?watch=true` → `WATCH harddisks`; `PATCH /…/harddisks/x/status` → `PATCH harddisks/status`. */
function classify(r: RecordedRequest): { verb: string; resource: string } {
  const parts = r.path.split('/').filter(Boolean);
  let rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  if (rest.length === 0) return { verb: r.method, resource: 'discovery' }; // /api, /apis, /api/v1, /apis/<group>/<version>
  const [resource = '?', name, sub] = rest;
  const watch = r.url.includes('watch=true') || r.url.includes('watch=1');
  const verb =
    r.method === 'GET' ? (watch ? 'WATCH' : name === undefined ? 'LIST' : 'GET') : r.method === 'POST' ? 'CREATE' : r.method === 'PUT' ? 'UPDATE' : r.method;
  return { verb, resource: sub ? `${resource}/${sub}` : resource };
}

type Counts = Map<string, number>;
function tally(requests: readonly RecordedRequest[]): Counts {
  const out: Counts = new Map();
  for (const r of requests) {
    const { verb, resource } = classify(r);
    const key = `${verb} ${resource}`;
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

const s = (ms: number): number => Number((ms / 1000).toFixed(2));
const mib = (bytes: number): number => Number((bytes / 1048576).toFixed(1));

async function main(): Promise<void> {
  const N = Math.max(1, Number.parseInt(param('n', '1000'), 10));
  const REPEAT = Math.max(1, Number.parseInt(param('repeat', '3'), 10));
  const started = Date.now();
  const log = (line: string): void => void process.stderr.write(`[bench:operator +${s(Date.now() - started)}s] ${line}\n`);

  // Loaded here, not at the top: the operator process (this file with --child) must not carry it.
  const { createEnvironment, startApiProxy } = await import('@kubeloop/envtest');
  const env = createEnvironment({ crds: [join(here, '..', 'examples', 'harddisk-operator', 'crd')] });
  await env.start();
  const proxy = await startApiProxy(env.kubeConfig);
  const work = mkdtempSync(join(tmpdir(), 'kubeloop-bench-operator-'));
  const proxyKubeconfig = join(work, 'kubeconfig');
  writeFileSync(
    proxyKubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'proxy', cluster: { server: proxy.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'proxy', user: {} }],
      contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'proxy' } }],
      'current-context': 'proxy',
    }),
  );
  const scheme = builtinScheme.extend(HardDisk);
  const driver: Client = createClient({ kubeConfig: env.kubeConfig, scheme, fieldOwner: 'bench-driver', transportOptions: { qps: 0 } });
  const namespace = 'bench';
  await driver.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });

  // What the driver sees, through watches (its own informers, straight to the API server, in every
  // namespace): the operator's phases and the floor's are observed alike, by the same watches.
  const disks = new Informer<KubeObject>([{ lw: clientListWatcher(driver, HardDisk, {}), namespace: '' }], { unsafeDisableDeepFreeze: true });
  const configMaps = new Informer<KubeObject>([{ lw: clientListWatcher(driver, ConfigMap, { labelSelector: 'crd-demo.io/disk' }), namespace: '' }], {
    unsafeDisableDeepFreeze: true,
  });
  disks.start();
  configMaps.start();
  await Promise.all([disks.waitForSync(), configMaps.waitForSync()]);
  const count = (informer: Informer<KubeObject>, ns: string, ok: (o: KubeObject) => boolean = () => true): number => {
    let n = 0;
    for (const o of informer.store.values()) if (o.metadata?.namespace === ns && ok(o)) n++;
    return n;
  };
  const bound = (ns = namespace): number => count(disks, ns, (d) => (d as HardDisk).status?.phase === 'Bound');

  const name = diskName;
  const disk = diskObject;

  // --- operator processes ---
  interface Operator {
    readonly process: ChildProcess;
    readonly startedAt: Promise<number>;
    stats(gc?: boolean): Promise<ChildStats>;
    stop(): Promise<void>;
  }
  const startOperator = (): Operator => {
    const proc = fork(fileURLToPath(import.meta.url), ['--child', proxyKubeconfig, param('read-your-writes', 'on'), param('triggers', 'on')], {
      // OPERATOR_NODE_FLAGS: extra node flags for the operator process (e.g. --max-semi-space-size=1).
      execArgv: ['--expose-gc', ...(process.env['OPERATOR_NODE_FLAGS']?.split(' ').filter(Boolean) ?? [])],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    let onStarting!: (at: number) => void;
    const startedAt = new Promise<number>((r) => (onStarting = r));
    const waiting: ((s: ChildStats) => void)[] = [];
    proc.on('message', (m: FromChild) => {
      if (m.type === 'starting') onStarting(m.at);
      else if (m.type === 'stats') waiting.shift()?.(m);
      else log(`operator: ${m.message}`);
    });
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    return {
      process: proc,
      startedAt,
      stats: (gc = false) =>
        new Promise<ChildStats>((resolve) => {
          waiting.push(resolve);
          proc.send({ type: 'stats', gc } satisfies ToChild);
        }),
      stop: async () => {
        proc.send({ type: 'stop' } satisfies ToChild);
        await exited;
      },
    };
  };
  /** Until the operator's controller has synced, its queue is empty and no reconcile happened for a second. */
  const settle = async (op: Operator): Promise<ChildStats> => {
    let last = await op.stats();
    let quietSince = Date.now();
    for (;;) {
      await new Promise((r) => setTimeout(r, 250));
      const now = await op.stats();
      if (!now.synced || now.depth > 0 || now.reconciles !== last.reconciles) quietSince = Date.now();
      last = now;
      if (Date.now() - quietSince >= 1000) return now;
    }
  };

  const phases: Record<string, { ms: number; cpuMs: number; requests: Counts; reconciles: number; total: number; readYourWrites: { cache: number; live: number } }> = {};
  /** The operator's read-your-writes counts at the start of the phase. */
  let rywBase = { cache: 0, live: 0 };
  const record = (phase: string, ms: number, reconciles: number, now: ChildStats, cpuMs: number): void => {
    const requests = tally(proxy.requests);
    const ryw = { cache: now.ryw.cache - rywBase.cache, live: now.ryw.live - rywBase.live };
    rywBase = now.ryw;
    phases[phase] = { ms, cpuMs, requests, reconciles, total: proxy.requests.length, readYourWrites: ryw };
    log(`${phase}: ${s(ms)} s, operator CPU ${s(cpuMs)} s, ${proxy.requests.length} requests, ${reconciles} reconciles; reads that waited for own writes: ${ryw.cache} served by the cache, ${ryw.live} live`);
  };

  // (e) idle, before any HardDisk.
  let op = startOperator();
  let stats = await settle(op);
  const idle = await op.stats(true);
  log(`idle: rss ${mib(idle.rss)} MiB, heap ${mib(idle.heapUsed)} MiB`);

  // (b) N created while it runs.
  proxy.clearRequests();
  let before = stats.reconciles;
  let t0 = performance.now();
  await pool(N, DRIVER_IN_FLIGHT, (i) => driver.create(disk(namespace, i)));
  await until('all Bound (b)', () => bound() === N);
  const b = performance.now() - t0;
  // from the idle reading, which came after its forced GC: that GC is not (b)'s
  const cpuB = idle.cpuMs;
  stats = await settle(op);
  record('b', b, stats.reconciles - before, stats, stats.cpuMs - cpuB);

  // (c) all deleted.
  proxy.clearRequests();
  before = stats.reconciles;
  t0 = performance.now();
  await pool(N, DRIVER_IN_FLIGHT, (i) => driver.delete(HardDisk, { namespace, name: name(i) }));
  await until('all ConfigMaps gone (c)', () => count(configMaps, namespace) === 0);
  const c = performance.now() - t0;
  await until('all HardDisks gone (c)', () => count(disks, namespace) === 0);
  const cpuC = stats.cpuMs;
  stats = await settle(op);
  record('c', c, stats.reconciles - before, stats, stats.cpuMs - cpuC);
  await op.stop();

  /** Create N disks in `ns` (untimed) and wait until the driver has seen them all. */
  const seed = async (ns: string): Promise<string[]> => {
    await driver.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const uids: string[] = [];
    await pool(N, DRIVER_IN_FLIGHT, async (i) => void (uids[i] = (await driver.create(disk(ns, i))).metadata.uid!));
    await until(`all created in ${ns}`, () => count(disks, ns) === N);
    return uids;
  };
  /** Remove `ns`'s disks and ConfigMaps (untimed; envtest runs no garbage collector): finalizers off, then delete. */
  const cleanup = async (ns: string): Promise<void> => {
    await pool(N, DRIVER_IN_FLIGHT, (i) => driver.patch(HardDisk, { namespace: ns, name: name(i) }, mergePatch({ metadata: { finalizers: null } })));
    await driver.deleteAllOf(HardDisk, { namespace: ns });
    await driver.deleteAllOf(ConfigMap, { namespace: ns, labelSelector: 'crd-demo.io/disk' });
    await until(`${ns} emptied`, () => count(disks, ns) === 0 && count(configMaps, ns) === 0);
  };

  /** (a) for kubeloop: N exist in `ns`, then the operator starts; until all Bound. With `steady`, (d) follows over the same disks. */
  const operatorA = async (ns: string, steady: boolean): Promise<number> => {
    await seed(ns);
    proxy.clearRequests();
    op = startOperator();
    rywBase = { cache: 0, live: 0 };
    const aStart = await op.startedAt;
    await until('all Bound (a)', () => bound(ns) === N);
    const a = Date.now() - aStart;
    stats = await settle(op);
    aCpu.push(stats.cpuMs);
    if (!phases['a']) record('a', a, stats.reconciles, stats, stats.cpuMs);
    else log(`a (${ns}): ${s(a)} s, operator CPU ${s(stats.cpuMs)} s`);
    await op.stop();
    if (steady) {
      // (d) steady state: restarted over N HardDisks that need nothing.
      proxy.clearRequests();
      op = startOperator();
      rywBase = { cache: 0, live: 0 };
      const dStart = await op.startedAt;
      const steadyDeadline = Date.now() + PHASE_DEADLINE_MS;
      stats = await settle(op);
      while (stats.reconciles < N) {
        if (Date.now() > steadyDeadline) throw new Error(`timed out waiting for ${N} steady-state reconciles (${stats.reconciles})`);
        stats = await settle(op);
      }
      record('steady', Date.now() - dStart, stats.reconciles, stats, stats.cpuMs);
      end = await op.stats(true);
      log(`end: rss ${mib(end.rss)} MiB, heap ${mib(end.heapUsed)} MiB`);
      await op.stop();
    }
    await cleanup(ns);
    return a;
  };
  let end: ChildStats | undefined;
  /** The operator's CPU in each (a), from its start until it settled (its start-up and sync included). */
  const aCpu: number[] = [];

  // --- the floor: the same writes, no framework, through the same proxy, from a process of its own ---
  const floorProc = fork(fileURLToPath(import.meta.url), ['--floor', proxy.url], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const floorReplies: ((m: FromFloor) => void)[] = [];
  floorProc.on('message', (m: FromFloor) => floorReplies.shift()?.(m));
  /** Ask the floor process to do a phase's writes; resolves when it has made them (its Events may still be in flight). */
  const floor = (m: ToFloor): Promise<FromFloor> =>
    new Promise<FromFloor>((resolve, reject) => {
      floorReplies.push((reply) => (reply.type === 'error' ? reject(new Error(`floor: ${reply.message}`)) : resolve(reply)));
      floorProc.send(m);
    });
  let floorNs = 'bench-floor';
  await driver.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: floorNs } });

  // floor (b): creates (16 in flight), each followed by its reconcile's writes in one worker.
  proxy.clearRequests();
  t0 = performance.now();
  await floor({ type: 'b', ns: floorNs, n: N });
  await until('all Bound (floor b)', () => bound(floorNs) === N);
  const floorB = performance.now() - t0;
  await floor({ type: 'drain' });
  const floorBRequests = proxy.requests.length;

  // floor (c): deletes (16 in flight), each followed by the ConfigMap delete, its Event and the finalizer removal.
  t0 = performance.now();
  await floor({ type: 'c', ns: floorNs, n: N });
  await until('all ConfigMaps gone (floor c)', () => count(configMaps, floorNs) === 0);
  const floorC = performance.now() - t0;
  await floor({ type: 'drain' });
  await until('all HardDisks gone (floor c)', () => count(disks, floorNs) === 0);

  /** (a) for the floor: N exist in `ns`, then the writes, one worker; until the driver sees all Bound. */
  const floorA = async (ns: string): Promise<number> => {
    await seed(ns);
    floorNs = ns;
    t0 = performance.now();
    await floor({ type: 'a', ns, n: N });
    await until('all Bound (floor a)', () => bound(ns) === N);
    const ms = performance.now() - t0;
    await floor({ type: 'drain' });
    await cleanup(ns);
    return ms;
  };

  // (a), kubeloop and the floor in alternating order, `--repeat` pairs (default 3): the API server's
  // speed drifts during a run on a shared machine, so each pair is compared, and the median ratio reported.
  const pairs: { kubeloop: number; floor: number }[] = [];
  for (let r = 0; r < REPEAT; r++) {
    const operatorFirst = r % 2 === 0;
    let k = 0;
    let f = 0;
    if (operatorFirst) k = await operatorA(`bench-a${r}`, r === 0);
    f = await floorA(`bench-a${r}-floor`);
    if (!operatorFirst) k = await operatorA(`bench-a${r}`, false);
    pairs.push({ kubeloop: k, floor: f });
    log(`(a) pair ${r + 1}/${REPEAT}: kubeloop ${s(k)} s, floor ${s(f)} s, ${(k / f).toFixed(2)}x`);
  }
  const median = (xs: number[]): number => {
    const sorted = [...xs].sort((x, y) => x - y);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  const aRatio = median(pairs.map((p) => p.kubeloop / p.floor));
  phases['a']!.ms = median(pairs.map((p) => p.kubeloop));
  phases['a']!.cpuMs = median(aCpu);
  const floorAms = median(pairs.map((p) => p.floor));
  floorProc.disconnect();
  await disks.stop();
  await configMaps.stop();

  await proxy.close();
  await env.stop();
  rmSync(work, { recursive: true, force: true });

  // --- report ---
  const ratio = (x: number, y: number): string => (y > 0 ? `${(x / y).toFixed(2)}x` : '-');
  const rows = [
    [`(a) start with N existing -> all Bound (median of ${REPEAT})`, phases['a']!.ms, floorAms, `${aRatio.toFixed(2)}x`, phases['a']!.cpuMs],
    ['(b) N created while running -> all Bound', phases['b']!.ms, floorB, ratio(phases['b']!.ms, floorB), phases['b']!.cpuMs],
    ['(c) all deleted -> all ConfigMaps gone', phases['c']!.ms, floorC, ratio(phases['c']!.ms, floorC), phases['c']!.cpuMs],
  ] as const;
  const out: string[] = [];
  out.push(`\nOperator throughput, N = ${N} HardDisks (envtest; operator: examples/harddisk-operator with default options, one worker)\n`);
  out.push('| phase | kubeloop s | floor s | kubeloop/floor | operator CPU s |');
  out.push('|---|---:|---:|---:|---:|');
  for (const [label, k, f, r, cpu] of rows) out.push(`| ${label} | ${s(k)} | ${s(f)} | ${r} | ${s(cpu)} |`);
  out.push(`\nOperator CPU: user + system of its process over the phase until it settled; (a)'s from its start (start-up and sync included), the median of the ${REPEAT} runs.\n`);
  out.push('');
  out.push('(a) pair by pair (odd pairs: kubeloop first; even: the floor first); the (a) ratio above is the median of these:\n');
  out.push('| pair | kubeloop s | floor s | kubeloop/floor |');
  out.push('|---|---:|---:|---:|');
  pairs.forEach((p, i) => out.push(`| ${i + 1} | ${s(p.kubeloop)} | ${s(p.floor)} | ${ratio(p.kubeloop, p.floor)} |`));
  out.push('');
  out.push('Requests by verb and resource (operator, at the proxy):\n');
  const keys = [...new Set(Object.values(phases).flatMap((p) => [...p.requests.keys()]))].sort();
  out.push('| request | (b) first reconciles | per disk | per reconcile | steady state | per reconcile | (a) | (c) |');
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  const per = (n: number | undefined, d: number): string => (d > 0 ? ((n ?? 0) / d).toFixed(2) : '-');
  const pb = phases['b']!;
  const ps = phases['steady']!;
  for (const k of keys) {
    out.push(
      `| ${k} | ${pb.requests.get(k) ?? 0} | ${per(pb.requests.get(k), N)} | ${per(pb.requests.get(k), pb.reconciles)} | ${ps.requests.get(k) ?? 0} | ${per(ps.requests.get(k), ps.reconciles)} | ${phases['a']!.requests.get(k) ?? 0} | ${phases['c']!.requests.get(k) ?? 0} |`,
    );
  }
  out.push(`| all | ${pb.total} | ${per(pb.total, N)} | ${per(pb.total, pb.reconciles)} | ${ps.total} | ${per(ps.total, ps.reconciles)} | ${phases['a']!.total} | ${phases['c']!.total} |`);
  out.push(`| reconciles | ${pb.reconciles} | ${per(pb.reconciles, N)} | | ${ps.reconciles} | | ${phases['a']!.reconciles} | ${phases['c']!.reconciles} |`);
  const ryw = (p: string): string => `${phases[p]!.readYourWrites.cache} / ${phases[p]!.readYourWrites.live}`;
  out.push(`| reads that waited for own writes: cache / live | ${ryw('b')} | | | ${ryw('steady')} | | ${ryw('a')} | ${ryw('c')} |`);
  out.push(`\nFloor requests in (b): ${floorBRequests} (${per(floorBRequests, N)} per disk, the client's creates included).\n`);
  out.push('| operator memory | RSS MiB | heap MiB (after GC) |');
  out.push('|---|---:|---:|');
  out.push(`| idle, no HardDisk | ${mib(idle.rss)} | ${mib(idle.heapUsed)} |`);
  out.push(`| end, ${N} HardDisks cached | ${mib(end!.rss)} | ${mib(end!.heapUsed)} |`);
  process.stdout.write(`${out.join('\n')}\n\n`);
  process.stdout.write(
    `${JSON.stringify({
      bench: 'operator',
      n: N,
      triggers: param('triggers', 'on'),
      seconds: { a: s(phases['a']!.ms), b: s(phases['b']!.ms), c: s(phases['c']!.ms), floorA: s(floorAms), floorB: s(floorB), floorC: s(floorC) },
      ratioA: Number(aRatio.toFixed(3)),
      cpuSeconds: { a: s(phases['a']!.cpuMs), b: s(phases['b']!.cpuMs), c: s(phases['c']!.cpuMs), steady: s(phases['steady']!.cpuMs) },
      pairsA: pairs.map((p) => ({ kubeloop: s(p.kubeloop), floor: s(p.floor) })),
      requests: Object.fromEntries(Object.entries(phases).map(([k, p]) => [k, { reconciles: p.reconciles, total: p.total, byVerb: Object.fromEntries(p.requests), readYourWrites: p.readYourWrites }])),
      memoryMiB: { idleRss: mib(idle.rss), idleHeap: mib(idle.heapUsed), endRss: mib(end!.rss), endHeap: mib(end!.heapUsed) },
    })}\n`,
  );
}

if (process.argv[2] === '--child') {
  await child(process.argv[3]!, process.argv[4] !== 'off', process.argv[5] !== 'off');
} else if (process.argv[2] === '--floor') {
  floorProcess(process.argv[3]!);
} else {
  await main();
}
