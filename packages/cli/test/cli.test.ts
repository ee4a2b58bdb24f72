/** The kubeloop command table: help, exit codes, and the built bin itself. */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

  it('prints its version with --version (or `version`), exit 0', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'packages', 'cli', 'package.json'), 'utf8')) as { version: string };
    for (const args of [['--version'], ['version']]) {
      const out: string[] = [];
      expect(await runCli(args, { out: (t) => out.push(t), err: () => undefined })).toBe(0);
      expect(out.join('')).toBe(`kubeloop ${version}\n`);
    }
  });

  it('loads a command\'s module only when that command runs: the built bin answers --help and generate crds without loading @kubernetes/client-node', async () => {
    const bin = join(root, 'packages', 'cli', 'dist', 'bin.js');
    // a preload that records every module the process resolves, printed when it exits
    const dir = mkdtempSync(join(tmpdir(), 'kubeloop-cli-'));
    const preload = join(dir, 'record.mjs');
    const record = join(dir, 'resolved.json');
    writeFileSync(preload, "import { registerHooks } from 'node:module';\nimport { writeFileSync } from 'node:fs';\nconst seen = [];\nregisterHooks({ resolve(s, c, next) { const r = next(s, c); seen.push(r.url); return r; } });\nprocess.on('exit', () => writeFileSync(process.env.RECORD, JSON.stringify(seen)));\n");
    const resolved = async (args: string[]): Promise<string[]> => {
      rmSync(record, { force: true });
      await promisify(execFile)(process.execPath, ['--import', pathToFileURL(preload).href, bin, ...args], { env: { ...process.env, RECORD: record } }).catch(() => undefined);
      return JSON.parse(readFileSync(record, 'utf8')) as string[];
    };
    try {
      for (const args of [['--help'], ['generate', 'crds', '--check', '--cwd', join(root, 'examples', 'harddisk-operator')]]) {
        const urls = await resolved(args);
        expect(urls.some((u) => u.endsWith('/cli/dist/cli.js')), `${args.join(' ')}: the record works`).toBe(true);
        expect(urls.filter((u) => u.includes('@kubernetes/client-node') || u.includes('@kubernetes+client-node')), args.join(' ')).toEqual([]);
      }
      // the command's own module, and only it
      const crds = await resolved(['generate', 'crds', '--check', '--cwd', join(root, 'examples', 'harddisk-operator')]);
      expect(crds.some((u) => u.endsWith('/cli/dist/generate-crds.js'))).toBe(true);
      expect(crds.some((u) => u.endsWith('/cli/dist/generate-types.js') || u.endsWith('/cli/dist/dev.js'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs as the built bin: the example project\'s CRDs are up to date', async () => {
    const bin = join(root, 'packages', 'cli', 'dist', 'bin.js');
    expect(existsSync(bin), 'build first (pnpm build)').toBe(true);
    const { stderr } = await promisify(execFile)(process.execPath, [bin, 'generate', 'crds', '--check', '--cwd', join(root, 'examples', 'harddisk-operator')]);
    expect(stderr).toContain('1 CRD(s) up to date in crd (harddisks.crd-demo.io)');
  });
});
