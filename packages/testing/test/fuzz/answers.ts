/**
 * How the differential fuzzer reads one backend's answer to a step: a
 * buffered request, every page of a list, or the first events of a watch.
 */
import { parse as parseYaml } from 'yaml';
import type { Client } from '@kubeloop/client';
import type { RawAnswer, RawRequest } from './requests.js';

/** A backend: the fake or envtest. */
export interface Backend {
  readonly name: 'fake' | 'envtest';
  readonly client: Client;
  /** The last resourceVersion seen per object path, to tell whether a write changed it. */
  readonly rvs: Map<string, string>;
}

/** One request, its answer buffered. */
export async function send(b: Backend, r: RawRequest): Promise<RawAnswer> {
  const res = await b.client.transport.request({
    method: r.method,
    path: r.path,
    ...(r.query && Object.keys(r.query).length > 0 ? { query: r.query } : {}),
    ...(r.body === undefined ? {} : { body: r.body }),
    ...(r.contentType ? { contentType: r.contentType } : {}),
    ...(r.accept ? { accept: r.accept } : {}),
  });
  const type = (res.headers['content-type'] ?? '').split(';')[0]!.trim();
  let body: unknown;
  try {
    body = type === 'application/yaml' ? parseYaml(res.body) : JSON.parse(res.body);
  } catch {
    body = { text: res.body };
  }
  const w = res.headers['warning'];
  return { status: res.status, body, warning: Array.isArray(w) ? w.join(', ') : w, ...(r.accept ? { contentType: type } : {}) };
}

/**
 * A watch opened by a step: its answer is the status and the events that
 * arrive until the `k8s.io/initial-events-end` bookmark, or until the
 * stream is quiet (`quietMs`), at most 3 s; other bookmarks are left out.
 */
export async function watchAnswer(b: Backend, r: RawRequest, quietMs: number): Promise<RawAnswer> {
  const res = await b.client.transport.stream({ method: 'GET', path: r.path, ...(r.query ? { query: r.query } : {}) });
  const w = res.headers['warning'];
  const warning = Array.isArray(w) ? w.join(', ') : w;
  if ((res.statusCode ?? 0) !== 200) {
    let text = '';
    for await (const chunk of res) text += String(chunk);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = { text };
    }
    return { status: res.statusCode ?? 0, body, warning };
  }
  const events: { type: string; object: unknown }[] = [];
  await new Promise<void>((resolve) => {
    let buffer = '';
    let quiet: NodeJS.Timeout | undefined;
    const stop = (): void => {
      clearTimeout(quiet);
      clearTimeout(cap);
      res.destroy();
      resolve();
    };
    const cap = setTimeout(stop, 3000);
    const rearm = (): void => {
      clearTimeout(quiet);
      quiet = setTimeout(stop, quietMs);
    };
    rearm();
    res.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line === '') continue;
        const e = JSON.parse(line) as { type: string; object: { metadata?: { annotations?: Record<string, string> } } };
        const end = e.type === 'BOOKMARK' && e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true';
        if (e.type !== 'BOOKMARK' || end) events.push(e);
        if (end) return stop();
      }
      rearm();
    });
    res.on('end', stop);
    res.on('error', stop);
  });
  return { status: 200, body: { events }, warning };
}

/** Every page of a list, following `continue`: the items of all pages, with the last page's metadata. */
export async function allPages(b: Backend, r: RawRequest): Promise<RawAnswer> {
  const items: unknown[] = [];
  let query = r.query ?? {};
  for (let page = 0; ; page++) {
    const a = await send(b, { ...r, query });
    const body = a.body as { items?: unknown[]; metadata?: { continue?: string } };
    if (a.status !== 200 || !Array.isArray(body.items)) return a;
    items.push(...body.items);
    const next = body.metadata?.continue;
    if (!next || page > 20) return { ...a, body: { ...body, items, metadata: { ...body.metadata, continue: undefined } } };
    const { resourceVersion: _rv, resourceVersionMatch: _m, ...rest } = query;
    query = { ...rest, continue: next };
  }
}

