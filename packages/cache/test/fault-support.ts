/**
 * Helpers for the cache's fault tests: a seeded churn of ConfigMaps, a
 * handler that keeps the last state it was told of per key (and checks the
 * event stream is self-consistent), a bounded wait until the cache equals a
 * fresh list from the server, etcd compaction, and a TCP gate that can make
 * every connection through it go silent (a dead network that also stalls
 * streams already open, which the envtest proxy's black hole does not).
 */
import { execFile } from 'node:child_process';
import { createServer, connect } from 'node:net';
import type { Server, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { isAlreadyExists, isNotFound, mergePatch } from '@kubeloop/client';
import type { Client, WithKind, Fetched } from '@kubeloop/client';
import type { Environment } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import type { Informer, ReflectorStats } from '../src/index.js';

/** A ConfigMap as read from the API (apiVersion and kind present). */
export type CM = Fetched<ConfigMap>;

const run = promisify(execFile);

/** A small deterministic PRNG (mulberry32), so a failing churn can be replayed from its seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function configMap(namespace: string, name: string, v: string): WithKind<CM> {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace, name }, data: { v } };
}

export interface ChurnStats {
  creates: number;
  updates: number;
  deletes: number;
  /** Operations that failed (refused by the server, or the server was away). */
  failures: number;
  ops: number;
}

export interface ChurnOptions {
  readonly namespace: string;
  readonly seed: number;
  /** Names the churn picks from: `churn-0` … `churn-<pool-1>`. */
  readonly pool: number;
  /** Operations at least. */
  readonly minOps: number;
  /** Keep going (up to maxOps) until this settles, then do `tailOps` more. */
  readonly until?: Promise<unknown>;
  readonly tailOps?: number;
  /** Hard bound on operations. */
  readonly maxOps: number;
  /** Pause between operations, ms. */
  readonly gapMs: number;
}

/**
 * Create, update and delete ConfigMaps named from a pool, at random (seeded),
 * through `client` (which talks to the API server directly, not through the
 * faults). Errors are counted, never thrown: during an API server restart
 * writes fail, and what matters is what the server ends up holding.
 */
export async function churn(client: Client, options: ChurnOptions): Promise<ChurnStats> {
  const random = seeded(options.seed);
  const stats: ChurnStats = { creates: 0, updates: 0, deletes: 0, failures: 0, ops: 0 };
  const exists = new Set<string>();
  const initial = await client.apiReader.list(ConfigMap, { namespace: options.namespace });
  for (const cm of initial.items) exists.add(cm.metadata!.name!);
  let untilDone = options.until === undefined;
  void options.until?.finally(() => {
    untilDone = true;
  });
  let tail = options.tailOps ?? 5;
  while (stats.ops < options.maxOps) {
    if (stats.ops >= options.minOps && untilDone) {
      if (tail-- <= 0) break;
    }
    stats.ops++;
    const name = `churn-${Math.floor(random() * options.pool)}`;
    const roll = random();
    try {
      if (!exists.has(name)) {
        await client.create(configMap(options.namespace, name, `c${stats.ops}`));
        exists.add(name);
        stats.creates++;
      } else if (roll < 0.65) {
        await client.patch(ConfigMap, { namespace: options.namespace, name }, mergePatch({ data: { v: `u${stats.ops}` } }));
        stats.updates++;
      } else {
        await client.delete(ConfigMap, { namespace: options.namespace, name });
        exists.delete(name);
        stats.deletes++;
      }
    } catch (err) {
      stats.failures++;
      if (isNotFound(err)) exists.delete(name);
      else if (isAlreadyExists(err)) exists.add(name);
    }
    await sleep(options.gapMs);
  }
  return stats;
}

export interface SeenDelete {
  readonly key: string;
  readonly uid: string;
  readonly finalStateUnknown: boolean;
}

/**
 * What a handler was told: per key the last object given by add/update
 * (removed on delete), every delete, and every event that contradicts the
 * ones before it (an add for a key already present, an update or delete of a
 * key absent or of another object, an update whose `old` is not the last state).
 */
export interface HandlerView {
  readonly objects: Map<string, CM>;
  readonly deletes: SeenDelete[];
  readonly violations: string[];
  events: number;
}

