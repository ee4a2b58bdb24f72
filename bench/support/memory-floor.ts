/**
 * The no-framework floor of `pnpm bench:memory`: a plain script that holds
 * every ConfigMap of the cluster from one LIST (a single request, no pages)
 * and a watch from its resourceVersion, parsed with JSON.parse, keyed by
 * namespace/name, `managedFields` dropped (as kubeloop's default transform
 * does). node:https and the kubeconfig's client certificate only.
 *
 *   node support/memory-floor.ts   (env FLOOR_SERVER, FLOOR_CA, FLOOR_CERT, FLOOR_KEY: PEM text)
 *
 * Prints one JSON line when the list is held (`synced`), one per relist
 * (`relisted`), and its memory on SIGUSR2 (`memory`).
 */
import { Agent, request } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { getHeapSpaceStatistics } from 'node:v8';

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`memory-floor: ${name} is not set`);
  return v;
};
const server = new URL(env('FLOOR_SERVER'));
const agent = new Agent({ ca: env('FLOOR_CA'), cert: env('FLOOR_CERT'), key: env('FLOOR_KEY'), keepAlive: true });
const say = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

interface Obj {
  metadata: { name: string; namespace?: string; resourceVersion: string; managedFields?: unknown };
}
const held = new Map<string, Obj>();
const key = (o: Obj): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const keep = (o: Obj): Obj => {
  delete o.metadata.managedFields;
  return o;
};

function get(path: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request({ host: server.hostname, port: server.port, path, agent, headers: { accept: 'application/json' } }, resolve);
    req.on('error', reject);
    req.end();
  });
}

async function list(): Promise<string> {
  const res = await get('/api/v1/configmaps');
  let text = '';
  res.setEncoding('utf8');
  for await (const chunk of res) text += chunk as string;
  if (res.statusCode !== 200) throw new Error(`LIST ${res.statusCode}: ${text.slice(0, 200)}`);
  const body = JSON.parse(text) as { metadata: { resourceVersion: string }; items: Obj[] };
  held.clear();
  for (const o of body.items) held.set(key(o), keep(o));
  return body.metadata.resourceVersion;
}

/** Watch from `rv` until the stream ends; 'gone' on 410. */
async function watch(rv: string): Promise<{ end: 'gone' | 'closed'; rv: string }> {
  const res = await get(`/api/v1/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=600`);
  if (res.statusCode === 410) return { end: 'gone', rv };
  if (res.statusCode !== 200) throw new Error(`WATCH ${res.statusCode}`);
  res.setEncoding('utf8');
  let buffer = '';
  for await (const chunk of res) {
    buffer += chunk as string;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (!line) continue;
      const event = JSON.parse(line) as { type: string; object: Obj & { code?: number } };
      if (event.type === 'ERROR') return { end: event.object.code === 410 ? 'gone' : 'closed', rv };
      rv = event.object.metadata.resourceVersion;
      if (event.type === 'ADDED' || event.type === 'MODIFIED') held.set(key(event.object), keep(event.object));
      else if (event.type === 'DELETED') held.delete(key(event.object));
    }
  }
  return { end: 'closed', rv };
}

process.on('SIGUSR2', () => {
  const m = process.memoryUsage();
  const newSpace = getHeapSpaceStatistics().find((sp) => sp.space_name === 'new_space')?.space_size ?? 0;
  say({ memory: { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, newSpace, external: m.external, arrayBuffers: m.arrayBuffers }, objects: held.size });
});
process.on('SIGTERM', () => process.exit(0));

const started = performance.now();
let rv = await list();
say({ synced: performance.now() - started, objects: held.size });
for (;;) {
  try {
    const { end, rv: last } = await watch(rv);
    rv = last;
    if (end === 'gone') {
      const t0 = performance.now();
      rv = await list();
      say({ relisted: performance.now() - t0, objects: held.size });
    }
  } catch {
    await new Promise((r) => setTimeout(r, 500)); // the API server is restarting: watch again from the same resourceVersion
  }
}
