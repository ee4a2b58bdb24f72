/**
 * The import graph of ARCHITECTURE.md holds: each package imports only
 * packages below it, declares each as a dependency, and references each as a
 * TypeScript project (so `tsc -b` builds in order and an upward import fails).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// Lower layers first; a package may import only packages before it.
const LAYERS = ['pki', 'scheme', 'workqueue', 'mapper', 'client', 'cache', 'leaderelection', 'webhook', 'manager', 'testing', 'envtest', 'cli'];
// Packages outside the layers, and the only kubeloop packages each may import (the scaffolder writes files only).
const STANDALONE: Readonly<Record<string, readonly string[]>> = { 'create-kubeloop': [] };

const packages = readdirSync(join(root, 'packages')).filter((p) => existsSync(join(root, 'packages', p, 'package.json')));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function kubeloopImports(pkg: string): Set<string> {
  const found = new Set<string>();
  for (const file of sourceFiles(join(root, 'packages', pkg, 'src'))) {
    // Import and export statements only (TSDoc examples in comments start with ` * `).
    // `@kubeloop/scheme/schema` is the scheme package too: subpaths count as their package.
    for (const m of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\b[^;]*?from\s+'@kubeloop\/([a-z-]+)(?:\/[a-z-]+)*'/gms)) found.add(m[1]!);
    // Lazy imports (`await import('@kubeloop/envtest')`, as the CLI's dev loop loads envtest) count too.
    for (const m of readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'@kubeloop\/([a-z-]+)(?:\/[a-z-]+)*'\s*\)/g)) found.add(m[1]!);
  }
  return found;
}

describe('workspace import graph', () => {
  it('knows every package', () => {
    for (const p of packages) expect([...LAYERS, ...Object.keys(STANDALONE)]).toContain(p);
  });

  for (const pkg of packages) {
    it(`${pkg} imports only packages below it, declared and referenced`, () => {
      const imports = kubeloopImports(pkg);
      const allowed = STANDALONE[pkg] ?? LAYERS.slice(0, LAYERS.indexOf(pkg));
      for (const dep of imports) expect(allowed, `${pkg} must not import @kubeloop/${dep}`).toContain(dep);

      const manifest = JSON.parse(readFileSync(join(root, 'packages', pkg, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; peerDependencies?: Record<string, string> };
      // An optional peer (the CLI's envtest, loaded only by its dev loop) is declared too.
      const declared = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).filter((d) => d.startsWith('@kubeloop/')).map((d) => d.slice(10));
      expect(new Set(declared)).toEqual(imports);

      const tsconfig = JSON.parse(readFileSync(join(root, 'packages', pkg, 'tsconfig.json'), 'utf8')) as { references?: { path: string }[] };
      const referenced = (tsconfig.references ?? []).map((r) => r.path.replace('../', ''));
      expect(new Set(referenced)).toEqual(imports);
    });
  }

  it('the root build references every package', () => {
    const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')) as { references: { path: string }[] };
    const refs = tsconfig.references.map((r) => r.path);
    expect(new Set(refs.filter((r) => r.startsWith('packages/')))).toEqual(new Set(packages.map((p) => `packages/${p}`)));
    // every example builds too
    const examples = readdirSync(join(root, 'examples')).filter((e) => existsSync(join(root, 'examples', e, 'package.json')));
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) expect(refs).toContain(`examples/${example}`);
  });

  it('every package targets Node >= 22.19 and is ESM', () => {
    for (const pkg of packages) {
      const manifest = JSON.parse(readFileSync(join(root, 'packages', pkg, 'package.json'), 'utf8')) as { type?: string; engines?: { node?: string } };
      expect(manifest.type).toBe('module');
      expect(manifest.engines?.node).toBe('>=22.19.0');
    }
  });

  it('every package is complete for a registry (node scripts/sync-manifests.mjs)', () => {
    for (const pkg of packages) {
      const dir = join(root, 'packages', pkg);
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown> & {
        files?: string[];
        scripts?: Record<string, string>;
        dependencies?: Record<string, string>;
        repository?: { directory?: string };
        private?: boolean;
      };
      if (manifest.private) continue;
      expect(manifest.license, pkg).toBe('Apache-2.0');
      expect(existsSync(join(dir, 'LICENSE')), `${pkg}/LICENSE`).toBe(true);
      expect(existsSync(join(dir, 'README.md')), `${pkg}/README.md`).toBe(true);
      expect(manifest.repository?.directory, pkg).toBe(`packages/${pkg}`);
      expect(manifest.types, pkg).toBe('./dist/index.d.ts');
      expect(manifest.files, pkg).toContain('!dist/**/*.tsbuildinfo');
      expect(manifest.scripts?.['prepack'], pkg).toBe('tsc -b');
      for (const [dep, range] of Object.entries(manifest.dependencies ?? {})) {
        if (dep.startsWith('@kubeloop/')) expect(range, `${pkg} -> ${dep}`).toBe('workspace:^');
      }
    }
  });
});
