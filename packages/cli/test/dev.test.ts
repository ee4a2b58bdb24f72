/**
 * `kubeloop dev` on a small project against the shared control plane: the
 * CRDs of config/crd (a kustomize directory) are installed, the operator
 * starts after the first build with the cluster's kubeconfig and the flags
 * given, restarts when a saved source compiles, keeps running when it does
 * not, and everything stops with the loop.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCRDs } from '@kubeloop/scheme/schema';
import { defineKind } from '@kubeloop/scheme';
import { Type } from '@kubeloop/scheme/schema';
import { stringify } from 'yaml';
import { dev } from '../src/index.js';
import { kubectl } from '../../../test/support/kubectl.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

const root = join(import.meta.dirname, '..', '..', '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
const group = `${uniqueName('dev')}.cli.kubeloop.dev`;
let work: string;

const main = (version: string, extra = ''): string => `declare const process: { argv: string[]; on(event: string, f: () => void): void; exit(code: number): never };
const version: string = '${version}';
console.log(JSON.stringify({ version, args: process.argv.slice(2) }));
process.on('SIGTERM', () => { console.log(JSON.stringify({ stopped: version })); process.exit(0); });
setInterval(() => undefined, 1000);
${extra}
`;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kubeloop-dev-'));
  await mkdir(join(work, 'src'));
  await mkdir(join(work, 'config', 'crd'), { recursive: true });
  await writeFile(join(work, 'package.json'), JSON.stringify({ name: 'dev-demo', type: 'module' }));
  await writeFile(join(work, 'tsconfig.json'), JSON.stringify({ compilerOptions: { outDir: 'dist', rootDir: 'src', module: 'nodenext', target: 'es2022', strict: true, types: [] }, include: ['src'] }));
  await writeFile(join(work, 'src', 'main.ts'), main('one'));
  const [crd] = generateCRDs([defineKind({ group, version: 'v1', kind: 'Gizmo', plural: 'gizmos', namespaced: true, schema: { spec: Type.Object({}) } })]);
  await writeFile(join(work, 'config', 'crd', `gizmos.${group}.yaml`), stringify(crd));
  await writeFile(join(work, 'config', 'crd', 'kustomization.yaml'), `resources:\n  - gizmos.${group}.yaml\n`);
});
afterAll(async () => {
  await kubectl(['delete', '--ignore-not-found', 'crd', `gizmos.${group}`]);
  await rm(work, { recursive: true, force: true });
});

describe('kubeloop dev', () => {
  it('installs the CRDs, starts the operator after a clean build, restarts it on a change, keeps it on a broken one, and stops it', async () => {
    let output = '';
    const logs: string[] = [];
    const until = async (what: string, ok: () => boolean): Promise<void> => {
      const deadline = Date.now() + 30_000;
      while (!ok()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; operator output:\n${output}\nloop:\n${logs.join('\n')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const controller = new AbortController();
    const loop = dev({ cwd: work, kubeconfig: testKubeconfigPath(), tsc, args: ['--metrics-bind-address', '127.0.0.1:0'], signal: controller.signal, log: (l) => logs.push(l), operatorOutput: (t) => (output += t) });
    try {
      await until('the first start', () => output.includes('"version":"one"'));
      expect(output).toContain(JSON.stringify({ version: 'one', args: ['--kubeconfig', testKubeconfigPath(), '--metrics-bind-address', '127.0.0.1:0'] }));
      expect((await kubectl(['get', 'crd', `gizmos.${group}`])).code).toBe(0);

      await writeFile(join(work, 'src', 'main.ts'), main('two'));
      await until('the restart', () => output.includes('"version":"two"'));
      expect(output.indexOf('{"stopped":"one"}')).toBeGreaterThan(-1);
      expect(output.indexOf('{"stopped":"one"}')).toBeLessThan(output.indexOf('"version":"two"'));

      await writeFile(join(work, 'src', 'main.ts'), main('three', 'const broken: number = "not a number";'));
      await until('the failed build', () => logs.some((l) => l === 'not restarting: the build has errors'));
      expect(output).not.toContain('{"stopped":"two"}');
    } finally {
      controller.abort();
      await loop;
    }
    expect(output).toContain('{"stopped":"two"}');
    expect(logs.at(-1)).toBe('stopped');
  });
});
