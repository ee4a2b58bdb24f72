import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBinaries, resolveBinaries } from '../src/binaries.js';
import type { EnvtestError} from '../src/errors.js';
import { isEnvtestError } from '../src/errors.js';

async function executable(path: string): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, '#!/bin/sh\nexit 0\n');
  await chmod(path, 0o755);
}

async function rejection(p: Promise<unknown>): Promise<EnvtestError> {
  try {
    await p;
  } catch (err) {
    if (isEnvtestError(err)) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

describe('resolveBinaries', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubeloop-bin-test-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('uses KUBEBUILDER_ASSETS first, with etcdctl when present', async () => {
    await executable(join(dir, 'assets', 'kube-apiserver'));
    await executable(join(dir, 'assets', 'etcd'));
    const bins = await resolveBinaries({ assetsDir: join(dir, 'assets'), cacheDir: join(dir, 'cache') });
    expect(bins).toMatchObject({ source: 'KUBEBUILDER_ASSETS', kubeApiserver: join(dir, 'assets', 'kube-apiserver'), etcdctl: undefined });
  });

  it('names exactly what is missing from KUBEBUILDER_ASSETS', async () => {
    await executable(join(dir, 'assets', 'kube-apiserver'));
    const err = await rejection(resolveBinaries({ assetsDir: join(dir, 'assets') }));
    expect(err.reason).toBe('BinariesNotFound');
    expect(err.message).toContain(join(dir, 'assets', 'etcd'));
    expect(err.message).not.toContain(join(dir, 'assets', 'kube-apiserver,'));
  });

  it('finds binaries cached by version', async () => {
    await executable(join(dir, 'kubernetes-v1.30.1', 'kube-apiserver'));
    await executable(join(dir, 'etcd-v3.6.1', 'etcd'));
    await executable(join(dir, 'etcd-v3.6.1', 'etcdctl'));
    const bins = await resolveBinaries({ assetsDir: '', cacheDir: dir, kubernetesVersion: 'v1.30.1', etcdVersion: 'v3.6.1', build: false });
    expect(bins).toMatchObject({ source: 'cache', kubernetesVersion: 'v1.30.1', etcd: join(dir, 'etcd-v3.6.1', 'etcd') });
  });

  it('does not take another version from the cache', async () => {
    await executable(join(dir, 'kubernetes-v1.30.1', 'kube-apiserver'));
    const err = await rejection(resolveBinaries({ assetsDir: '', cacheDir: dir, kubernetesVersion: 'v1.30.2', download: false, build: false }));
    expect(err.reason).toBe('BinariesNotFound');
  });

  it('with no Go and no assets, says exactly how to provide binaries', async () => {
    const err = await rejection(
      buildBinaries({ cacheDir: dir, go: join(dir, 'no-such-go'), onProgress: () => undefined }),
    );
    expect(err.reason).toBe('BinariesNotFound');
    expect(err.message).toContain('KUBEBUILDER_ASSETS');
    expect(err.message).toContain(join(dir, 'kubernetes-'));
    expect(err.message).toContain('install Go');
    expect(err.message).toContain('KUBELOOP_USE_EXISTING_CLUSTER');
  });

  it('rejects malformed versions before doing anything', async () => {
    const err = await rejection(resolveBinaries({ assetsDir: '', cacheDir: dir, kubernetesVersion: 'latest' }));
    expect(err.reason).toBe('InvalidOptions');
  });
});
