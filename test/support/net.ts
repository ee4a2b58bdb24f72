/** Small network helpers for tests that start servers on loopback and call HTTPS endpoints. */
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';

/** A port free on 127.0.0.1 right now (another process may take it before you do: bind soon). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Options of {@link httpsGet}. */
export interface HttpsGetOptions {
  /** Trust only this CA (PEM). Default: accept any certificate (a self-signed one, say). */
  readonly ca?: string;
  /** Sent as `Authorization: Bearer <token>`. Default: none. */
  readonly token?: string;
}

/**
 * One GET over HTTPS on a fresh connection; resolves with the status and body, whatever the status.
 *
 * @example
 * ```ts
 * const { status } = await httpsGet(`https://127.0.0.1:${port}/metrics`, { token });
 * ```
 */
export function httpsGet(url: string, options: HttpsGetOptions = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const tls = options.ca ? { ca: options.ca } : { rejectUnauthorized: false };
    const req = request(url, { ...tls, agent: false, headers: options.token ? { authorization: `Bearer ${options.token}` } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A loopback HTTP CONNECT proxy (what a kubeconfig's `proxy-url` names) that records each tunnel's target. */
export interface ConnectProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** `host:port` of every CONNECT, in order. */
  readonly tunnels: readonly string[];
  close(): Promise<void>;
}

/**
 * Start a CONNECT proxy on a free loopback port; anything but CONNECT is answered 405.
 *
 * @example
 * ```ts
 * const proxy = await startConnectProxy();
 * const t = createTransport({ ...config, proxyUrl: proxy.url });
 * await t.request({ method: 'GET', path: '/version' });
 * proxy.tunnels; // ['127.0.0.1:6443']
 * await proxy.close();
 * ```
 */
export async function startConnectProxy(): Promise<ConnectProxy> {
  const tunnels: string[] = [];
  const proxy = createHttpServer((_req, res) => res.writeHead(405).end());
  proxy.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    tunnels.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    tunnels,
    close: async () => {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    },
  };
}
