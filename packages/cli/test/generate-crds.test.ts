/**
 * kubeloop generate crds: files written and checked, stale and orphaned
 * files found, non-structural schemas refused with their path (and refused
 * by the real API server too), and the generated CRDs accepted and served by
 * kube-apiserver as declared: defaults, validation, CEL, versions with one
 * storage version and a deprecation warning, printer columns, short names,
 * categories, status and scale subresources, scope.
 */
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installCRDs } from '@kubeloop/envtest';
import { crdSchemaOf } from '@kubeloop/scheme/schema';
import { CRD_MARKER, generateCrds, isCliError, runCli } from '../src/index.js';
import { io } from './support.js';
import { Broken } from './fixtures/non-structural.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { kubeRequest } from '../../../test/support/kube-request.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
let out: string;

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'kubeloop-cli-crds-'));
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

describe('generate crds: files', () => {
  it('writes one file per CRD, then finds them up to date', async () => {
    const first = await generateCrds({ modules: ['widgets.ts'], outDir: out, cwd: fixtures });
    expect(first.crds.map((c) => c.metadata.name)).toEqual(['gadgets.cli.kubeloop.dev', 'widgets.cli.kubeloop.dev']);
    expect((await readdir(out)).sort()).toEqual(['gadgets.cli.kubeloop.dev.yaml', 'widgets.cli.kubeloop.dev.yaml']);
    expect(first.changed).toHaveLength(2);
    const text = await readFile(join(out, 'widgets.cli.kubeloop.dev.yaml'), 'utf8');
    expect(text.startsWith(CRD_MARKER)).toBe(true);
    const widget = first.crds.find((c) => c.metadata.name === 'widgets.cli.kubeloop.dev')!;
    expect(widget.spec.versions.map((v) => [v.name, v.storage, v.deprecated ?? false])).toEqual([
      ['v1', true, false],
      ['v1beta1', false, true],
    ]);
    const again = await generateCrds({ modules: ['widgets.ts'], outDir: out, cwd: fixtures, check: true });
    expect(again.changed).toEqual([]);
    expect(again.unchanged).toHaveLength(2);
  });

  it('--check exits 1 with a diff when a file is stale or orphaned, 0 when up to date', async () => {
    const ok = io();
    expect(await runCli(['generate', 'crds', '--module', 'widgets.ts', '--out', out, '--check', '--cwd', fixtures], ok.io)).toBe(0);

    const path = join(out, 'widgets.cli.kubeloop.dev.yaml');
    const original = await readFile(path, 'utf8');
    await writeFile(path, original.replace('maximum: 10', 'maximum: 12'));
    await writeFile(join(out, 'olds.cli.kubeloop.dev.yaml'), `${CRD_MARKER} from old.js; do not edit.\nkind: CustomResourceDefinition\n`);
    await writeFile(join(out, 'hand-written.yaml'), 'kind: ConfigMap\n');
    const stale = io();
    expect(await runCli(['generate', 'crds', '--module', 'widgets.ts', '--out', out, '--check', '--cwd', fixtures], stale.io)).toBe(1);
    const diff = stale.out.join('');
    expect(diff).toMatch(/^-\s+maximum: 12$/m);
    expect(diff).toMatch(/^\+\s+maximum: 10$/m);
    expect(diff).toContain('olds.cli.kubeloop.dev.yaml');
    expect(diff).not.toContain('hand-written.yaml');
    expect(stale.err.join('')).toContain('stale');

    // writing repairs the stale file and reports the orphan without deleting it
    const write = io();
    expect(await runCli(['generate', 'crds', '--module', 'widgets.ts', '--out', out, '--cwd', fixtures], write.io)).toBe(0);
    expect(await readFile(path, 'utf8')).toBe(original);
    expect(write.err.join('')).toContain('olds.cli.kubeloop.dev.yaml was generated earlier');
    await rm(join(out, 'olds.cli.kubeloop.dev.yaml'));
    await rm(join(out, 'hand-written.yaml'));
  });

  it('reads modules and outDir from package.json "kubeloop", and reports usage errors with exit 2', async () => {
    const project = await mkdtemp(join(tmpdir(), 'kubeloop-cli-project-'));
    try {
      await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'p', kubeloop: { crds: { modules: [join(fixtures, 'widgets.ts')], outDir: 'config/crd' } } }));
      const run = io();
      expect(await runCli(['generate', 'crds', '--cwd', project], run.io)).toBe(0);
      expect((await readdir(join(project, 'config', 'crd'))).length).toBe(2);

      await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'p', kubeloop: { crds: { modules: 'dist/x.js' } } }));
      const bad = io();
      expect(await runCli(['generate', 'crds', '--cwd', project], bad.io)).toBe(1);
      expect(bad.err.join('')).toContain('"kubeloop".crds.modules must be an array');
    } finally {
      await rm(project, { recursive: true, force: true });
    }
    const usage = io();
    expect(await runCli(['generate', 'crds', '--frobnicate'], usage.io)).toBe(2);
    expect(await runCli(['generate', 'nothing'], usage.io)).toBe(2);
    expect(usage.err.join('')).toContain('unknown command "generate nothing"');
    const missing = io();
    expect(await runCli(['generate', 'crds', '--module', 'no-such-module.js', '--cwd', fixtures, '--out', out], missing.io)).toBe(1);
    expect(missing.err.join('')).toContain('cannot import');
  });
});

