/**
 * `kubeloop deploy`: apply a project's kustomize directory (config/default)
 * with the operator's image set at deploy time, as kubebuilder's `make
 * deploy IMG=...` does, without a kustomize binary and without editing the
 * project's files: a throwaway overlay beside them names the directory as
 * its resource and sets `images:`, and `kubectl kustomize` builds it with the
 * kustomize kubectl carries.
 *
 * Namespaces go first, in their own apply, then everything else. A server
 * dry run cannot create a namespace, and the API server refuses to check an
 * object in a namespace that does not exist (kubernetes/kubernetes#83562),
 * so on a cluster without the operator's namespace the objects meant for it
 * are checked in a namespace that exists (`default`) instead, and deploy
 * says so: the dry run still changes nothing.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { CliError } from './errors.js';

/** Options for {@link deploy}. */
export interface DeployOptions {
  /** The project directory. */
  readonly cwd: string;
  /** The kustomize directory to apply, relative to `cwd`. Default: `config/default`. */
  readonly dir?: string;
  /**
   * The image to run: `registry.example.com/website-operator:0.1.0`, or
   * `...@sha256:<digest>`. Default: the manifests' own image (`<name>:latest`).
   */
  readonly image?: string;
  /** The image name in the manifests that `image` replaces. Default: the package name without its scope. */
  readonly imageName?: string;
  /**
   * `server` or `client`: kubectl's dry run, nothing changed. On a server dry run,
   * objects meant for a namespace the cluster does not have yet are checked in
   * `dryRunNamespace` instead. Default: a real apply.
   */
  readonly dryRun?: 'server' | 'client';
  /** Where a server dry run checks the objects of a namespace that does not exist yet. Default: `default`. */
  readonly dryRunNamespace?: string;
  /** kubectl's `--kubeconfig`. Default: kubectl's own (KUBECONFIG, ~/.kube/config). */
  readonly kubeconfig?: string;
  /** The kubectl to run. Default: `kubectl` on PATH. */
  readonly kubectl?: string;
  /** Where kubectl's output and deploy's notes go. Default: this process's stdout and stderr. */
  readonly output?: (text: string) => void;
}

/** A kustomize `images:` entry. */
export interface ImageOverride {
  readonly name: string;
  readonly newName: string;
  readonly newTag?: string;
  readonly digest?: string;
}

/**
 * Splits an image reference into kustomize's `images:` fields.
 *
 * @example
 * ```ts
 * imageOverride('demo', 'registry.example.com:5000/team/demo:0.1.0');
 * // { name: 'demo', newName: 'registry.example.com:5000/team/demo', newTag: '0.1.0' }
 * ```
 */
export function imageOverride(name: string, image: string): ImageOverride {
  const at = image.indexOf('@');
  if (at >= 0) {
    const digest = image.slice(at + 1);
    if (!/^[a-z0-9]+:[a-f0-9]{32,}$/.test(digest)) throw new CliError('Usage', `--image ${JSON.stringify(image)}: the digest after @ must look like sha256:<hex>`);
    return { name, newName: image.slice(0, at), digest };
  }
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  const [newName, newTag] = colon > slash ? [image.slice(0, colon), image.slice(colon + 1)] : [image, undefined];
  if (!/^[a-z0-9]+([._\-/:][a-z0-9]+)*$/.test(newName) || (newTag !== undefined && !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(newTag))) {
    throw new CliError('Usage', `--image ${JSON.stringify(image)} is not an image reference: registry/name:tag (lower-case name), e.g. registry.example.com/website-operator:0.1.0`);
  }
  return { name, newName, ...(newTag !== undefined ? { newTag } : {}) };
}

/** One object of a kustomize build, as far as deploy looks at it. */
export interface ManifestObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [key: string]: unknown };
  readonly [key: string]: unknown;
}

