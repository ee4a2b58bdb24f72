/**
 * `kubeloop deploy`: apply a project's kustomize directory (config/default)
 * with the operator's image set at deploy time, as kubebuilder's `make
 * deploy IMG=...` does, without a kustomize binary and without editing the
 * project's files: a throwaway overlay beside them names the directory as
 * its resource and sets `images:`, and `kubectl apply -k` builds it with the
 * kustomize kubectl carries.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { stringify } from 'yaml';
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
  /** `server` or `client`: kubectl's dry run, nothing changed. Default: a real apply. */
  readonly dryRun?: 'server' | 'client';
  /** kubectl's `--kubeconfig`. Default: kubectl's own (KUBECONFIG, ~/.kube/config). */
  readonly kubeconfig?: string;
  /** The kubectl to run. Default: `kubectl` on PATH. */
  readonly kubectl?: string;
  /** Where kubectl's output goes. Default: this process's stdout and stderr. */
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

/**
 * Applies `dir` (default config/default) with `kubectl apply --server-side -k`,
 * the image replaced when `image` is given. Resolves to kubectl's exit code.
 *
 * @throws {@link CliError} `Usage` for a malformed image; `InvalidInput` when
 *   the directory has no kustomization.yaml; `CommandFailed` when kubectl
 *   cannot be started.
 * @example
 * ```ts
 * await deploy({ cwd: '.', image: 'registry.example.com/website-operator:0.1.0' });
 * ```
 */
export async function deploy(options: DeployOptions): Promise<number> {
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
  try {
    const args = ['apply', '--server-side', '--field-manager', 'kubeloop-deploy', '-k', target];
    if (options.dryRun) args.push(`--dry-run=${options.dryRun}`);
    if (options.kubeconfig) args.push('--kubeconfig', options.kubeconfig);
    return await runKubectl(options.kubectl ?? 'kubectl', args, cwd, options.output);
  } finally {
    if (overlay) await rm(overlay, { recursive: true, force: true });
  }
}

function runKubectl(kubectl: string, args: readonly string[], cwd: string, output?: (text: string) => void): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(kubectl, args, { cwd, stdio: ['ignore', output ? 'pipe' : 'inherit', output ? 'pipe' : 'inherit'] });
    child.stdout?.on('data', (d: Buffer) => output?.(d.toString()));
    child.stderr?.on('data', (d: Buffer) => output?.(d.toString()));
    child.once('error', (cause) => reject(new CliError('CommandFailed', `cannot run ${kubectl}: ${cause.message} (install kubectl, or pass --kubectl PATH)`, { cause })));
    child.once('close', (code) => resolvePromise(code ?? 1));
  });
}
