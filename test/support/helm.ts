/**
 * The real `helm` (v4) for tests that check the chart `kubeloop generate
 * helm` writes: built from the Go module proxy, as envtest builds
 * kube-apiserver (packages/envtest/src/binaries.ts), and cached by version
 * under ~/.cache/kubeloop/helm/<version>/helm. `KUBELOOP_HELM` names a helm
 * to use instead. The first build on a machine takes minutes; later calls
 * find the cached binary.
 */
import { cachedTool, runTool } from './tool-cache.ts';

/** The released helm v4 the tests build (`go list -m -versions helm.sh/helm/v4` lists them). */
export const HELM_VERSION = 'v4.3.2';

/**
 * The path of a helm v4 binary: `KUBELOOP_HELM`, else the cached build of
 * {@link HELM_VERSION}, else one built now with `go install
 * helm.sh/helm/v4/cmd/helm@<version>` (GOBIN a fresh directory, renamed into
 * the cache when done, so a killed build leaves nothing half-written).
 */
export async function helmBinary(): Promise<string> {
  const given = process.env['KUBELOOP_HELM'];
  if (given) return given;
  return cachedTool('helm', HELM_VERSION, 'helm', async (gobin) => {
    const go = process.env['KUBELOOP_GO'] ?? 'go';
    // The version helm prints (`helm version`) is set at link time, as helm's Makefile does.
    const built = await runTool(go, ['install', '-trimpath', '-ldflags', `-X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}`, `helm.sh/helm/v4/cmd/helm@${HELM_VERSION}`], {
      env: { ...process.env, GOBIN: gobin, GOFLAGS: '-buildvcs=false' },
    });
    if (built.code !== 0) throw new Error(`go install helm.sh/helm/v4/cmd/helm@${HELM_VERSION} exited ${built.code}:\n${built.output.slice(-4000)}`);
  });
}
