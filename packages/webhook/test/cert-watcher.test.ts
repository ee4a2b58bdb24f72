/**
 * Provided certificate files, watched: changes are served without a
 * restart, a half-written pair is not used, a Secret volume's atomic
 * `..data` swap is seen, and rotating the files while clients keep
 * connecting fails no request.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isWebhookError, watchCertificateFiles } from '../src/index.js';
import type { Webhook } from '../src/index.js';
import { call, runServer, testPki } from './support.js';

const pki = testPki();
const ca = pki.ca.certPem;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeloop-certwatch-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const issue = (): { certPem: string; keyPem: string } => pki.ca.issue({ commonName: 'watched', usage: 'server', hosts: ['127.0.0.1'] });
const serial = (pem: string): string => new X509Certificate(pem).serialNumber;

function peerSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca }, () => {
      resolve(new X509Certificate(socket.getPeerCertificate(true).raw).serialNumber);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const echo: Webhook = {
  path: '/echo',
  handle: async (body) => ({ status: 200, body }),
  failure: (p) => ({ status: p.code, body: { message: p.message } }),
};

describe('watchCertificateFiles', () => {
  it('serves the files and reloads them when they change', async () => {
    const first = issue();
    await writeFile(join(dir, 'tls.crt'), first.certPem);
    await writeFile(join(dir, 'tls.key'), first.keyPem);
    const files = watchCertificateFiles({ certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), debounceMs: 20 });
    const s = await runServer({ pki, certificates: files });
    try {
      expect(await peerSerial(s.port)).toBe(serial(first.certPem));
      const second = issue();
      await writeFile(join(dir, 'tls.key'), second.keyPem);
      await writeFile(join(dir, 'tls.crt'), second.certPem);
      await eventually(async () => (await peerSerial(s.port)) === serial(second.certPem));
      expect(await files.reload()).toBe(false); // nothing new
    } finally {
      await s.stop();
    }
  });

  it('keeps the current pair while the files disagree (a half-written rotation)', async () => {
    const first = issue();
    await writeFile(join(dir, 'tls.crt'), first.certPem);
    await writeFile(join(dir, 'tls.key'), first.keyPem);
    // A long poll and debounce: this test drives reloads itself.
    const files = watchCertificateFiles({ certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), debounceMs: 60_000, pollIntervalMs: 60_000 });
    const s = await runServer({ pki, certificates: files });
    try {
      const second = issue();
      await writeFile(join(dir, 'tls.crt'), second.certPem); // the key is still the old one
      expect(await files.reload()).toBe(false);
      expect(await peerSerial(s.port)).toBe(serial(first.certPem));
      await writeFile(join(dir, 'tls.key'), 'not a key');
      expect(await files.reload()).toBe(false);
      await writeFile(join(dir, 'tls.key'), second.keyPem);
      expect(await files.reload()).toBe(true);
      expect(await peerSerial(s.port)).toBe(serial(second.certPem));
    } finally {
      await s.stop();
    }
  });

  it('follows the atomic ..data symlink swap of a Secret volume', async () => {
    const write = async (name: string, pair: { certPem: string; keyPem: string }): Promise<void> => {
      await mkdir(join(dir, name));
      await writeFile(join(dir, name, 'tls.crt'), pair.certPem);
      await writeFile(join(dir, name, 'tls.key'), pair.keyPem);
    };
    const first = issue();
    await write('..2026_01', first);
    await symlink('..2026_01', join(dir, '..data'));
    await symlink('..data/tls.crt', join(dir, 'tls.crt'));
    await symlink('..data/tls.key', join(dir, 'tls.key'));
    const files = watchCertificateFiles({ certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), debounceMs: 20, pollIntervalMs: 60_000 });
    const s = await runServer({ pki, certificates: files });
    try {
      expect(await peerSerial(s.port)).toBe(serial(first.certPem));
      const second = issue();
      await write('..2026_02', second);
      await symlink('..2026_02', join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data')); // what the kubelet's atomic writer does
      await rm(join(dir, '..2026_01'), { recursive: true });
      await eventually(async () => (await peerSerial(s.port)) === serial(second.certPem));
    } finally {
      await s.stop();
    }
  });

  it('picks changes up by polling when no event comes', async () => {
    const first = issue();
    await writeFile(join(dir, 'tls.crt'), first.certPem);
    await writeFile(join(dir, 'tls.key'), first.keyPem);
    // Watch a directory other than the files': only the poll can see the change.
    const other = await mkdtemp(join(tmpdir(), 'kubeloop-certwatch-other-'));
    await symlink(join(dir, 'tls.crt'), join(other, 'tls.crt'));
    await symlink(join(dir, 'tls.key'), join(other, 'tls.key'));
    const files = watchCertificateFiles({ certFile: join(other, 'tls.crt'), keyFile: join(other, 'tls.key'), debounceMs: 60_000, pollIntervalMs: 100 });
    const s = await runServer({ pki, certificates: files });
    try {
      const second = issue();
      await writeFile(join(dir, 'tls.key'), second.keyPem);
      await writeFile(join(dir, 'tls.crt'), second.certPem);
      await eventually(async () => (await peerSerial(s.port)) === serial(second.certPem));
    } finally {
      await s.stop();
      await rm(other, { recursive: true, force: true });
    }
  });

  it('fails to start without readable files, with the paths in the message', async () => {
    const files = watchCertificateFiles({ certFile: join(dir, 'missing.crt'), keyFile: join(dir, 'missing.key') });
    const err: unknown = await files.start(new AbortController().signal, () => undefined).catch((e: unknown) => e);
    expect(isWebhookError(err) && err.reason).toBe('CertificateUnavailable');
    expect((err as Error).message).toContain('missing.crt');
    expect(() => watchCertificateFiles({ certFile: '', keyFile: 'x' })).toThrow(/certFile and keyFile/);
  });

  it('rotating the files while clients keep opening connections fails no request', async () => {
    const first = issue();
    await writeFile(join(dir, 'tls.crt'), first.certPem);
    await writeFile(join(dir, 'tls.key'), first.keyPem);
    const files = watchCertificateFiles({ certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), debounceMs: 0 });
    const s = await runServer({ pki, certificates: files });
    s.server.register(echo);
    const serials = new Set<string>();
    let failures = 0;
    let done = 0;
    let stop = false;
    const client = async (): Promise<void> => {
      while (!stop) {
        // A new connection (and handshake) per request.
        try {
          const res = await call(s.url, '/echo', { n: done }, { ca });
          if (res.status !== 200) failures++;
        } catch {
          failures++;
        }
        done++;
      }
    };
    try {
      const clients = Array.from({ length: 8 }, client);
      for (let i = 0; i < 20; i++) {
        const next = issue();
        // Key first, then certificate: a reload in between sees a mismatched pair and keeps the old one.
        await writeFile(join(dir, 'tls.key'), next.keyPem);
        await writeFile(join(dir, 'tls.crt'), next.certPem);
        await files.reload();
        serials.add(await peerSerial(s.port));
        await new Promise((r) => setTimeout(r, 50));
      }
      stop = true;
      await Promise.all(clients);
    } finally {
      await s.stop();
    }
    expect(failures).toBe(0);
    expect(done).toBeGreaterThan(100);
    expect(serials.size).toBeGreaterThan(10);
  });
});