/** Options for {@link buildManifests}. */
export interface BuildManifestsOptions {
  /** The project directory. */
  readonly cwd: string;
  /** The kustomize directory to build, relative to `cwd`. Default: `config/default`. */
  readonly dir?: string;
  /** The image to set (see {@link DeployOptions.image}). Default: the manifests' own. */
  readonly image?: string;
  /** The image name `image` replaces. Required with `image`. */
  readonly imageName?: string;
  /** The kubectl to run. Default: `kubectl` on PATH. */
  readonly kubectl?: string;
  /** Let the kustomization name files outside its directory (kustomize's `--load-restrictor LoadRestrictionsNone`). Default: false. */
  readonly filesOutside?: boolean;
}

/**
 * Builds a kustomize directory with `kubectl kustomize` (the image set
 * through a throwaway overlay when `image` is given) and parses the objects.
 *
 * @throws {@link CliError} `Usage` for a malformed image; `InvalidInput` when
 *   the directory has no kustomization.yaml; `CommandFailed` when kubectl
 *   cannot be started or the build fails.
 * @example
 * ```ts
 * const objects = await buildManifests({ cwd: '.', image: 'registry.example.com/website-operator:0.1.0', imageName: 'website-operator' });
 * console.log(objects.map((o) => `${o.kind}/${o.metadata.name}`));
 * ```
 */
export async function buildManifests(options: BuildManifestsOptions): Promise<ManifestObject[]> {
  const cwd = resolve(options.cwd);
  const dir = resolve(cwd, options.dir ?? 'config/default');
  const hasKustomization = await stat(join(dir, 'kustomization.yaml')).then(() => true, () => false);
  if (!hasKustomization) throw new CliError('InvalidInput', `${relative(cwd, dir) || '.'} has no kustomization.yaml: deploy applies a kustomize directory such as config/default`);
  let target = dir;
  let overlay: string | undefined;
  if (options.image !== undefined) {
    if (!options.imageName) throw new CliError('Usage', 'deploy --image needs the image name the manifests use (--image-name, default: the package name)');
    const override = imageOverride(options.imageName, options.image);
    // Inside the project, so the overlay's resource is a relative path (kustomize refuses absolute ones).
    overlay = await mkdtemp(join(cwd, '.kubeloop-deploy-'));
    const kustomization = { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: [relative(overlay, dir).split(sep).join('/')], images: [override] };
    await writeFile(join(overlay, 'kustomization.yaml'), stringify(kustomization));
    target = overlay;
  }
  const kubectl = options.kubectl ?? 'kubectl';
  try {
    const built = await runKubectl(kubectl, ['kustomize', ...(options.filesOutside ? ['--load-restrictor', 'LoadRestrictionsNone'] : []), target], cwd, { capture: true });
    if (built.code !== 0) throw new CliError('CommandFailed', `kubectl kustomize ${relative(cwd, dir) || '.'} exited ${built.code}: ${built.stderr.trim()}`);
    return parseObjects(built.stdout, relative(cwd, dir) || '.');
  } finally {
    if (overlay) await rm(overlay, { recursive: true, force: true });
  }
}

function parseObjects(text: string, where: string): ManifestObject[] {
  const objects: ManifestObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new CliError('InvalidInput', `kubectl kustomize ${where} wrote YAML that does not parse: ${doc.errors[0]!.message}`);
    const value: unknown = doc.toJSON();
    if (value === null || value === undefined) continue;
    const o = value as Partial<ManifestObject>;
    if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string' || typeof o.metadata?.name !== 'string') {
      throw new CliError('InvalidInput', `kubectl kustomize ${where} built an object without apiVersion, kind and metadata.name: ${JSON.stringify(value).slice(0, 200)}`);
    }
    objects.push(o as ManifestObject);
  }
  return objects;
}

/**
 * Builds `dir` (default config/default), the image replaced when `image` is
 * given, and applies it with `kubectl apply --server-side`: the Namespaces
 * first, then the rest. Resolves to kubectl's exit code.
 *
 * A server dry run on a cluster that lacks a namespace the manifests create
 * checks that namespace's objects in `dryRunNamespace` (default `default`),
 * because the API server refuses to check an object in a namespace that does
 * not exist and a dry run creates none; nothing is changed either way.
 *
 * @throws {@link CliError} `Usage` for a malformed image; `InvalidInput` when
 *   the directory has no kustomization.yaml; `CommandFailed` when kubectl
 *   cannot be started or cannot build the directory.
 * @example
 * ```ts
 * await deploy({ cwd: '.', image: 'registry.example.com/website-operator:0.1.0', imageName: 'website-operator' });
 * ```
 */
