/** Small network helpers for tests that start servers on loopback and call HTTPS endpoints. */
import { request } from 'node:https';
import { createServer } from 'node:net';

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
