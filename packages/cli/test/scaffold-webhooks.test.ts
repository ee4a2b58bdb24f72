/**
 * A new project with `kubeloop create webhook`: the webhook class and its
 * wiring are written (src/webhooks, main, config/webhook, config/default,
 * package.json), bad requests are refused with nothing written, the project
 * builds with tsc, `kubeloop generate webhooks` writes its manifests from the
 * built code, and the real API server of the shared control plane calls back
 * into the built operator through those manifests (envtest's
 * installWebhooks pointing them at the local process, as `kubeloop-envtest
 * start --webhooks` does): a Website the webhook refuses is refused with its
 * message, a Website without content is stored defaulted.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installWebhooks } from '@kubeloop/envtest';
import type { InstalledWebhooks } from '@kubeloop/envtest';
import { createProject } from 'create-kubeloop';
import { createWebhook, generateCrds, generateWebhooks, readConfig, runCli } from '../src/index.js';
import { kubectl, kubectlOk } from '../../../test/support/kubectl.js';
import { testKubeConfig, testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { io, reason } from './support.js';

// Inside this package, so the project's imports of @kubeloop/* resolve to the workspace's packages.
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
let parent: string;

beforeAll(() => {
  parent = mkdtempSync(join(here, '..', '.tmp-scaffold-webhooks-'));
});
afterAll(() => {
  rmSync(parent, { recursive: true, force: true });
});

function run(cmd: string, args: readonly string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** Builds the project with tsc: pino-pretty (loaded by main on a terminal only) is not installed here, so a declaration stands in for its types. */
async function build(dir: string): Promise<void> {
  await mkdir(join(dir, 'typings'), { recursive: true });
  await writeFile(join(dir, 'typings', 'pino-pretty.d.ts'), "declare module 'pino-pretty';\n");
  await writeFile(join(dir, 'tsconfig.build-test.json'), JSON.stringify({ extends: './tsconfig.json', include: ['src', 'typings'] }));
  const r = await run(tsc, ['-p', 'tsconfig.build-test.json'], dir);
  if (r.code !== 0) throw new Error(`tsc failed in ${dir}:\n${r.output}`);
}

