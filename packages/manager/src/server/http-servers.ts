/** The health probe server (/healthz, /readyz) and the metrics server (/metrics). */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { Registry } from 'prom-client';

/** A named check: resolve to pass, throw (or reject) to fail with a reason. */
export type HealthCheck = () => void | Promise<void>;

/** Parse `host:port` (`:8081`, `127.0.0.1:0`). */
export function parseBindAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  const host = i <= 0 ? '0.0.0.0' : address.slice(0, i);
  const port = Number.parseInt(address.slice(i + 1), 10);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad bind address ${JSON.stringify(address)} (want host:port)`);
  return { host, port };
}

function listen(server: Server, address: string): Promise<string> {
  const { host, port } = parseBindAddress(address);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const a = server.address() as { address: string; port: number };
      resolve(`http://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}`);
    });
  });
}

async function runChecks(checks: ReadonlyMap<string, HealthCheck>, exclude: ReadonlySet<string>): Promise<{ ok: boolean; lines: string[] }> {
  const lines: string[] = [];
  let ok = true;
  for (const [name, check] of checks) {
    if (exclude.has(name)) {
      lines.push(`[+]${name} excluded: ok`);
      continue;
    }
    try {
      await check();
      lines.push(`[+]${name} ok`);
    } catch (err) {
      ok = false;
      lines.push(`[-]${name} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return { ok, lines };
}

/** Start the probe server; returns its URL and a closer. */
export async function startHealthServer(address: string, healthz: ReadonlyMap<string, HealthCheck>, readyz: ReadonlyMap<string, HealthCheck>): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://probe');
    const path = url.pathname.replace(/\/+$/, '');
    const set = path === '/healthz' || path.startsWith('/healthz/') ? healthz : path === '/readyz' || path.startsWith('/readyz/') ? readyz : undefined;
    if (!set) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    const sub = path.split('/')[2];
    const checks = sub ? new Map([...set].filter(([n]) => n === sub)) : set;
    if (sub && checks.size === 0) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`no check named ${sub}\n`);
      return;
    }
    const exclude = new Set(url.searchParams.getAll('exclude'));
    void runChecks(checks, exclude).then(({ ok, lines }) => {
      const verbose = url.searchParams.has('verbose') || !ok;
      const body = verbose ? `${lines.join('\n')}\n${path.slice(1)} check ${ok ? 'passed' : 'failed'}\n` : 'ok';
      res.writeHead(ok ? 200 : 500, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(body);
    });
  });
  const url = await listen(server, address);
  return { url, close: () => closeServer(server) };
}

/** Start the metrics server; returns its URL and a closer. */
export async function startMetricsServer(address: string, registry: Registry): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    if ((req.url ?? '/').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err)),
    );
  });
  const url = await listen(server, address);
  return { url, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