export async function deploy(options: DeployOptions): Promise<number> {
  const cwd = resolve(options.cwd);
  const kubectl = options.kubectl ?? 'kubectl';
  const objects = await buildManifests(options);
  const global = options.kubeconfig ? ['--kubeconfig', options.kubeconfig] : [];
  const apply = ['apply', '--server-side', '--field-manager', 'kubeloop-deploy', ...(options.dryRun ? [`--dry-run=${options.dryRun}`] : []), ...global, '-f', '-'];
  const say = options.output ?? ((text: string) => process.stderr.write(text));
  const namespaces = objects.filter((o) => o.apiVersion === 'v1' && o.kind === 'Namespace');
  let rest = objects.filter((o) => !namespaces.includes(o));

  if (options.dryRun === 'server') {
    const standIn = options.dryRunNamespace ?? 'default';
    const missing: string[] = [];
    for (const ns of namespaces) {
      const found = await runKubectl(kubectl, ['get', 'namespace', ns.metadata.name, '--ignore-not-found', '-o', 'name', ...global], cwd, { capture: true });
      if (found.code !== 0) return reportFailure(say, found);
      if (found.stdout.trim() === '') missing.push(ns.metadata.name);
    }
    const moved = rest.filter((o) => o.metadata.namespace !== undefined && missing.includes(o.metadata.namespace));
    if (moved.length > 0) {
      say(`kubeloop: namespace ${missing.join(', ')} does not exist yet and a dry run creates none, so its ${moved.length} object(s) are checked in namespace ${standIn} instead (nothing is changed)\n`);
      rest = rest.map((o) => (moved.includes(o) ? { ...o, metadata: { ...o.metadata, namespace: standIn } } : o));
    }
  }

  const stream = (list: readonly ManifestObject[]): string => list.map((o) => `---\n${stringify(o)}`).join('');
  const forward = options.output ? { output: options.output } : {};
  if (namespaces.length > 0) {
    const first = await runKubectl(kubectl, apply, cwd, { stdin: stream(namespaces), ...forward });
    if (first.code !== 0) return first.code;
  }
  if (rest.length === 0) return 0;
  return (await runKubectl(kubectl, apply, cwd, { stdin: stream(rest), ...forward })).code;
}

function reportFailure(say: (text: string) => void, result: KubectlRun): number {
  say(result.stderr);
  return result.code;
}

interface KubectlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs kubectl: its output kept (`capture`), handed to `output`, or else shown as it comes (inherited). */
function runKubectl(kubectl: string, args: readonly string[], cwd: string, how: { readonly capture?: boolean; readonly stdin?: string; readonly output?: (text: string) => void }): Promise<KubectlRun> {
  return new Promise((resolvePromise, reject) => {
    const piped = how.capture === true || how.output !== undefined;
    const child = spawn(kubectl, args, { cwd, stdio: [how.stdin !== undefined ? 'pipe' : 'ignore', piped ? 'pipe' : 'inherit', piped ? 'pipe' : 'inherit'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
      how.output?.(d.toString());
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
      how.output?.(d.toString());
    });
    child.once('error', (cause) => reject(new CliError('CommandFailed', `cannot run ${kubectl}: ${cause.message} (install kubectl, or pass --kubectl PATH)`, { cause })));
    child.once('close', (code) => resolvePromise({ code: code ?? 1, stdout, stderr }));
    // kubectl may exit before reading all of stdin (a bad flag): its exit code says so, not an EPIPE.
    child.stdin?.on('error', () => undefined);
    if (how.stdin !== undefined) child.stdin?.end(how.stdin);
  });
}
