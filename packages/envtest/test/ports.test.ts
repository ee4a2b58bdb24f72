import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, freePorts, isAddressInUse } from '../src/internal/ports.js';

describe('port picking', () => {
  it('returns a port that can then be bound on loopback', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
    expect(port).toBeGreaterThan(0);
  });

  it('returns distinct ports', async () => {
    const ports = await freePorts(5);
    expect(new Set(ports).size).toBe(5);
  });

  it('recognises the bind failures of etcd and kube-apiserver', () => {
    expect(isAddressInUse('listen tcp 127.0.0.1:2379: bind: address already in use')).toBe(true);
    expect(isAddressInUse('failed to create listener: failed to listen on 127.0.0.1:6443: listen tcp 127.0.0.1:6443: bind: address already in use')).toBe(true);
    expect(isAddressInUse('flag provided but not defined: -foo')).toBe(false);
  });
});
