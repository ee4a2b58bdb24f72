/**
 * installCRDs of a CRD that is being deleted (what `pnpm run undeploy` leaves
 * when the operator that would remove its objects' finalizers is gone), on
 * the shared control plane: reported as `CRDTerminating`, naming the kind,
 * how many objects hold it, a few of them with their finalizers and the
 * command that frees one, without waiting out the timeout and without
 * dropping the server's own cleanup finalizer from the CRD; once the
 * objects are freed with that command, installCRDs waits for the old CRD to
 * go and creates it anew.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createEnvironment, isEnvtestError } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';
import { kubectlOk } from '../../../test/support/kubectl.js';

function sh(command: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { env: { ...process.env, KUBECONFIG: testKubeconfigPath() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

interface Stored {
  metadata: { uid: string; deletionTimestamp?: string; finalizers?: string[] };
}

describe('installCRDs of a CRD being deleted', () => {
  it('names the objects whose finalizers hold it and what to do, at once; installs it anew once they are freed', async () => {
    const group = `${uniqueName('gone')}.envtest.kubeloop.dev`;
    const crd = testCRD(group, 'Widget');
    const resource = `widgets.${group}`;
    const env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    await env.installCRDs([crd]);
    const widgets = [...Array.from({ length: 7 }, (_, i) => ({ name: `held-${i}`, finalizers: [`${group}/cleanup`] })), { name: 'free', finalizers: [] as string[] }];
    await kubectlOk(['apply', '--server-side', '-f', '-'], { stdin: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: widgets.map((w) => ({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: w.name, namespace: 'default', finalizers: w.finalizers } })) }) });
    const before = JSON.parse(await kubectlOk(['get', 'crd', resource, '-o', 'json'])) as Stored;
    await kubectlOk(['delete', 'crd', resource, '--wait=false']);

    // Generous timeout: the report must come from the objects that hold it, not from running out of time.
    const started = Date.now();
    const err: unknown = await env.installCRDs([crd], { timeoutMs: 120_000 }).then(() => undefined, (e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(isEnvtestError(err) && err.reason, String(err)).toBe('CRDTerminating');
    expect(elapsed).toBeLessThan(60_000);
    const message = (err as Error).message;
    expect(message).toMatch(new RegExp(`^CRD ${resource.replaceAll('.', '\\.')} is being deleted \\(Terminating since \\d{4}-\\d\\d-\\d\\dT[\\d:]+Z\\) and cannot be installed again until it is gone: 7 Widgets still have finalizers`));
    for (let i = 0; i < 5; i++) expect(message).toContain(`default/held-${i} (${group}/cleanup)`);
    expect(message).not.toContain('default/free');
    expect(message).toContain(', .... Run the operator that set them until it has removed them');
    const patch = `kubectl patch ${resource} held-0 -n default --type merge -p '{"metadata":{"finalizers":null}}'`;
    expect(message.endsWith(patch)).toBe(true);

    // Nothing was changed: the same CRD, still being deleted with the server's cleanup finalizer, its objects all there.
    const during = JSON.parse(await kubectlOk(['get', 'crd', resource, '-o', 'json'])) as Stored;
    expect(during.metadata.uid).toBe(before.metadata.uid);
    expect(during.metadata.deletionTimestamp).toBeDefined();
    expect(during.metadata.finalizers).toEqual(['customresourcecleanup.apiextensions.k8s.io']);
    expect((await kubectlOk(['get', resource, '-n', 'default', '-o', 'name'])).trim().split('\n')).toHaveLength(7);

    // The command the error gives, as written, and the same for the others: the CRD goes and is installed anew.
    const first = await sh(patch);
    expect(first.code, first.output).toBe(0);
    for (let i = 1; i < 7; i++) expect((await sh(patch.replace('held-0', `held-${i}`))).code).toBe(0);
    await env.installCRDs([crd], { timeoutMs: 120_000 });
    const after = JSON.parse(await kubectlOk(['get', 'crd', resource, '-o', 'json'])) as Stored;
    expect(after.metadata.uid).not.toBe(before.metadata.uid);
    expect(after.metadata.deletionTimestamp).toBeUndefined();
    expect((await kubectlOk(['get', resource, '-n', 'default', '-o', 'name'])).trim()).toBe('');
    await kubectlOk(['delete', 'crd', resource]);
  }, 5 * 60_000);
});
