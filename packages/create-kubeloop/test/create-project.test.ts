/**
 * createProject writes the scaffold from templates/: every file present,
 * placeholders substituted, dotfiles restored, bad names refused, and
 * --workspace adding the project to an existing pnpm workspace.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { createProject, isCreateKubeloopError, ownVersion, validateProjectName } from '../src/index.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'create-kubeloop-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const root = join(import.meta.dirname, '..', '..', '..');

describe('createProject', () => {
  it('writes a complete project with the name, group and version filled in', async () => {
    const cwd = tempDir();
    const project = await createProject({ name: 'demo', cwd });
    expect(project.directory).toBe(join(cwd, 'demo'));
    expect(project.workspace).toBeUndefined();
    for (const file of [
      '.github/workflows/ci.yml',
      '.gitignore',
      '.dockerignore',
      'Dockerfile',
      'README.md',
      'package.json',
      'tsconfig.json',
      'eslint.config.js',
      'vitest.config.ts',
      'src/main.ts',
      'src/apis/index.ts',
      'src/apis/website.ts',
      'src/controllers/website-controller.ts',
      'test/support/global-setup.ts',
      'test/website-controller.test.ts',
      'test/website-controller.unit.test.ts',
      'config/crd/websites.demo.example.com.yaml',
      'config/rbac/role.yaml',
      'config/rbac/metrics-reader-role.yaml',
      'config/rbac/service-account.yaml',
      'config/rbac/role-binding.yaml',
      'config/manager/deployment.yaml',
      'config/manager/metrics-service.yaml',
      'config/samples/website.yaml',
      'config/default/kustomization.yaml',
      'config/grafana/kubeloop-operator.json',
      'config/grafana/kustomization.yaml',
      'config/prometheus/monitor.yaml',
      'config/certmanager/certificates.yaml',
      'config/network-policy/allow-metrics-traffic.yaml',
    ]) {
      expect(project.files, file).toContain(file);
    }
    // No placeholder is left anywhere (GitHub Actions' own ${{ ... }} expressions stay).
    for (const file of project.files) {
      expect(readFileSync(join(project.directory, file), 'utf8'), file).not.toMatch(/\{\{(name|group|version)\}\}/);
    }
    const manifest = JSON.parse(readFileSync(join(project.directory, 'package.json'), 'utf8')) as { name: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };
    expect(manifest.name).toBe('demo');
    const version = ownVersion();
    expect(manifest.dependencies['@kubeloop/manager']).toBe(`^${version}`);
    expect(manifest.devDependencies['@kubeloop/envtest']).toBe(`^${version}`);
    // tsyringe and reflect-metadata are the manager's peer dependencies: the project brings them.
    expect(manifest.dependencies).toHaveProperty('tsyringe');
    expect(manifest.dependencies).toHaveProperty('reflect-metadata');
    const crd = parse(readFileSync(join(project.directory, 'config/crd/websites.demo.example.com.yaml'), 'utf8')) as { metadata: { name: string }; spec: { group: string } };
    expect(crd.metadata.name).toBe('websites.demo.example.com');
    expect(crd.spec.group).toBe('demo.example.com');
    // Written by kubeloop generate rbac (packages/cli/test/scaffold-rbac.test.ts checks it is current): the ClusterRole, and the Lease's Role.
    const [role, leaseRole] = parseAllDocuments(readFileSync(join(project.directory, 'config/rbac/role.yaml'), 'utf8')).map((d) => d.toJSON() as { kind: string; metadata: { name: string; namespace?: string }; rules: { apiGroups: string[]; resources: string[] }[] });
    expect(role!.rules.flatMap((r) => r.resources)).toEqual(expect.arrayContaining(['websites', 'websites/status', 'websites/finalizers', 'configmaps', 'events']));
    expect(leaseRole).toMatchObject({ kind: 'Role', metadata: { name: 'demo-manager', namespace: 'demo-system' }, rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'] }] });
    const docs = parseAllDocuments(readFileSync(join(project.directory, 'config/rbac/role-binding.yaml'), 'utf8')).map((d) => d.toJSON() as { subjects: { name: string; namespace: string }[] });
    for (const doc of docs) expect(doc.subjects).toEqual([{ kind: 'ServiceAccount', name: 'demo-manager', namespace: 'demo-system' }]);
    const ci = readFileSync(join(project.directory, '.github/workflows/ci.yml'), 'utf8');
    expect(ci).toContain('${{ runner.os }}');
  });

  it('pins the same third-party versions as this workspace', async () => {
    const project = await createProject({ name: 'pins', cwd: tempDir() });
    const manifest = JSON.parse(readFileSync(join(project.directory, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const workspace = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    for (const dep of ['typescript', 'vitest', '@types/node']) expect(manifest.devDependencies[dep], dep).toBe(workspace.devDependencies[dep]);
    const manager = JSON.parse(readFileSync(join(root, 'packages/manager/package.json'), 'utf8')) as { peerDependencies: Record<string, string> };
    const deps = (JSON.parse(readFileSync(join(project.directory, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
    for (const [dep, range] of Object.entries(manager.peerDependencies)) expect(deps[dep], dep).toBe(range);
  });

  it('ships the bundle pnpm build writes: the build, start and the image agree on dist/operator.js', async () => {
    const project = await createProject({ name: 'bundled', cwd: tempDir() });
    const read = (file: string) => readFileSync(join(project.directory, file), 'utf8');
    const manifest = JSON.parse(read('package.json')) as { scripts: Record<string, string>; devDependencies: Record<string, string> };
    // What rolldown.config.mjs bundles from and writes: tsc's entry point in, dist/operator.js out.
    const config = read('rolldown.config.mjs');
    const tsconfig = JSON.parse(read('tsconfig.json')) as { compilerOptions: { outDir: string } };
    expect(config).toMatch(new RegExp(`input: '${tsconfig.compilerOptions.outDir}/main\\.js'`));
    const bundle = `${/dir: '([^']+)'/.exec(config)?.[1]}/${/entryFileNames: '([^']+)'/.exec(config)?.[1]}`;
    expect(bundle).toBe('dist/operator.js');
    // `pnpm build` and `pnpm generate` both end with a fresh bundle (`pnpm start` after `pnpm generate`
    // runs the webhooks it generated for); `pnpm start` and the image run it.
    expect(manifest.scripts['build']).toBe('tsc -p tsconfig.json && rolldown -c rolldown.config.mjs');
    expect(manifest.scripts['generate']).toMatch(/^tsc -p tsconfig\.json && rolldown -c rolldown\.config\.mjs && kubeloop generate crds/);
    expect(manifest.scripts['start']).toBe(`node ${bundle}`);
    const dockerfile = read('Dockerfile');
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    expect(entrypoint).toEqual(['node', '--max-semi-space-size=1', '--no-opt', '--no-maglev', bundle]);
    // The build stage has the config before it builds (without it `docker build` stops at rolldown).
    const buildStage = dockerfile.slice(0, dockerfile.indexOf('RUN pnpm build'));
    expect(buildStage).toMatch(/^COPY .*\brolldown\.config\.mjs\b.* \.\/$/m);
    // The rolldown the example operator of this repository is bundled with.
    const example = JSON.parse(readFileSync(join(root, 'examples/harddisk-operator/package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    expect(manifest.devDependencies['rolldown']).toBe(example.devDependencies['rolldown']);
  });

  it('takes a directory and an API group', async () => {
    const cwd = tempDir();
    const project = await createProject({ name: 'shop', cwd, directory: 'ops/shop', group: 'shop.acme.io' });
    expect(project.directory).toBe(join(cwd, 'ops/shop'));
    expect(project.files).toContain('config/crd/websites.shop.acme.io.yaml');
    expect(readFileSync(join(project.directory, 'src/apis/website.ts'), 'utf8')).toContain("group: 'shop.acme.io'");
  });

  it('refuses a non-empty target directory', async () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, 'taken'));
    writeFileSync(join(cwd, 'taken', 'file'), 'x');
    const err = await createProject({ name: 'taken', cwd }).catch((e: unknown) => e);
    expect(isCreateKubeloopError(err) && err.reason).toBe('TargetExists');
  });

  it('refuses a bad API group', async () => {
    const err = await createProject({ name: 'ok', cwd: tempDir(), group: 'NoDots' }).catch((e: unknown) => e);
    expect(isCreateKubeloopError(err) && err.reason).toBe('InvalidName');
  });
});

describe('validateProjectName', () => {
  it.each(['demo', 'website-operator', 'a', 'op2'])('accepts %s', (name) => {
    expect(() => validateProjectName(name)).not.toThrow();
  });

  it.each([
    ['', /empty/],
    ['Website', /lower-case/],
    ['my_operator', /DNS-1123/],
    ['-lead', /start and end/],
    ['trail-', /start and end/],
    ['@scope/name', /lower-case/],
    ['x'.repeat(57), /at most 56/],
  ])('refuses %j with a clear message', (name, message) => {
    let caught: unknown;
    try {
      validateProjectName(name);
    } catch (err) {
      caught = err;
    }
    expect(isCreateKubeloopError(caught)).toBe(true);
    expect(isCreateKubeloopError(caught) && caught.reason).toBe('InvalidName');
    expect((caught as Error).message).toMatch(message);
  });
});

describe('createProject --workspace', () => {
  it('adds the project to pnpm-workspace.yaml when no pattern covers it, keeping comments', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'pnpm-workspace.yaml'), '# our packages\npackages:\n  - libs/*\n');
    mkdirSync(join(root, 'operators'));
    const project = await createProject({ name: 'ops', cwd: join(root, 'operators'), workspace: true });
    expect(project.workspace).toEqual({ root, updated: true });
    const text = readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8');
    expect(text).toContain('# our packages');
    expect((parse(text) as { packages: string[] }).packages).toEqual(['libs/*', 'operators/ops']);
    // The workspace's own CI runs it: no workflow of its own.
    expect(existsSync(join(project.directory, '.github'))).toBe(false);
    expect(project.files).toContain('src/main.ts');
  });

  it('leaves pnpm-workspace.yaml alone when a glob already covers the project', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'pnpm-workspace.yaml'), 'packages:\n  - packages/*\n');
    mkdirSync(join(root, 'packages'));
    const project = await createProject({ name: 'ops', cwd: join(root, 'packages'), workspace: true });
    expect(project.workspace).toEqual({ root, updated: false });
    expect(readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8')).toBe('packages:\n  - packages/*\n');
  });

  it('fails clearly outside a workspace', async () => {
    const err = await createProject({ name: 'ops', cwd: tempDir(), workspace: true }).catch((e: unknown) => e);
    expect(isCreateKubeloopError(err) && err.reason).toBe('NoWorkspace');
    expect((err as Error).message).toMatch(/pnpm-workspace\.yaml/);
  });
});
