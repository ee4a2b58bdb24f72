/** The create-kubeloop command line: exit codes and messages. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCreate } from '../src/index.js';

const cwd = mkdtempSync(join(tmpdir(), 'create-kubeloop-cli-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCreate(argv, { cwd, out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

describe('create-kubeloop', () => {
  it('creates a project and says what to do next', async () => {
    const { code, out } = await run('demo');
    expect(code).toBe(0);
    expect(out).toContain(join(cwd, 'demo'));
    expect(out).toContain('pnpm install');
  });

  it('exits 2 with usage for a missing name or an unknown flag', async () => {
    for (const argv of [[], ['--nope', 'x'], ['a', 'b']]) {
      const { code, err } = await run(...argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(err).toContain('Usage: pnpm create kubeloop <name>');
    }
  });

  it('exits 1 with the reason for an invalid name', async () => {
    const { code, err } = await run('My_Operator');
    expect(code).toBe(1);
    expect(err).toMatch(/invalid project name "My_Operator".*DNS-1123/);
  });
});
