/**
 * The fake's core over plain HTTP on loopback, so kubectl, client-node or
 * a manager built from a KubeConfig can talk to it. Watches are chunked
 * JSON lines, as kube-apiserver sends them.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { FakeApi } from './api.js';
import { NetworkFault } from './status.js';

export interface HttpEndpoint {
  readonly url: string;
  close(): Promise<void>;
}

const MAX_BODY = 16 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 0 ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function serve(api: FakeApi, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: string | undefined;
  try {
    body = await readBody(req);
  } catch {
    if (!res.headersSent) res.writeHead(413, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'request entity too large', reason: 'RequestEntityTooLarge', code: 413 }));
    return;
  }
  const url = new URL(req.url ?? '/', 'http://fake');
  let answer;
  try {
    answer = await api.handle({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      accept: req.headers.accept,
      contentType: req.headers['content-type'],
      userAgent: req.headers['user-agent'],
      body,
    });
  } catch (err) {
    if (err instanceof NetworkFault) {
      req.socket.destroy();
      return;
    }
    throw err;
  }
  if (answer.kind === 'buffered') {
    res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) });
    res.end(answer.body);
    return;
  }
  res.writeHead(200, { 'content-type': answer.headers['content-type'] ?? 'application/json', 'cache-control': 'no-cache, private' });
  res.flushHeaders();
  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    answer.close();
  };
  res.on('close', finish);
  answer.start(
    (line) => {
      if (!done) res.write(`${line}\n`);
    },
    () => {
      finish();
      res.end();
    },
  );
}

/** Listen on `host:port` (default 127.0.0.1, a free port). */
export async function listen(api: FakeApi, host: string, port: number): Promise<HttpEndpoint> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    serve(api, req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: String(err), reason: 'InternalError', code: 500 }));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
