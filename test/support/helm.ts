/**
 * The real `helm` (v4) for tests that check the chart `kubeloop generate
 * helm` writes: built from the Go module proxy, as envtest builds
 * kube-apiserver (packages/envtest/src/binaries.ts), and cached by version
 * under ~/.cache/kubeloop/helm/<version>/helm. `KUBELOOP_HELM` names a helm
 * to use instead. The first build on a machine takes minutes; later calls
 * find the cached binary.
 */
import { spawn } from 'node:child_process';
import { access, constants, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The released helm v4 the tests build (`go list -m -versions helm.sh/helm/v4` lists them). */
export const HELM_VERSION = 'v4.3.2';

function cacheDir(): string {
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg && xdg.length > 0 ? xdg : join(homedir(), '.cache'), 'kubeloop', 'helm', HELM_VERSION);
}

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/**
 * The path of a helm v4 binary: `KUBELOOP_HELM`, else the cached build of
 * {@link HELM_VERSION}, else one built now with `go install
 * helm.sh/helm/v4/cmd/helm@<version>` (GOBIN a fresh directory, renamed into
 * the cache when done, so a killed build leaves nothing half-written).
 */
export async function helmBinary(): Promise<string> {
  const given = process.env['KUBELOOP_HELM'];
  if (given) return given;
  const dir = cacheDir();
  const binary = join(dir, 'helm');
  const usable = (p: string): Promise<boolean> => access(p, constants.X_OK).then(() => true, () => false);
  if (await usable(binary)) return binary;
  await mkdir(join(dir, '..'), { recursive: true });
  const gobin = await mkdtemp(join(dir, '..', `.build-${HELM_VERSION}-`));
  try {
    const go = process.env['KUBELOOP_GO'] ?? 'go';
    // The version helm prints (`helm version`) is set at link time, as helm's Makefile does.
    const built = await run(go, ['install', '-trimpath', '-ldflags', `-X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}`, `helm.sh/helm/v4/cmd/helm@${HELM_VERSION}`], { ...process.env, GOBIN: gobin, GOFLAGS: '-buildvcs=false' });
    if (built.code !== 0) throw new Error(`go install helm.sh/helm/v4/cmd/helm@${HELM_VERSION} exited ${built.code}:\n${built.output.slice(-4000)}`);
    await mkdir(dir, { recursive: true });
    // Another test process may have finished first: its binary is as good as this one.
    if (!(await usable(binary))) await rename(join(gobin, 'helm'), binary);
    return binary;
  } finally {
    await rm(gobin, { recursive: true, force: true });
  }
}
