/**
 * `kubeloop create api` on a project written by create-kubeloop: the kind,
 * controller, unit test and sample are created, main.ts registers the kind
 * and src/controllers/index.ts its controller at the scaffold markers (the
 * role then comes from `pnpm generate`: scaffold-rbac.test.ts); a second run, a project without markers and bad names change
 * nothing and say why. (The registry end-to-end test builds, generates and
 * tests such a project for real.)
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { createProject } from 'create-kubeloop';
import { createApi, isCliError, pluralOf, runCli } from '../src/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function project(): Promise<string> {
  const cwd = mkdtempSync(join(tmpdir(), 'kubeloop-create-api-'));
  dirs.push(cwd);
  const created = await createProject({ name: 'demo', cwd });
  return created.directory;
}

const read = (dir: string, rel: string): string => readFileSync(join(dir, rel), 'utf8');

describe('kubeloop create api', () => {
  it('adds the kind, its controller, test and sample, and registers the kind in main.ts and the controller in setupControllers', async () => {
    const dir = await project();
    const io = { out: [] as string[], err: [] as string[] };
    const code = await runCli(['create', 'api', '--group', 'demo.example.com', '--version', 'v1', '--kind', 'BlogPost', '--cwd', dir], { out: (l) => io.out.push(l), err: (l) => io.err.push(l) });
    expect(code).toBe(0);
    expect(io.out).toEqual([
      'created src/apis/blog-post.ts',
      'created src/controllers/blog-post-controller.ts',
      'created test/blog-post-controller.unit.test.ts',
      'created config/samples/blog-post.yaml',
      'changed src/main.ts',
      'changed src/apis/index.ts',
      'changed src/controllers/index.ts',
      'changed config/crd/kustomization.yaml',
    ]);
    // The CRD pnpm generate writes is listed for deploy and install:crds, once.
    expect(read(dir, 'config/crd/kustomization.yaml')).toMatch(/^resources:\n {2}- websites\.demo\.example\.com\.yaml\n {2}- blogposts\.demo\.example\.com\.yaml\n$/m);
    expect(read(dir, 'src/apis/blog-post.ts')).toContain("kind: 'BlogPost',\n  plural: 'blogposts',\n  namespaced: true,");
    const main = read(dir, 'src/main.ts');
    expect(main).toContain("import { BlogPost } from './apis/index.js';\n// kubeloop:scaffold:imports");
    expect(main).toContain('const kinds = [Website, BlogPost /* kubeloop:scaffold:kinds */];');
    const controllers = read(dir, 'src/controllers/index.ts');
    expect(controllers).toContain("import { setupBlogPostController } from './blog-post-controller.js';\n// kubeloop:scaffold:imports");
    // setupControllers' options (main.ts's shard ring) go on to the new controller, which shards by them.
    expect(controllers).toContain('  setupWebsiteController(manager, options);\n  setupBlogPostController(manager, options);\n  // kubeloop:scaffold:controllers');
    const controller = read(dir, 'src/controllers/blog-post-controller.ts');
    expect(controller).toContain("import type { SetupOptions } from './index.js';");
    expect(controller).toContain('export function setupBlogPostController(manager: Manager, { shard }: SetupOptions = {}): void {');
    expect(controller).toContain('.for(BlogPost, { predicates: [generationChanged()] })\n    .withOptions(shard ? { shard } : {})\n');
    expect(read(dir, 'src/apis/index.ts')).toMatch(/export \{ BlogPost \} from '\.\/blog-post\.js';\n$/);
    expect(controllers).toMatch(/export \{ setupBlogPostController \} from '\.\/blog-post-controller\.js';\n$/);
    // create api leaves the role to `pnpm generate`
    expect(existsSync(join(dir, 'config/rbac/role.yaml'))).toBe(true);
    const [sample] = parseAllDocuments(read(dir, 'config/samples/blog-post.yaml')).map((d) => d.toJSON() as Record<string, unknown>);
    expect(sample).toEqual({ apiVersion: 'demo.example.com/v1', kind: 'BlogPost', metadata: { name: 'blog-post-sample', namespace: 'default' }, spec: { message: 'Hello from BlogPost' } });

    // a second time: refused, nothing changed
    const before = read(dir, 'src/main.ts');
    const again = await createApi({ group: 'demo.example.com', version: 'v1', kind: 'BlogPost', cwd: dir }).catch((e: unknown) => e);
    expect(isCliError(again) && again.reason).toBe('InvalidInput');
    expect((again as Error).message).toContain('src/apis/blog-post.ts exists already');
    expect(read(dir, 'src/main.ts')).toBe(before);
  });

  it('after the example kind is deleted, the scheme list gets the new kind alone, and main.ts still parses', async () => {
    const dir = await project();
    // What a user does to drop Website: its import and its place in the scheme.
    const main = read(dir, 'src/main.ts').replace("import { Website } from './apis/index.js';\n", '').replace('[Website /*', '[/*');
    writeFileSync(join(dir, 'src/main.ts'), main);
    await createApi({ group: 'demo.example.com', version: 'v1', kind: 'Backup', cwd: dir });
    const after = read(dir, 'src/main.ts');
    expect(after).toContain('const kinds = [Backup /* kubeloop:scaffold:kinds */];');
    const parsed = ts.createSourceFile('main.ts', after, ts.ScriptTarget.Latest) as ts.SourceFile & { parseDiagnostics: readonly ts.Diagnostic[] };
    expect(parsed.parseDiagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
    // A second kind goes after it with a comma.
    await createApi({ group: 'demo.example.com', version: 'v1', kind: 'Restore', cwd: dir });
    expect(read(dir, 'src/main.ts')).toContain('const kinds = [Backup, Restore /* kubeloop:scaffold:kinds */];');
  });

  it('in a project made before setupControllers took options, registers the controller as the others are', async () => {
    const dir = await project();
    // A project from an earlier create-kubeloop: the scheme in createManager, setupControllers(manager).
    writeFileSync(join(dir, 'src/main.ts'), read(dir, 'src/main.ts').replace('const kinds = [Website /* kubeloop:scaffold:kinds */];\n', '').replace('builtinScheme.extend(...kinds)', 'builtinScheme.extend(Website /* kubeloop:scaffold:kinds */)'));
    const old = read(dir, 'src/controllers/index.ts').replace('setupControllers(manager: Manager, options: SetupOptions = {}): void {\n  setupWebsiteController(manager, options);', 'setupControllers(manager: Manager): void {\n  setupWebsiteController(manager);');
    expect(old).toContain('setupControllers(manager: Manager): void {');
    writeFileSync(join(dir, 'src/controllers/index.ts'), old);
    await createApi({ group: 'demo.example.com', version: 'v1', kind: 'Backup', cwd: dir });
    expect(read(dir, 'src/main.ts')).toContain('builtinScheme.extend(Website, Backup /* kubeloop:scaffold:kinds */)');
    expect(read(dir, 'src/controllers/index.ts')).toContain('  setupWebsiteController(manager);\n  setupBackupController(manager);\n');
    const controller = read(dir, 'src/controllers/backup-controller.ts');
    expect(controller).toContain('export function setupBackupController(manager: Manager): void {');
    expect(controller).not.toContain('SetupOptions');
  });

  it('--dry-run writes nothing; a cluster-scoped kind is read by name only', async () => {
    const dir = await project();
    const result = await createApi({ group: 'demo.example.com', version: 'v1alpha1', kind: 'Policy', clusterScoped: true, cwd: dir, dryRun: true });
    expect(result.created).toContain('src/apis/policy.ts');
    expect(existsSync(join(dir, 'src/apis/policy.ts'))).toBe(false);
    await createApi({ group: 'demo.example.com', version: 'v1alpha1', kind: 'Policy', clusterScoped: true, cwd: dir });
    expect(read(dir, 'src/apis/policy.ts')).toContain("plural: 'policies',\n  namespaced: false,");
    expect(read(dir, 'src/controllers/policy-controller.ts')).toContain('const key = { name: request.name };');
    expect(read(dir, 'config/samples/policy.yaml')).not.toContain('namespace:');
  });

  it('a project without the scaffold markers is left as it was, with what to do', async () => {
    const dir = await project();
    const controllers = read(dir, 'src/controllers/index.ts').replace('// kubeloop:scaffold:controllers', '');
    writeFileSync(join(dir, 'src/controllers/index.ts'), controllers);
    const main = read(dir, 'src/main.ts');
    const err = await createApi({ group: 'demo.example.com', version: 'v1', kind: 'Blog', cwd: dir }).catch((e: unknown) => e);
    expect(isCliError(err) && err.reason).toBe('InvalidInput');
    expect((err as Error).message).toContain('src/controllers/index.ts has no // kubeloop:scaffold:controllers marker');
    expect(read(dir, 'src/controllers/index.ts')).toBe(controllers);
    expect(existsSync(join(dir, 'src/apis/blog.ts'))).toBe(false);
    expect(read(dir, 'src/main.ts')).toBe(main);
    const nowhere = await createApi({ group: 'demo.example.com', version: 'v1', kind: 'Blog', cwd: join(dir, 'src') }).catch((e: unknown) => e);
    expect((nowhere as Error).message).toMatch(/src\/main\.ts not found in .*: create api works in a project made by `pnpm create kubeloop`/);
  });

  it('refuses names the API server would, with the rule', async () => {
    const dir = await project();
    const usage = async (o: Partial<Parameters<typeof createApi>[0]>): Promise<string> => {
      const err = await createApi({ group: 'demo.example.com', version: 'v1', kind: 'Blog', cwd: dir, ...o }).catch((e: unknown) => e);
      expect(isCliError(err) && err.reason).toBe('Usage');
      return (err as Error).message;
    };
    expect(await usage({ kind: 'blog' })).toContain('is not a kind: UpperCamelCase');
    expect(await usage({ version: '1' })).toContain('is not a Kubernetes version');
    expect(await usage({ group: 'nodots' })).toContain('is not an API group');
    expect(await usage({ plural: 'Blogs' })).toContain('is not a resource name');
    expect(pluralOf('Policy')).toBe('policies');
    expect(pluralOf('Box')).toBe('boxes');
    expect(pluralOf('Gateway')).toBe('gateways');
  });
});
