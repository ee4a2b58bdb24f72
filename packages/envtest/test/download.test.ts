/**
 * The prebuilt binaries, fetched as setup-envtest fetches them, from a
 * loopback HTTP server laid out like its index and release archives: this
 * run's own kube-apiserver and etcd packed as `controller-tools/envtest/`.
 * The downloaded kube-apiserver runs; a digest that does not match, an
 * archive with a link in it, a release the index does not list and an
 * unreachable index are refused with what went wrong, nothing installed, and
 * resolveBinaries falls back (here: to "building is turned off").
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { downloadBinaries, resolveBinaries } from '../src/binaries.js';
import { envtestPlatform, findArchive } from '../src/download.js';
import { isEnvtestError } from '../src/errors.js';

const version = 'v1.37.2';
const platform = envtestPlatform()!;
let work: string;
let server: Server;
let base: string;
const files = new Map<string, Buffer>();
const index: Record<string, Record<string, { hash: string; selfLink: string }>> = {};

/** A .tar.gz of `controller-tools/envtest/` holding `entries` (name → file to copy, or a link target). */
function archive(name: string, entries: Record<string, { file?: string; link?: string }>): Buffer {
  const stage = join(work, `stage-${name}`);
  execFileSync('mkdir', ['-p', join(stage, 'controller-tools', 'envtest')]);
  for (const [entry, what] of Object.entries(entries)) {
    const path = join(stage, 'controller-tools', 'envtest', entry);
    if (what.file) execFileSync('cp', [what.file, path]);
    else execFileSync('ln', ['-s', what.link!, path]);
  }
  const out = join(work, name);
  execFileSync('tar', ['-I', 'gzip -1', '-cf', out, '-C', stage, 'controller-tools']);
  return readFileSync(out);
}

function publish(release: string, body: Buffer, hash = createHash('sha512').update(body).digest('hex')): void {
  const name = `envtest-${release}-${platform}.tar.gz`;
  files.set(`/${release}/${name}`, body);
  index[release] = { [name]: { hash, selfLink: `${base}/${release}/${name}` } };
}

async function failure(p: Promise<unknown>): Promise<{ reason: string; message: string }> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!isEnvtestError(err)) throw new Error(`expected an EnvtestError, got ${String(err)}`);
  return err;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'envtest-download-'));
  server = createServer((req, res) => {
    if (req.url === '/envtest-releases.yaml') {
      res.end(stringify({ releases: index }));
      return;
    }
    const body = files.get(req.url ?? '');
    res.statusCode = body ? 200 : 404;
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  // This run's binaries (KUBEBUILDER_ASSETS or the cache), as a release archive.
  const real = await resolveBinaries({ build: false, download: false });
  publish(version, archive('real.tar.gz', { 'kube-apiserver': { file: real.kubeApiserver }, etcd: { file: real.etcd } }));
});
afterAll(async () => {
  server.close();
  await rm(work, { recursive: true, force: true });
});

describe('downloading the prebuilt binaries', () => {
  it('reads the index as setup-envtest writes it', () => {
    const doc = { releases: { [version]: { [`envtest-${version}-linux-amd64.tar.gz`]: { hash: 'AB'.repeat(64), selfLink: 'https://example.com/a.tar.gz' } } } };
    expect(findArchive(doc, version, 'linux-amd64')).toEqual({ name: `envtest-${version}-linux-amd64.tar.gz`, hash: 'ab'.repeat(64), url: 'https://example.com/a.tar.gz' });
    expect(findArchive(doc, version, 'darwin-arm64')).toBeUndefined();
    expect(findArchive({ releases: null }, version, 'linux-amd64')).toBeUndefined();
    expect(envtestPlatform('linux', 'x64')).toBe('linux-amd64');
    expect(envtestPlatform('win32', 'x64')).toBeUndefined();
  });

  it('downloads, verifies (SHA-512) and unpacks a release the index lists; the kube-apiserver runs; the second call uses the cache', async () => {
    const cacheDir = join(work, 'cache-ok');
    const lines: string[] = [];
    const bins = await resolveBinaries({ assetsDir: '', cacheDir, kubernetesVersion: version, indexUrl: `${base}/envtest-releases.yaml`, build: false, download: true, onProgress: (l) => lines.push(l) });
    expect(bins).toMatchObject({ source: 'downloaded', kubernetesVersion: version, kubeApiserver: join(cacheDir, `envtest-${version}-${platform}`, 'kube-apiserver') });
    expect(lines.some((l) => /sha512 verified/.test(l))).toBe(true);
    expect(execFileSync(bins.kubeApiserver, ['--version']).toString()).toContain(`Kubernetes ${version}`);
    expect((await readdir(cacheDir)).filter((f) => f.startsWith('.envtest-download-'))).toEqual([]); // no leftovers
    const again = await resolveBinaries({ assetsDir: '', cacheDir, kubernetesVersion: version, indexUrl: `${base}/nothing-here`, build: false, download: true });
    expect(again).toMatchObject({ source: 'cache', kubeApiserver: bins.kubeApiserver });
  });

  it('refuses an archive whose digest differs from the index, installing nothing', async () => {
    const body = files.get(`/${version}/envtest-${version}-${platform}.tar.gz`)!;
    publish('v1.37.1', body, createHash('sha512').update('something else').digest('hex'));
    const cacheDir = join(work, 'cache-tampered');
    const err = await failure(downloadBinaries({ cacheDir, kubernetesVersion: 'v1.37.1', indexUrl: `${base}/envtest-releases.yaml`, onProgress: () => undefined }));
    expect(err.reason).toBe('DownloadFailed');
    expect(err.message).toMatch(/sha512 [0-9a-f]{128} does not match the index's [0-9a-f]{128}; nothing was installed/);
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('refuses an archive holding a link, and a release the index does not list; resolveBinaries says so when it cannot build either', async () => {
    await mkdir(join(work, 'target'), { recursive: true });
    await writeFile(join(work, 'target', 'etcd'), '#!/bin/sh\n');
    publish('v1.36.0', archive('link.tar.gz', { 'kube-apiserver': { link: '/etc/passwd' }, etcd: { file: join(work, 'target', 'etcd') } }));
    const cacheDir = join(work, 'cache-link');
    const link = await failure(downloadBinaries({ cacheDir, kubernetesVersion: 'v1.36.0', indexUrl: `${base}/envtest-releases.yaml`, onProgress: () => undefined }));
    expect(link.message).toContain('holds entries outside controller-tools/envtest/ or that are not regular files: controller-tools/envtest/kube-apiserver');
    expect(await readdir(cacheDir)).toEqual([]);

    const unlisted = await failure(resolveBinaries({ assetsDir: '', cacheDir, kubernetesVersion: 'v1.35.9', indexUrl: `${base}/envtest-releases.yaml`, build: false, download: true, onProgress: () => undefined }));
    expect(unlisted.reason).toBe('BinariesNotFound');
    expect(unlisted.message).toContain(`the download failed: the envtest index ${base}/envtest-releases.yaml has no archive for Kubernetes v1.35.9 on ${platform}`);

    const down = await failure(downloadBinaries({ cacheDir, kubernetesVersion: version, indexUrl: 'http://127.0.0.1:1/envtest-releases.yaml', onProgress: () => undefined }));
    expect(down.message).toContain('cannot read the envtest index http://127.0.0.1:1/envtest-releases.yaml');
  });
});