describe('generate crds: schemas the API server would refuse', () => {
  it('refuses a non-structural schema with the offending path, and kube-apiserver refuses it too', async () => {
    const err = await generateCrds({ modules: ['non-structural.ts'], outDir: out, cwd: fixtures }).catch((e: unknown) => e);
    expect(isCliError(err) && err.reason === 'InvalidSchema').toBe(true);
    const path = 'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[value]';
    expect((err as Error).message).toContain(`${path}.anyOf[0].type: Forbidden: must be empty to be structural`);
    expect((err as Error).message).toContain(`${path}.type: Required: must not be empty for specified object fields`);

    // The same CRD, written by hand around the same schema: the server refuses it at the same paths.
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'brokens.cli.kubeloop.dev' },
      spec: { group: 'cli.kubeloop.dev', scope: 'Namespaced', names: { plural: 'brokens', kind: 'Broken', singular: 'broken', listKind: 'BrokenList' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: crdSchemaOf(Broken) } }] },
    };
    const res = await kubeRequest('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All', crd);
    expect(res.status).toBe(422);
    const fields = ((res.body as { details: { causes: { field: string }[] } }).details.causes).map((c) => c.field.replace('spec.validation.openAPIV3Schema', 'spec.versions[0].schema.openAPIV3Schema'));
    expect(fields).toContain(`${path}.anyOf[0].type`);
    expect(fields).toContain(`${path}.type`);
  });
});

