/** Free loopback ports. */
import { createServer } from 'node:net';

/**
 * Ask the kernel for a free TCP port on `host` and release it. Another process
 * may take it before ours binds; callers retry on "address already in use".
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

/** `count` distinct free ports. */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort(host));
  return [...ports];
}

/** True when a component's log shows it lost a race for its port. */
export function isAddressInUse(log: string): boolean {
  return /address already in use|EADDRINUSE|bind: address/i.test(log);
}
