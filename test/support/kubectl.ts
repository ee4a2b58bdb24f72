/** kubectl as a user runs it, for tests that check what kubectl sees (its default version, its messages). */
import { spawn } from 'node:child_process';
import { testKubeconfigPath } from './env.js';

/** What kubectl printed and how it exited. */
export interface KubectlResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs kubectl against a kubeconfig (default: the shared control plane's),
 * `stdin` piped in; resolves with its exit code and output, whatever the code.
 *
 * @example
 * ```ts
 * const r = await kubectl(['apply', '-f', '-'], { stdin: JSON.stringify(disk) });
 * expect(r.stderr).toContain('spec.size');
 * ```
 */
export function kubectl(args: readonly string[], options: { readonly stdin?: string; readonly kubeconfig?: string } = {}): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', ['--kubeconfig', options.kubeconfig ?? testKubeconfigPath(), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

/** {@link kubectl} that rejects, with kubectl's stderr, unless it exits 0; resolves with stdout. */
export async function kubectlOk(args: readonly string[], options: { readonly stdin?: string; readonly kubeconfig?: string } = {}): Promise<string> {
  const r = await kubectl(args, options);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}
