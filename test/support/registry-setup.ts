/**
 * Vitest global setup of the registry walk (KUBELOOP_E2E_REGISTRY=1, which
 * scripts/test.sh sets; otherwise it does nothing): a real npm registry
 * (Verdaccio, on loopback, third-party packages proxied to the registry npm
 * is configured with) started once per run, and every public package packed
 * (`pnpm pack`, its prepack `tsc -b`) and published to it once, in the
 * background while the first test files run. The two files of the walk
 * (test/e2e/registry.test.ts and registry-docs.test.ts) run side by side
 * against it and wait for the publishing through `publishedRegistry()`
 * (./registry.ts); the tarballs are checked by the first of them.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { freePort } from './net.js';
import { MINUTE, ok, publicPackages, stepTimer, userEnv } from './registry.js';
import type { E2eRegistry, Published } from './registry.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let work: string | undefined;
let verdaccio: ChildProcess | undefined;
let publishing: Promise<void> | undefined;

async function startVerdaccio(dir: string): Promise<{ url: string; npmrc: string }> {
  const upstream = (await ok('npm', ['config', 'get', 'registry'], { cwd: dir, env: userEnv({}), timeoutMs: MINUTE })).trim();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const config = join(dir, 'verdaccio.yaml');
  writeFileSync(
    config,
    [
      `storage: ${join(dir, 'storage')}`,
      'auth:',
      '  htpasswd:',
      `    file: ${join(dir, 'htpasswd')}`,
      // Tokens as JWTs, verified by their signature: the default (legacy) token makes Verdaccio check the user's
      // bcrypt password again on every request, about 60 ms of CPU each, which made a project's `pnpm install`
      // (hundreds of metadata requests, each carrying the npmrc's token) CPU-bound in Verdaccio: 28 s of its CPU.
      'security:',
      '  api:',
      '    jwt:',
      '      sign:',
      '        expiresIn: 1d',
      'uplinks:',
      '  upstream:',
      `    url: ${upstream}`,
      '    timeout: 60s',
      'packages:',
      // Ours are served only from here, never from the uplink.
      "  '@kubeloop/*':",
      '    access: $all',
      '    publish: $authenticated',
      "  'create-kubeloop':",
      '    access: $all',
      '    publish: $authenticated',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      '    proxy: upstream',
      'max_body_size: 200mb',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  );
  const bin = join(root, 'test', 'node_modules', '.bin', 'verdaccio');
  const log = createWriteStream(join(dir, 'verdaccio.log'));
  verdaccio = spawn(bin, ['--config', config, '--listen', `127.0.0.1:${port}`], { cwd: dir, env: userEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
  verdaccio.stdout?.pipe(log);
  verdaccio.stderr?.pipe(log);
  const deadline = Date.now() + 2 * MINUTE;
  for (;;) {
    const up = await fetch(`${url}-/ping`).then((r) => r.ok, () => false);
    if (up) break;
    if (verdaccio.exitCode !== null) throw new Error(`verdaccio exited ${verdaccio.exitCode}: ${readFileSync(join(dir, 'verdaccio.log'), 'utf8').slice(-3000)}`);
    if (Date.now() > deadline) throw new Error('verdaccio did not answer /-/ping within 2 minutes');
    await new Promise((r) => setTimeout(r, 250));
  }
  // A user, as `npm adduser` would create one; its token goes in the npmrc.
  const res = await fetch(`${url}-/user/org.couchdb.user:e2e`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'e2e', password: 'e2e-password-1', type: 'user', roles: [], date: new Date().toISOString() }),
  });
  const { token } = (await res.json()) as { token?: string };
  if (!res.ok || !token) throw new Error(`verdaccio did not create a user: ${res.status}`);
  const npmrc = join(dir, 'npmrc');
  writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
  return { url, npmrc };
}

/** Packs every public package (one at a time: each prepack runs `tsc -b` over the shared project graph), then publishes them all at once. */
async function packAndPublish(registry: E2eRegistry, env: NodeJS.ProcessEnv, timed: ReturnType<typeof stepTimer>['timed']): Promise<Published['packages']> {
  const packed: Published['packages'][number][] = [];
  for (const { dir, manifest } of publicPackages(root)) {
    const out = await timed(`pack ${manifest.name} (prepack: tsc -b)`, () => ok('pnpm', ['pack', '--pack-destination', registry.tarballs], { cwd: dir, env, timeoutMs: 5 * MINUTE }));
    const tarball = readdirSync(registry.tarballs).find((f) => f.startsWith(`${manifest.name.replace('@', '').replace('/', '-')}-${manifest.version}.tgz`));
    if (tarball === undefined) throw new Error(`pnpm pack of ${manifest.name} left no ${manifest.name}-${manifest.version}.tgz; it said:\n${out}`);
    packed.push({ dir, name: manifest.name, version: manifest.version, tarball: join(registry.tarballs, tarball), packOutput: out.slice(-2000) });
  }
  // Publishing is network-bound: all at once.
  await timed(`publish ${packed.length} packages (pnpm publish, concurrently)`, () =>
    Promise.all(packed.map((p) => ok('pnpm', ['publish', p.tarball, '--registry', registry.url, '--no-git-checks'], { cwd: p.dir, env, timeoutMs: 5 * MINUTE }))),
  );
  return packed;
}

export async function setup(project: TestProject): Promise<void> {
  if (process.env['KUBELOOP_E2E_REGISTRY'] !== '1') {
    project.provide('e2eRegistry', null);
    return;
  }
  work = mkdtempSync(join(tmpdir(), 'kubeloop-registry-'));
  const { steps, timed } = stepTimer();
  const { url, npmrc } = await timed('start Verdaccio 6.8.0', () => startVerdaccio(work!));
  const registry: E2eRegistry = { url, npmrc, tarballs: join(work, 'tarballs'), status: join(work, 'published.json') };
  mkdirSync(registry.tarballs);
  const env = userEnv({ npm_config_userconfig: npmrc, npm_config_registry: url, npm_config_cache_dir: join(work, 'pnpm-cache') });
  // Not awaited: the other test files start meanwhile; the walk's files wait for the status file.
  publishing = packAndPublish(registry, env, timed).then(
    (packages) => writeFileSync(registry.status, JSON.stringify({ packages, steps } satisfies Published)),
    (err: unknown) => writeFileSync(`${registry.status}.failed`, err instanceof Error ? (err.stack ?? err.message) : String(err)),
  );
  process.stderr.write(`[registry] Verdaccio at ${url}; packing and publishing every public package in the background\n`);
  project.provide('e2eRegistry', registry);
}

export async function teardown(): Promise<void> {
  await publishing;
  verdaccio?.kill('SIGTERM');
  if (work) rmSync(work, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's registry with every public package published (KUBELOOP_E2E_REGISTRY=1), else null. */
    e2eRegistry: E2eRegistry | null;
  }
}
