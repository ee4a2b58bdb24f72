/**
 * Kinds of another project (crd.foreign, as `generate types` marks the kinds
 * it writes from CRDs): `generate crds` writes no CRD for them even when the
 * project exports them beside its own, and `generate rbac` grants a
 * controller `for` one only reads, no status verbs, which the real API
 * server's RBAC then refuses while it allows the reads.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { crdToTypeScript, generateCrds, generateRbac, isCliError, runCli } from '../src/index.js';
import { io } from './support.js';
import { kubectl, kubectlOk } from '../../../test/support/kubectl.js';
import { uniqueName } from '../../../test/support/env.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
let out: string;

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'kubeloop-cli-foreign-'));
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

describe('foreign kinds', () => {
  it('generate types marks the kinds it writes from a CRD as foreign', () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'certificates.cert-manager.io' },
      spec: {
        group: 'cert-manager.io',
        scope: 'Namespaced',
        names: { plural: 'certificates', singular: 'certificate', kind: 'Certificate', listKind: 'CertificateList' },
        versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { secretName: { type: 'string' } } } } } } }],
      },
    };
    const { text } = crdToTypeScript(crd, 'vendor/crds/certificates.yaml');
    expect(text).toContain('  crd: {\n    "foreign": true,\n    "subresources": {\n      "status": true\n    }\n  },');
  });

  it('generate crds writes the project\'s own CRDs only, and says which kinds it skipped', async () => {
    const dir = join(out, 'crds');
    const result = await generateCrds({ modules: ['foreign.ts'], outDir: dir, cwd: fixtures });
    expect(result.crds.map((c) => c.metadata.name)).toEqual(['widgets.cli.kubeloop.dev']);
    expect(result.foreign.map((k) => `${k.kind}.${k.group}`)).toEqual(['Certificate.cert-manager.foreign.kubeloop.dev']);
    expect(await readdir(dir)).toEqual(['widgets.cli.kubeloop.dev.yaml']);
    const cli = io();
    expect(await runCli(['generate', 'crds', '--module', 'foreign.ts', '--out', dir, '--check', '--cwd', fixtures], cli.io)).toBe(0);
    expect(cli.err.join('\n')).toContain("no CRD for Certificate.cert-manager.foreign.kubeloop.dev: marked crd.foreign (another project's; vendor its CRD for tests)");
    try {
      await generateCrds({ modules: ['only-foreign.ts'], outDir: dir, cwd: fixtures });
      expect.unreachable('only foreign kinds');
    } catch (err) {
      expect(isCliError(err) && `${err.reason}: ${err.message}`).toBe(
        "NoKinds: no schema-first kind is exported by only-foreign.ts (kinds are defineKind({ ..., schema }) values exported by name or in an exported array); Certificate.cert-manager.foreign.kubeloop.dev is marked crd.foreign (another project's CRD)",
      );
    }
  });

  it('generate rbac: a controller for a foreign kind only reads it; the API server allows the reads and refuses status writes', async () => {
    const result = await generateRbac({ setup: 'foreign.ts#setupControllers', kindModules: ['foreign.ts'], name: 'foreign', outFile: join(out, 'role.yaml'), cwd: fixtures });
    const rules = result.roles[0]!.rules;
    expect(rules).toContainEqual({ apiGroups: ['cert-manager.foreign.kubeloop.dev'], resources: ['certificates'], verbs: ['get', 'list', 'watch'] });
    expect(JSON.stringify(rules)).not.toContain('certificates/status');
    // The project's own kind keeps its status verbs.
    expect(rules).toContainEqual({ apiGroups: ['cli.kubeloop.dev'], resources: ['widgets/status'], verbs: ['get', 'update', 'patch'] });

    // Under the generated role on the real API server (RBAC authorizer), as the operator's ServiceAccount.
    const name = uniqueName('foreign-role');
    const role = { ...result.roles[0]!, metadata: { name } };
    const binding = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [{ kind: 'ServiceAccount', name, namespace: 'default' }] };
    await writeFile(join(out, `${name}.yaml`), [role, binding].map((d) => stringify(d)).join('---\n'));
    await kubectlOk(['apply', '--server-side', '-f', join(out, `${name}.yaml`)]);
    try {
      // A SubjectAccessReview: what the RBAC authorizer decides for the ServiceAccount (the kinds need not be installed).
      const can = async (verb: string, resource: string, subresource = ''): Promise<string> => {
        const [plural, ...group] = resource.split('.');
        const review = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: `system:serviceaccount:default:${name}`, groups: ['system:serviceaccounts', 'system:authenticated'], resourceAttributes: { verb, group: group.join('.'), resource: plural, subresource, namespace: 'default' } } };
        const answer = JSON.parse(await kubectlOk(['create', '-o', 'json', '-f', '-'], { stdin: JSON.stringify(review) })) as { status: { allowed: boolean } };
        return answer.status.allowed ? 'yes' : 'no';
      };
      // The API server's RBAC authorizer reads roles through an informer: wait until the new role is in effect.
      const deadline = Date.now() + 30_000;
      while ((await can('watch', 'certificates.cert-manager.foreign.kubeloop.dev')) !== 'yes') {
        if (Date.now() > deadline) throw new Error('the generated role never allowed watching certificates');
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(await can('patch', 'certificates.cert-manager.foreign.kubeloop.dev', 'status')).toBe('no');
      expect(await can('update', 'certificates.cert-manager.foreign.kubeloop.dev')).toBe('no');
      expect(await can('patch', 'widgets.cli.kubeloop.dev', 'status')).toBe('yes');
    } finally {
      await kubectl(['delete', '--ignore-not-found', '-f', join(out, `${name}.yaml`)]);
    }
  });
});
