/**
 * A loopback HTTP server that speaks just enough of the Kubernetes API for a
 * reflector over ConfigMaps: legacy discovery for `v1`, then LIST and WATCH
 * answered by handlers the test writes, byte by byte. It exists for what a
 * real API server will not do on request: stall a body half-way, answer 500
 * with headers and no body, send the same continue token twice, keep a
 * stream alive with blank lines and never an event. Real-server behaviour is
 * tested against envtest.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, loadKubeConfig } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';

type KubeConfig = ReturnType<typeof loadKubeConfig>;

/** One request the server saw. */
export interface SeenRequest {
  readonly kind: 'list' | 'watch' | 'other';
  readonly path: string;
  readonly query: URLSearchParams;
  readonly at: number;
  /** 1-based count of requests of this kind so far. */
  readonly n: number;
}

/** Answers one LIST or WATCH: write whatever bytes the test needs (or none). */
export type Responder = (res: ServerResponse, req: SeenRequest) => void;

export interface LoopbackApi {
  readonly url: string;
  readonly kubeConfig: KubeConfig;
  /** A client over this server (no client-side rate limit). */
  readonly client: Client;
  readonly requests: readonly SeenRequest[];
  count(kind: SeenRequest['kind']): number;
  /** Replace how LISTs are answered. */
  onList(responder: Responder): void;
  /** Replace how WATCHes are answered. */
  onWatch(responder: Responder): void;
  close(): Promise<void>;
}

/** A ConfigMap as the server would send it. */
export function cm(name: string, resourceVersion: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion },
    ...extra,
  };
}

/** Answer a LIST page with `items`. */
export function sendList(res: ServerResponse, items: readonly unknown[], resourceVersion: string, cont?: string): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion, ...(cont ? { continue: cont } : {}) }, items }));
}

/** Start a watch answer (200, chunked) without ending it. */
export function openWatch(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
  res.flushHeaders();
}

/** One watch line. */
export function watchLine(type: string, object: unknown): string {
  return `${JSON.stringify({ type, object })}\n`;
}

/** A watch that stays open and silent: what a quiet, healthy namespace looks like (until the idle deadline). */
export const quietWatch: Responder = (res) => openWatch(res);

export async function startLoopbackApi(): Promise<LoopbackApi> {
  const requests: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  let list: Responder = (res) => sendList(res, [], '1');
  let watch: Responder = quietWatch;
  const counts = { list: 0, watch: 0, other: 0 };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://loopback');
    const path = url.pathname;
    const json = (body: unknown): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path === '/api') return json({ kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (path === '/apis') return json({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
    if (path === '/api/v1') {
      return json({
        kind: 'APIResourceList',
        groupVersion: 'v1',
        resources: [{ name: 'configmaps', singularName: 'configmap', namespaced: true, kind: 'ConfigMap', verbs: ['get', 'list', 'watch'] }],
      });
    }
    const kind = path.endsWith('/configmaps') ? (url.searchParams.get('watch') === 'true' ? 'watch' : 'list') : 'other';
    const seen: SeenRequest = { kind, path, query: url.searchParams, at: Date.now(), n: ++counts[kind] };
    requests.push(seen);
    if (kind === 'list') return list(res, seen);
    if (kind === 'watch') return watch(res, seen);
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 }));
  };

  const server = createServer(handler);
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'kubeloop-loopback-'));
  const file = join(dir, 'kubeconfig');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'loopback', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'loopback', user: {} }],
      contexts: [{ name: 'loopback', context: { cluster: 'loopback', user: 'loopback' } }],
      'current-context': 'loopback',
    }),
  );
  const kubeConfig = loadKubeConfig(file);
  rmSync(dir, { recursive: true, force: true });
  const client = createClient({ kubeConfig, transportOptions: { qps: 0 } });
  return {
    url,
    kubeConfig,
    client,
    requests,
    count: (kind) => requests.filter((r) => r.kind === kind).length,
    onList: (r) => {
      list = r;
    },
    onWatch: (r) => {
      watch = r;
    },
    close: async () => {
      client.transport.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Poll until `check` holds; fail with `what` after `timeoutMs`. */
export async function eventually(check: () => boolean, what: () => string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