describe('kubeloop create webhook on a new project', () => {
  it('refuses what it cannot do, writing nothing', async () => {
    const dir = (await createProject({ name: 'demo', cwd: join(parent, 'refused') })).directory;
    const before = await readFile(join(dir, 'src/main.ts'), 'utf8');
    expect(await reason(createWebhook({ group: 'demo.example.com', version: 'v1', kind: 'Website', cwd: dir }))).toMatch(/^Usage: create webhook needs --defaulting .*--programmatic-validation/);
    expect(await reason(createWebhook({ group: 'demo.example.com', version: 'v1', kind: 'Blog', validation: true, cwd: dir }))).toBe(
      'InvalidInput: src/apis/index.ts does not export Blog: add the kind first (kubeloop create api --group demo.example.com --version v1 --kind Blog)',
    );
    expect(await reason(createWebhook({ group: 'other.example.com', version: 'v1', kind: 'Website', validation: true, cwd: dir }))).toBe(
      "InvalidInput: src/apis/website.ts does not define Website as other.example.com/v1: pass the kind's own --group and --version",
    );
    await writeFile(join(dir, 'src/main.ts'), before.replace(/.*kubeloop:scaffold:webhooks.*\n/, ''));
    expect(await reason(createWebhook({ group: 'demo.example.com', version: 'v1', kind: 'Website', validation: true, cwd: dir }))).toMatch(/^InvalidInput: src\/main.ts has no \/\/ kubeloop:scaffold:webhooks marker/);
    expect(existsSync(join(dir, 'src/webhooks'))).toBe(false);
    const usage = io();
    expect(await runCli(['create', 'webhook', '--group', 'demo.example.com', '--kind', 'Website', '--cwd', dir], usage.io)).toBe(2);
    expect(usage.err.join('')).toContain('create webhook needs --version');
  });

  it('wires a defaulting and validating webhook that the API server calls in the built operator', async () => {
    const name = uniqueName('wh');
    const group = `${name}.example.com`;
    const dir = (await createProject({ name, cwd: join(parent, 'called') })).directory;
    const cli = io();
    expect(await runCli(['create', 'webhook', '--group', group, '--version', 'v1', '--kind', 'Website', '--defaulting', '--programmatic-validation', '--cwd', dir], cli.io)).toBe(0);
    expect(cli.out).toEqual([
      'created src/webhooks/website-webhook.ts',
      'created src/webhooks/index.ts',
      'created config/webhook/kustomization.yaml',
      'created config/webhook/service.yaml',
      'changed src/main.ts',
      'changed config/default/kustomization.yaml',
      'changed package.json',
    ]);
    expect(await readFile(join(dir, 'src/main.ts'), 'utf8')).toContain("import { setupWebhooks } from './webhooks/index.js';");
    expect(await readFile(join(dir, 'config/default/kustomization.yaml'), 'utf8')).toContain('  - ../manager\n  - ../webhook\n');
    const config = await readConfig(dir);
    expect(config.webhooks).toEqual({ setup: 'dist/webhooks/index.js#setupWebhooks', namespace: `${name}-system` });
    const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(manifest.scripts['generate']).toBe('tsc -p tsconfig.json && rolldown -c rolldown.config.mjs && kubeloop generate crds && kubeloop generate rbac && kubeloop generate webhooks');
    expect(manifest.scripts['generate:check']).toContain('&& kubeloop generate webhooks --check');
    // A second webhook for the same kind is refused.
    expect(await reason(createWebhook({ group, version: 'v1', kind: 'Website', validation: true, cwd: dir }))).toBe('InvalidInput: src/webhooks/website-webhook.ts exists already: Website has its webhook; nothing was written');

    // The user fills in the class, as its comments say.
    const classFile = join(dir, 'src/webhooks/website-webhook.ts');
    let source = await readFile(classFile, 'utf8');
    source = source.replace("import type { Defaulter, FieldError, Validator } from '@kubeloop/webhook';", "import { fieldError } from '@kubeloop/webhook';\nimport type { Defaulter, FieldError, Validator } from '@kubeloop/webhook';");
    source = source.replace('void obj; // nothing to default yet', "obj.spec.content ??= '<p>coming soon</p>';");
    source = source.replace('void obj; // no checks yet', "if (obj.spec.title === 'forbidden') errors.push(fieldError.forbidden('spec.title', 'this title is reserved'));");
    await writeFile(classFile, source);
    await build(dir);

    const generated = await generateWebhooks({ setup: config.webhooks!.setup!, kindModules: config.crds!.modules!, name, namespace: config.webhooks!.namespace!, cwd: dir });
    expect(generated.webhooks.map((w) => `${w.type} ${w.path} ${w.operations.join(',')}`)).toEqual([`mutating /mutate-${group.replaceAll('.', '-')}-v1-website CREATE,UPDATE`, `validating /validate-${group.replaceAll('.', '-')}-v1-website CREATE,UPDATE`]);
    // The CLI's own check agrees with the file the library wrote, settings read from package.json.
    expect(await runCli(['generate', 'webhooks', '--check', '--cwd', dir], io().io)).toBe(0);
    await generateCrds({ modules: config.crds!.modules!, outDir: 'config/crd', cwd: dir });

    // The real API server, calling the local operator.
    const kubeconfig = testKubeconfigPath();
    await kubectlOk(['apply', '--server-side', '-k', join(dir, 'config/crd')]);
    let hooks: InstalledWebhooks | undefined;
    let operator: ChildProcess | undefined;
    let output = '';
    try {
      await kubectlOk(['wait', '--for=condition=Established', `crd/websites.${group}`, '--timeout=30s']);
      hooks = await installWebhooks(testKubeConfig(), { configurations: [join(dir, 'config/webhook/manifests.yaml')] });
      expect(hooks.configurations.map((c) => `${c.kind} ${c.name}`)).toEqual([`ValidatingWebhookConfiguration ${name}-validating-webhook-configuration`, `MutatingWebhookConfiguration ${name}-mutating-webhook-configuration`]);
      operator = spawn('node', ['dist/main.js', '--kubeconfig', kubeconfig, '--webhook-cert-dir', hooks.certDir, '--webhook-port', String(hooks.port), '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      operator.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      operator.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const website = (n: string, spec: object): string => JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Website', metadata: { name: n, namespace: 'default' }, spec });
      // The API server reads configurations through an informer, and the operator takes a moment to listen: retry until the webhook answers.
      const deadline = Date.now() + 60_000;
      let refused = await kubectl(['create', '-f', '-'], { stdin: website('refused', { title: 'forbidden' }) });
      while (!refused.stderr.includes('this title is reserved')) {
        if (Date.now() > deadline) throw new Error(`the webhook never refused; last answer: ${refused.stderr}\noperator:\n${output}`);
        if (refused.code === 0) await kubectl(['delete', `websites.${group}`, 'refused', '-n', 'default', '--wait=false']);
        await new Promise((r) => setTimeout(r, 500));
        refused = await kubectl(['create', '-f', '-'], { stdin: website('refused', { title: 'forbidden' }) });
      }
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim()).toBe('The Website "refused" is invalid: spec.title: Forbidden: this title is reserved');
      await kubectlOk(['create', '-f', '-'], { stdin: website('defaulted', { title: 'hello' }) });
      const stored = JSON.parse(await kubectlOk(['get', `websites.${group}`, 'defaulted', '-n', 'default', '-o', 'json'])) as { spec: { content?: string } };
      expect(stored.spec.content).toBe('<p>coming soon</p>');
    } finally {
      if (operator && operator.exitCode === null) {
        const exited = new Promise((r) => operator!.once('exit', r));
        operator.kill('SIGTERM');
        await exited;
      }
      await hooks?.uninstall();
      await kubectl(['delete', '--ignore-not-found', '--wait=false', 'crd', `websites.${group}`]);
    }
    expect(output).toContain('webhook server listening');
  }, 5 * 60_000); // tsc builds a project: slow on a loaded machine

  it('main refuses to serve webhooks outside a cluster without a certificate, saying how to get one', async () => {
    const dir = (await createProject({ name: 'nocert', cwd: join(parent, 'nocert') })).directory;
    await createWebhook({ group: 'nocert.example.com', version: 'v1', kind: 'Website', validation: true, cwd: dir });
    await build(dir);
    const r = await run('node', ['dist/main.js', '--kubeconfig', testKubeconfigPath(), '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], dir);
    expect(r.code).toBe(2);
    expect(r.output).toContain('webhooks outside a cluster need --webhook-cert-dir: `pnpm run dev` serves them on a control plane on this machine (it makes the certificate and points the webhook configurations at this process); or run with --no-webhooks');
    const bad = await run('node', ['dist/main.js', '--kubeconfig', testKubeconfigPath(), '--webhook-port', '99999'], dir);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('nocert: --webhook-port must be a port number (1-65535), not 99999');
  }, 5 * 60_000); // tsc builds a project: slow on a loaded machine
});

describe('kubeloop create webhook --conversion on a new project', () => {
  it('refuses a conversion without a spoke, a spoke that is the hub, a spoke without --conversion, writing nothing', async () => {
    const dir = (await createProject({ name: 'demo', cwd: join(parent, 'conversion-refused') })).directory;
    const base = { group: 'demo.example.com', version: 'v1', kind: 'Website', cwd: dir };
    expect(await reason(createWebhook({ ...base, conversion: true }))).toBe('Usage: --conversion needs --spoke VERSION: the other version of Website, converted to and from v1 (the hub, stored), e.g. --spoke v2');
    expect(await reason(createWebhook({ ...base, conversion: true, spokes: ['v1'] }))).toBe('Usage: --spoke v1 is --version, the hub: a spoke is another version of Website');
    expect(await reason(createWebhook({ ...base, conversion: true, spokes: ['2'] }))).toBe('Usage: --spoke "2" is not a Kubernetes version: v1, v2, v1beta1, v1alpha2');
    expect(await reason(createWebhook({ ...base, validation: true, spokes: ['v2'] }))).toBe('Usage: --spoke goes with --conversion: a spoke is a version converted to and from --version');
    // A kind file not as create api writes it (no crd stanza of its own) is left to the user.
    const kindFile = join(dir, 'src/apis/website.ts');
    await writeFile(kindFile, (await readFile(kindFile, 'utf8')).replace('  crd: {', '  crd: { // edited'));
    expect(await reason(createWebhook({ ...base, conversion: true, spokes: ['v2'] }))).toBe(
      'InvalidInput: src/apis/website.ts has no crd: { ... } stanza of its own: create webhook --conversion edits a kind as kubeloop create api writes it; define the spoke kinds and defineConversion by hand (docs/webhooks.md)',
    );
    expect(existsSync(join(dir, 'src/webhooks'))).toBe(false);
    expect(existsSync(join(dir, 'src/apis/website-v2.ts'))).toBe(false);
  });

  it('wires a conversion the API server calls in the built operator: stored at v1, read and written as v2', async () => {
    const name = uniqueName('cv');
    const group = `${name}.example.com`;
    const dir = (await createProject({ name, cwd: join(parent, 'conversion') })).directory;
    const cli = io();
    expect(await runCli(['create', 'webhook', '--group', group, '--version', 'v1', '--kind', 'Website', '--conversion', '--spoke', 'v2', '--cwd', dir], cli.io)).toBe(0);
    expect(cli.out).toEqual([
      'created src/apis/website-v2.ts',
      'created src/webhooks/website-conversion.ts',
      'created src/webhooks/index.ts',
      'created config/webhook/kustomization.yaml',
      'created config/webhook/service.yaml',
      'changed src/apis/website.ts',
      'changed src/apis/index.ts',
      'changed src/main.ts',
      'changed config/default/kustomization.yaml',
      'changed package.json',
    ]);
    // Asked again: the conversion exists.
    expect(await reason(createWebhook({ group, version: 'v1', kind: 'Website', conversion: true, spokes: ['v2'], cwd: dir }))).toBe('InvalidInput: src/webhooks/website-conversion.ts exists already: Website has its conversion; nothing was written');

    // The user changes v2 (the page title is its headline) and the two functions with it.
    const spokeFile = join(dir, 'src/apis/website-v2.ts');
    await writeFile(spokeFile, (await readFile(spokeFile, 'utf8')).replace("title: Type.String({ minLength: 1, description: 'The page title.' })", "headline: Type.String({ minLength: 1, description: 'The page title.' })").replace("jsonPath: '.spec.title'", "jsonPath: '.spec.headline'"));
    const conversionFile = join(dir, 'src/webhooks/website-conversion.ts');
    const generated = await readFile(conversionFile, 'utf8');
    const edited = generated
      .replace(`toHub: (obj) => ({ ...obj, apiVersion: '${group}/v1' }),`, `toHub: ({ spec: { headline, ...spec }, ...obj }) => ({ ...obj, apiVersion: '${group}/v1', spec: { ...spec, title: headline } }),`)
      .replace(`fromHub: (obj) => ({ ...obj, apiVersion: '${group}/v2' }),`, `fromHub: ({ spec: { title, ...spec }, ...obj }) => ({ ...obj, apiVersion: '${group}/v2', spec: { ...spec, headline: title } }),`);
    expect(edited).not.toBe(generated);
    await writeFile(conversionFile, edited);
    await build(dir);

    const config = await readConfig(dir);
    const crds = await generateCrds({ modules: config.crds!.modules!, outDir: 'config/crd', cwd: dir });
    const crd = crds.crds.find((c) => c.metadata.name === `websites.${group}`)!;
    expect(crd.spec.versions.map((v) => `${v.name} served=${v.served} storage=${v.storage}`).sort()).toEqual(['v1 served=true storage=true', 'v2 served=true storage=false']);
    expect(crd.spec.conversion).toMatchObject({ strategy: 'Webhook', webhook: { clientConfig: { service: { name: `${name}-webhook-service`, namespace: `${name}-system`, path: '/convert' } } } });
    // generate webhooks finds the conversion and checks the CRD calls the Service; the certificate role may update that CRD.
    const webhooks = await generateWebhooks({ setup: config.webhooks!.setup!, kindModules: config.crds!.modules!, name, namespace: config.webhooks!.namespace!, cwd: dir });
    expect(webhooks.webhooks.map((w) => `${w.type} ${w.path}`)).toEqual(['conversion /convert']);
    expect(JSON.stringify(webhooks.manifests)).toContain(`"resources":["customresourcedefinitions"],"resourceNames":["websites.${group}"]`);

    // The real API server converting through the local operator.
    await kubectlOk(['apply', '--server-side', '-f', join(dir, 'config/crd', `websites.${group}.yaml`)]);
    let hooks: InstalledWebhooks | undefined;
    let operator: ChildProcess | undefined;
    let output = '';
    try {
      await kubectlOk(['wait', '--for=condition=Established', `crd/websites.${group}`, '--timeout=30s']);
      hooks = await installWebhooks(testKubeConfig(), { conversionCRDs: [`websites.${group}`] });
      operator = spawn('node', ['dist/main.js', '--kubeconfig', testKubeconfigPath(), '--webhook-cert-dir', hooks.certDir, '--webhook-port', String(hooks.port), '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      operator.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      operator.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      await kubectlOk(['create', '-f', '-'], { stdin: JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Website', metadata: { name: 'stored-v1', namespace: 'default' }, spec: { title: 'Hello', content: '<p>hi</p>' } }) });
      // Read as v2 once the operator answers /convert (the API server fails the read until then).
      const deadline = Date.now() + 60_000;
      let read = await kubectl(['get', `websites.v2.${group}`, 'stored-v1', '-n', 'default', '-o', 'json']);
      while (read.code !== 0) {
        if (Date.now() > deadline) throw new Error(`no read as v2 within a minute: ${read.stderr}\noperator:\n${output}`);
        await new Promise((r) => setTimeout(r, 500));
        read = await kubectl(['get', `websites.v2.${group}`, 'stored-v1', '-n', 'default', '-o', 'json']);
      }
      const asV2 = JSON.parse(read.stdout) as { apiVersion: string; spec: Record<string, unknown> };
      expect(asV2.apiVersion).toBe(`${group}/v2`);
      expect(asV2.spec).toEqual({ headline: 'Hello', content: '<p>hi</p>' });
      // Written as v2 (a merge patch of the headline), read back as v1: the title changed, the rest kept.
      await kubectlOk(['patch', `websites.v2.${group}`, 'stored-v1', '-n', 'default', '--type', 'merge', '-p', JSON.stringify({ spec: { headline: 'Changed' } })]);
      const asV1 = JSON.parse(await kubectlOk(['get', `websites.v1.${group}`, 'stored-v1', '-n', 'default', '-o', 'json'])) as { apiVersion: string; spec: Record<string, unknown> };
      expect(asV1.apiVersion).toBe(`${group}/v1`);
      expect(asV1.spec).toEqual({ title: 'Changed', content: '<p>hi</p>' });
      // Created as v2, stored as v1.
      await kubectlOk(['create', '-f', '-'], { stdin: JSON.stringify({ apiVersion: `${group}/v2`, kind: 'Website', metadata: { name: 'created-v2', namespace: 'default' }, spec: { headline: 'From v2' } }) });
      const created = JSON.parse(await kubectlOk(['get', `websites.v1.${group}`, 'created-v2', '-n', 'default', '-o', 'json'])) as { spec: Record<string, unknown> };
      expect(created.spec).toEqual({ title: 'From v2' });
    } finally {
      if (operator && operator.exitCode === null) {
        const exited = new Promise((r) => operator!.once('exit', r));
        operator.kill('SIGTERM');
        await exited;
      }
      await hooks?.uninstall();
      await kubectl(['delete', '--ignore-not-found', '--wait=false', 'crd', `websites.${group}`]);
    }
    expect(output).toContain('webhook server listening');
  }, 5 * 60_000); // tsc builds a project: slow on a loaded machine
});
