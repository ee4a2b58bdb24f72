/** The kubeloop command table: help, exit codes, and the built bin itself. */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { COMMANDS, runCli } from '../src/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

describe('kubeloop', () => {
  it('lists every command in its help, exit 0 with --help and 2 with no arguments', async () => {
    const out: string[] = [];
    expect(await runCli(['--help'], { out: (t) => out.push(t), err: () => undefined })).toBe(0);
    for (const c of COMMANDS) expect(out.join('')).toContain(`kubeloop ${c.path.join(' ')}`);
    expect(await runCli([], { out: () => undefined, err: () => undefined })).toBe(2);
    expect(COMMANDS.map((c) => c.path.join(' '))).toEqual(['generate crds', 'generate types', 'generate rbac', 'generate webhooks', 'generate helm', 'create api', 'create webhook', 'deploy', 'dev', 'shards', 'inspect', 'profile']);
  });

  it('runs as the built bin: the example project\'s CRDs are up to date', async () => {
    const bin = join(root, 'packages', 'cli', 'dist', 'bin.js');
    expect(existsSync(bin), 'build first (pnpm build)').toBe(true);
    const { stderr } = await promisify(execFile)(process.execPath, [bin, 'generate', 'crds', '--check', '--cwd', join(root, 'examples', 'harddisk-operator')]);
    expect(stderr).toContain('1 CRD(s) up to date in crd (harddisks.crd-demo.io)');
  });
});
