/**
 * The fixed ports the docs' commands bind as written: the scaffold's
 * 127.0.0.1:8443 (metrics) and :8081 (probes), the example's :8080 and :8081.
 * Test files that run such a command, or a manager on one of these ports
 * where a doc says it is, run side by side in the parallel group: they take
 * turns through one machine lock (machine-lock.ts), and the holder waits
 * until the ports are free (a previous holder's operator may still be
 * exiting) before it goes on.
 */
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineLock } from './machine-lock.js';

/** Every port a documented command binds on 127.0.0.1. */
export const DOCUMENTED_PORTS: readonly number[] = [8080, 8081, 8443];

function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * Holds the documented ports for `who` (a test file's name, said when another
 * waits too long) until the returned function is called; at most one holder
 * on the machine. Fails after `timeoutMs` (default 15 minutes: the registry
 * walk holds them through every doc's commands) naming the holder, or when a
 * port stays taken by something that does not use this lock.
 */
export async function holdDocumentedPorts(who: string, timeoutMs = 15 * 60_000): Promise<() => Promise<void>> {
  const release = await machineLock(join(tmpdir(), 'kubeloop-documented-ports.lock'), { pollMs: 500, timeoutMs, what: `${who}: the documented ports ${DOCUMENTED_PORTS.join(', ')}` });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const taken: number[] = [];
    for (const port of DOCUMENTED_PORTS) if (!(await free(port))) taken.push(port);
    if (taken.length === 0) return release;
    if (Date.now() > deadline) {
      await release();
      throw new Error(`${who}: 127.0.0.1:${taken.join(', :')} still taken a minute after taking the documented-ports lock: something outside the tests holds it (ss -ltnp says what)`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
