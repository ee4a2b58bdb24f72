/**
 * Writes a new kubeloop operator project from the files under templates/:
 * `{{name}}`, `{{group}}` and `{{version}}` are replaced in file contents and
 * paths, and a leading `_` in a path segment becomes a `.` (npm drops some
 * dotfiles such as .gitignore from published packages).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, matchesGlob, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { CreateKubeloopError } from './errors.js';

/** Options for {@link createProject}. */
export interface CreateProjectOptions {
  /** The project's name: a DNS-1123 label (lower-case letters, digits, `-`; at most 63). Required. */
  readonly name: string;
  /** Where to create it. Default: `<cwd>/<name>`. */
  readonly directory?: string;
  /** The API group of the example kind. Default: `<name>.example.com`. */
  readonly group?: string;
  /** The @kubeloop version range base (`^<version>`). Default: this package's own version. */
  readonly kubeloopVersion?: string;
  /**
   * Add the project to the pnpm workspace found in `cwd` or above it (a
   * pnpm-workspace.yaml): no CI workflow of its own, and the workspace's
   * `packages` list gains the directory unless a pattern already covers it.
   * Default: false.
   */
  readonly workspace?: boolean;
  /** The directory the command runs in. Default: `process.cwd()`. */
  readonly cwd?: string;
}

/** What {@link createProject} wrote. */
export interface CreatedProject {
  /** The project's absolute directory. */
  readonly directory: string;
  /** The files written, relative to `directory`, sorted. */
  readonly files: readonly string[];
  /** `--workspace`: the workspace root, and whether its pnpm-workspace.yaml was changed. */
  readonly workspace?: { readonly root: string; readonly updated: boolean };
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const TEMPLATES = join(dirname(fileURLToPath(import.meta.url)), '..', 'templates');

/**
 * Checks a project name: it names the npm package, the Deployment, the
 * ServiceAccount and the namespace `<name>-system`, so it must be a DNS-1123
 * label short enough for all of them.
 *
 * @example
 * ```ts
 * validateProjectName('website-operator'); // ok
 * validateProjectName('Website_Operator'); // throws CreateKubeloopError (InvalidName)
 * ```
 */
export function validateProjectName(name: string): void {
  const problems: string[] = [];
  if (name.length === 0) problems.push('it is empty');
  if (name.length > 56) problems.push(`it is ${name.length} characters long; at most 56 (the namespace "<name>-system" must fit in 63)`);
  if (name.length > 0 && !DNS1123_LABEL.test(name)) {
    problems.push('it must consist of lower-case letters, digits and "-", and start and end with a letter or digit (a DNS-1123 label)');
  }
  if (problems.length > 0) {
    throw new CreateKubeloopError('InvalidName', `invalid project name ${JSON.stringify(name)}: ${problems.join('; ')}. Example: "website-operator"`);
  }
}

/** This package's version: the generated project depends on `^<version>` of the @kubeloop packages. */
export function ownVersion(): string {
  const manifest = JSON.parse(readFileSync(join(TEMPLATES, '..', 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

/**
 * Writes a new operator project.
 *
 * @example
 * ```ts
 * const project = await createProject({ name: 'demo' });
 * console.log(`cd ${project.directory} && pnpm install && pnpm test`);
 * ```
 */
export async function createProject(options: CreateProjectOptions): Promise<CreatedProject> {
  validateProjectName(options.name);
  const cwd = resolve(options.cwd ?? process.cwd());
  const directory = resolve(cwd, options.directory ?? options.name);
  const group = options.group ?? `${options.name}.example.com`;
  if (!DNS1123_SUBDOMAIN.test(group) || !group.includes('.') || group.length > 253) {
    throw new CreateKubeloopError('InvalidName', `invalid API group ${JSON.stringify(group)}: it must be a DNS subdomain with at least one dot, such as "example.com"`);
  }
  const workspaceRoot = options.workspace ? findWorkspaceRoot(cwd) : undefined;
  if (existsSync(directory) && (await readdir(directory)).length > 0) {
    throw new CreateKubeloopError('TargetExists', `${directory} already exists and is not empty; choose another name or directory`);
  }
  const values: Record<string, string> = { name: options.name, group, version: options.kubeloopVersion ?? ownVersion() };
  const substitute = (text: string): string => text.replace(/\{\{(name|group|version)\}\}/g, (_, key: string) => values[key]!);

  const templates = await listFiles(TEMPLATES);
  const written: string[] = [];
  try {
    for (const template of templates) {
      const target = substitute(template.split('/').map((segment) => (segment.startsWith('_') ? `.${segment.slice(1)}` : segment)).join('/'));
      if (workspaceRoot && target.startsWith('.github/')) continue; // the workspace's CI runs it
      let content = substitute(await readFile(join(TEMPLATES, template), 'utf8'));
      if (workspaceRoot && target === 'package.json') content = workspacePackageJson(content);
      await mkdir(dirname(join(directory, target)), { recursive: true });
      await writeFile(join(directory, target), content);
      written.push(target);
    }
  } catch (cause) {
    throw new CreateKubeloopError('WriteFailed', `could not write the project into ${directory}: ${(cause as Error).message}`, { cause });
  }
  written.sort();
  if (!workspaceRoot) return { directory, files: written };
  const updated = await addToWorkspace(workspaceRoot, relative(workspaceRoot, directory).split(sep).join('/'));
  return { directory, files: written, workspace: { root: workspaceRoot, updated } };
}

async function listFiles(root: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(root, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...(await listFiles(root, path)));
    else out.push(path);
  }
  return out;
}

function findWorkspaceRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
    if (dirname(dir) === dir) {
      throw new CreateKubeloopError('NoWorkspace', `--workspace: no pnpm-workspace.yaml in ${from} or any directory above it; run it inside a pnpm workspace, or leave out --workspace`);
    }
  }
}

/** A workspace package: the workspace's root owns the lockfile and CI. */
function workspacePackageJson(content: string): string {
  const manifest = JSON.parse(content) as Record<string, unknown>;
  delete manifest['engines'];
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/** Adds `path` to pnpm-workspace.yaml's `packages` unless a pattern there already matches it. */
async function addToWorkspace(root: string, path: string): Promise<boolean> {
  const file = join(root, 'pnpm-workspace.yaml');
  let doc;
  try {
    doc = parseDocument(await readFile(file, 'utf8'));
  } catch (cause) {
    throw new CreateKubeloopError('NoWorkspace', `cannot read ${file}: ${(cause as Error).message}`, { cause });
  }
  if (doc.errors.length > 0) throw new CreateKubeloopError('NoWorkspace', `${file} is not valid YAML: ${doc.errors[0]!.message}`, { cause: doc.errors[0] });
  const patterns = doc.get('packages');
  const list = (patterns as { toJSON?: () => unknown } | undefined)?.toJSON?.() ?? [];
  if (!Array.isArray(list)) throw new CreateKubeloopError('NoWorkspace', `${file}: "packages" is not a list`);
  const included = list.some((p) => typeof p === 'string' && !p.startsWith('!') && (p === path || matchesGlob(path, p.replace(/^\.\//, ''))));
  if (included) return false;
  if (patterns === undefined) doc.set('packages', [path]);
  else doc.addIn(['packages'], path);
  await writeFile(file, doc.toString());
  return true;
}