function keyOfCM(cm: CM): string {
  return `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
}

export function watchHandlers(informer: Informer<CM>): HandlerView {
  const view: HandlerView = { objects: new Map(), deletes: [], violations: [], events: 0 };
  informer.addEventHandler({
    onAdd: (cm) => {
      view.events++;
      const key = keyOfCM(cm);
      const prev = view.objects.get(key);
      if (prev) view.violations.push(`add of ${key} (uid ${cm.metadata?.uid}) while the handler holds uid ${prev.metadata?.uid}`);
      view.objects.set(key, cm);
    },
    onUpdate: (old, cm) => {
      view.events++;
      const key = keyOfCM(cm);
      const prev = view.objects.get(key);
      if (!prev) view.violations.push(`update of ${key} the handler does not hold`);
      else if (prev.metadata?.resourceVersion !== old.metadata?.resourceVersion || prev.metadata?.uid !== cm.metadata?.uid) {
        view.violations.push(`update of ${key}: old rv ${old.metadata?.resourceVersion}, but the handler last saw rv ${prev.metadata?.resourceVersion}`);
      }
      view.objects.set(key, cm);
    },
    onDelete: (cm, finalStateUnknown) => {
      view.events++;
      const key = keyOfCM(cm);
      const prev = view.objects.get(key);
      if (!prev) view.violations.push(`delete of ${key} the handler does not hold`);
      else if (prev.metadata?.uid !== cm.metadata?.uid) view.violations.push(`delete of ${key} uid ${cm.metadata?.uid}, but the handler holds uid ${prev.metadata?.uid}`);
      view.objects.delete(key);
      view.deletes.push({ key, uid: cm.metadata?.uid ?? '', finalStateUnknown });
    },
  });
  return view;
}

/** `key → resourceVersion` of a set of ConfigMaps. */
function versions(objects: Iterable<CM>): Map<string, string> {
  const out = new Map<string, string>();
  for (const cm of objects) out.set(keyOfCM(cm), cm.metadata?.resourceVersion ?? '');
  return out;
}

/** Human-readable differences between what we hold and what the server holds; empty when equal. */
function diff(what: string, held: Map<string, string>, live: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [key, rv] of live) {
    const mine = held.get(key);
    if (mine === undefined) out.push(`${what} lacks ${key}@${rv}`);
    else if (mine !== rv) out.push(`${what} has ${key}@${mine}, server has @${rv}`);
  }
  for (const [key, rv] of held) if (!live.has(key)) out.push(`${what} still has ${key}@${rv}, gone from the server`);
  return out;
}

function brief(stats: readonly ReflectorStats[]): string {
  return JSON.stringify(stats.map(({ lastError, ...s }) => ({ ...s, lastError: lastError instanceof Error ? lastError.message : lastError })));
}

/**
 * Poll until the informer's store and the handler's view both equal a fresh
 * list of `namespace` from the server (same keys, same resourceVersions).
 * Throws after `timeoutMs` with the differences and the reflector's stats.
 */
export async function waitConverged(
  live: Client,
  informer: Informer<CM>,
  view: HandlerView,
  namespace: string,
  timeoutMs = 30_000,
): Promise<Map<string, string>> {
  const deadline = Date.now() + timeoutMs;
  let problems: string[] = [];
  for (;;) {
    const fresh = versions((await live.apiReader.list(ConfigMap, { namespace })).items);
    const stored = versions([...informer.store.values()].filter((o) => o.metadata?.namespace === namespace));
    problems = [...diff('the store', stored, fresh), ...diff('the handler', versions(view.objects.values()), fresh)];
    if (problems.length === 0) return fresh;
    if (Date.now() > deadline) break;
    await sleep(200);
  }
  throw new Error(
    `the cache did not converge to the server's state of ${namespace} within ${timeoutMs} ms:\n  ${problems.slice(0, 20).join('\n  ')}` +
      `${problems.length > 20 ? `\n  … and ${problems.length - 20} more` : ''}\nreflector stats: ${brief(informer.stats())}`,
  );
}

/** Poll `check` until it is true; throw `message()` after `timeoutMs`. */
export async function waitFor(check: () => boolean, message: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${message()}`);
    await sleep(50);
  }
}

/** Compact etcd at its current revision (what --etcd-compaction-interval does in a real cluster); returns the revision. */
export async function compactEtcd(env: Environment): Promise<number> {
  const endpoint = env.etcdUrl;
  if (!endpoint) throw new Error('compactEtcd needs a local control plane');
  const etcdctl = env.binaries?.etcdctl;
  if (etcdctl) {
    const { stdout } = await run(etcdctl, ['--endpoints', endpoint, 'endpoint', 'status', '-w', 'json']);
    const status = JSON.parse(stdout) as { Status?: { header?: { revision?: number } } }[];
    const revision = status[0]?.Status?.header?.revision;
    if (!revision) throw new Error(`etcdctl endpoint status gave no revision: ${stdout}`);
    await run(etcdctl, ['--endpoints', endpoint, 'compact', String(revision), '--physical']);
    return revision;
  }
  // No etcdctl: etcd's gRPC gateway does the same.
  const range = (await (await fetch(`${endpoint}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) })).json()) as {
    header: { revision: string };
  };
  const res = await fetch(`${endpoint}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: range.header.revision, physical: true }) });
  if (res.status !== 200) throw new Error(`etcd compaction failed: ${res.status} ${await res.text()}`);
  return Number(range.header.revision);
}

/** A TCP pass-through whose connections can all be made to go silent at once. */
export interface TcpGate {
  /** `http://127.0.0.1:<port>` (the gate forwards to an http:// target). */
  readonly url: string;
  /**
   * true: every open connection goes silent for good (bytes are dropped both
   * ways, nothing is closed), and new ones are accepted and silent too.
   * false: new connections pass again; silenced ones stay silent.
   */
  silence(on: boolean): void;
  close(): Promise<void>;
}

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
  dead: boolean;
}

export async function startTcpGate(target: string): Promise<TcpGate> {
  const to = new URL(target);
  const pairs = new Set<Pair>();
  let silent = false;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(to.port), to.hostname);
    const pair: Pair = { client, upstream, dead: silent };
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      if (!pair.dead) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!pair.dead) client.write(chunk);
    });
    // The client giving up always ends the pair; the far side ending is passed on only while alive.
    client.on('close', end);
    client.on('error', end);
    upstream.on('close', () => {
      if (!pair.dead) end();
    });
    upstream.on('error', () => {
      if (!pair.dead) end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    silence: (on) => {
      silent = on;
      if (on) for (const p of pairs) p.dead = true;
    },
    close: async () => {
      for (const p of pairs) {
        p.client.destroy();
        p.upstream.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
