#!/usr/bin/env node
// Makes every publishable package's manifest complete for a registry: the
// same license, repository, files, entry points, engines and prepack build,
// `workspace:^` ranges between kubeloop packages (pnpm publishes them as
// `^<version>`), and a LICENSE file beside it. Run after adding a package:
//   node scripts/sync-manifests.mjs
// test/workspace.test.ts checks the result.
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dirs = readdirSync(join(root, 'packages')).map((d) => join('packages', d)).filter((d) => existsSync(join(root, d, 'package.json')));

for (const dir of dirs) {
  const path = join(root, dir, 'package.json');
  const pkg = JSON.parse(readFileSync(path, 'utf8'));
  if (pkg.private) continue;
  const hasDist = existsSync(join(root, dir, 'tsconfig.json'));
  pkg.license = 'Apache-2.0';
  pkg.repository = { type: 'git', url: 'git+https://github.com/kubeloop/kubeloop.git', directory: dir };
  pkg.homepage = `https://github.com/kubeloop/kubeloop/tree/main/${dir}#readme`;
  pkg.bugs = { url: 'https://github.com/kubeloop/kubeloop/issues' };
  pkg.engines = { node: '>=22.19.0' };
  if (hasDist) {
    pkg.main = './dist/index.js';
    pkg.types = './dist/index.d.ts';
    // A scaffolder's plain-file templates ship too.
    pkg.files = ['dist', '!dist/**/*.tsbuildinfo', 'src', ...(existsSync(join(root, dir, 'templates')) ? ['templates'] : []), 'LICENSE', 'README.md'];
    pkg.scripts = { ...pkg.scripts, prepack: 'tsc -b' };
  }
  pkg.sideEffects ??= false;
  pkg.publishConfig = { access: 'public' };
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
    for (const [name, range] of Object.entries(pkg[field] ?? {})) {
      if (name.startsWith('@kubeloop/') && range === 'workspace:*') pkg[field][name] = 'workspace:^';
    }
  }
  // A stable key order, so diffs stay small.
  const order = ['name', 'version', 'description', 'keywords', 'license', 'repository', 'homepage', 'bugs', 'type', 'engines', 'sideEffects', 'main', 'types', 'exports', 'bin', 'files', 'scripts', 'dependencies', 'peerDependencies', 'peerDependenciesMeta', 'optionalDependencies', 'devDependencies', 'publishConfig'];
  const sorted = Object.fromEntries([...order.filter((k) => k in pkg).map((k) => [k, pkg[k]]), ...Object.keys(pkg).filter((k) => !order.includes(k)).map((k) => [k, pkg[k]])]);
  writeFileSync(path, `${JSON.stringify(sorted, null, 2)}\n`);
  copyFileSync(join(root, 'LICENSE'), join(root, dir, 'LICENSE'));
}