describe('generate crds: the API server serves what was declared', () => {
  const ns = uniqueName('cli-crds');
  const base = `/apis/cli.kubeloop.dev/v1/namespaces/${ns}/widgets`;

  beforeAll(async () => {
    const dir = join(out, 'install');
    await generateCrds({ modules: ['widgets.ts'], outDir: dir, cwd: fixtures });
    await installCRDs(testKubeConfig(), [dir]);
    await kubeRequest('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });

  it('applies defaults and accepts a valid object', async () => {
    const res = await kubeRequest('POST', base, { apiVersion: 'cli.kubeloop.dev/v1', kind: 'Widget', metadata: { name: 'w1' }, spec: { size: '10Gi', tags: ['a', 'b'], template: { apiVersion: 'v1', kind: 'ConfigMap', data: { x: '1' } }, values: { free: { form: true } } } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const spec = (res.body as { spec: Record<string, unknown> }).spec;
    expect(spec).toMatchObject({ replicas: 1, port: 8080, mode: 'safe', size: '10Gi', values: { free: { form: true } } });
  });

  it('refuses what the schema forbids, and what a CEL rule forbids', async () => {
    const res = await kubeRequest('POST', base, { apiVersion: 'cli.kubeloop.dev/v1', kind: 'Widget', metadata: { name: 'w2' }, spec: { size: '10 GB', replicas: 11, mode: 'slow', tags: ['a', 'a'] } });
    expect(res.status).toBe(422);
    const fields = (res.body as { details: { causes: { field?: string }[] } }).details.causes.map((c) => c.field);
    expect(fields).toEqual(expect.arrayContaining(['spec.size', 'spec.replicas', 'spec.mode', 'spec.tags[1]']));
    // CEL rules run once the schema is satisfied
    const cel = await kubeRequest('POST', base, { apiVersion: 'cli.kubeloop.dev/v1', kind: 'Widget', metadata: { name: 'w2' }, spec: { size: '1', min: 5, max: 1 } });
    expect(cel.status).toBe(422);
    const causes = (cel.body as { details: { causes: { field?: string; message: string }[] } }).details.causes;
    expect(causes).toEqual([expect.objectContaining({ field: 'spec', message: expect.stringContaining('min must not exceed max') as unknown })]);
  });

  it('serves both versions, warns on the deprecated one, and stores in v1', async () => {
    const res = await kubeRequest('POST', `/apis/cli.kubeloop.dev/v1beta1/namespaces/${ns}/widgets`, { apiVersion: 'cli.kubeloop.dev/v1beta1', kind: 'Widget', metadata: { name: 'w3' }, spec: { size: '1' } });
    expect(res.status).toBe(201);
    expect(res.warnings.join(' ')).toContain('cli.kubeloop.dev/v1beta1 Widget is deprecated; use cli.kubeloop.dev/v1');
    const crd = await kubeRequest('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.cli.kubeloop.dev');
    expect((crd.body as { status: { storedVersions: string[] } }).status.storedVersions).toEqual(['v1']);
  });

  it('has its printer columns, short names, categories, status and scale subresources', async () => {
    const discovery = await kubeRequest('GET', '/apis/cli.kubeloop.dev/v1');
    const resources = (discovery.body as { resources: { name: string; shortNames?: string[]; categories?: string[] }[] }).resources;
    expect(resources.find((r) => r.name === 'widgets')).toMatchObject({ shortNames: ['wg'], categories: ['kubeloop-test'] });
    expect(resources.map((r) => r.name)).toEqual(expect.arrayContaining(['widgets/status', 'widgets/scale', 'gadgets']));
    const scale = await kubeRequest('GET', `${base}/w1/scale`);
    expect(scale.status).toBe(200);
    expect((scale.body as { spec: { replicas: number } }).spec.replicas).toBe(1);
    const columns = await tableColumns(`${base}`);
    expect(columns).toEqual(['Name', 'Replicas', 'Size']);
  });

  it('makes a cluster-scoped kind cluster-scoped', async () => {
    const name = uniqueName('gadget');
    const res = await kubeRequest('POST', '/apis/cli.kubeloop.dev/v1/gadgets', { apiVersion: 'cli.kubeloop.dev/v1', kind: 'Gadget', metadata: { name }, spec: { color: 'red' } });
    expect(res.status).toBe(201);
    await kubeRequest('DELETE', `/apis/cli.kubeloop.dev/v1/gadgets/${name}`);
  });
});

/** The column names of a Table answer (the server-side `kubectl get`). */
async function tableColumns(path: string): Promise<string[]> {
  const res = await kubeRequest('GET', path, undefined, { Accept: 'application/json;as=Table;g=meta.k8s.io;v=v1' });
  return (res.body as { columnDefinitions: { name: string }[] }).columnDefinitions.map((c) => c.name);
}
