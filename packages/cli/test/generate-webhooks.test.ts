/**
 * kubeloop generate webhooks: the configurations a project's webhook setup
 * function implies (which kinds are validated and defaulted, at which paths,
 * for which operations), the certificate roles of managed certificates, the
 * check that converted kinds' CRDs call the webhook Service; the file
 * written, then checked; typed errors that say what to do. That the API
 * server calls a scaffolded operator through these manifests is tested in
 * scaffold-webhooks.test.ts.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { WEBHOOKS_MARKER, generateWebhooks, runCli } from '../src/index.js';
import type { GenerateWebhooksOptions } from '../src/index.js';
import { io, reason } from './support.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
let out: string;

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'kubeloop-cli-webhooks-'));
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

const base = (outFile: string, extra: Partial<GenerateWebhooksOptions> = {}): GenerateWebhooksOptions => ({
  setup: 'webhooks.ts#setupWebhooks',
  kindModules: ['webhooks.ts'],
  name: 'widgets',
  namespace: 'widgets-system',
  outFile,
  cwd: fixtures,
  ...extra,
});

describe('generate webhooks', () => {
  it('writes a validating and a mutating configuration calling the Service at controller-runtime paths, for the operations the code handles', async () => {
    const outFile = join(out, 'manifests.yaml');
    const result = await generateWebhooks(base(outFile));
    expect(result.webhooks.map((w) => `${w.type} ${w.kind.kind} ${w.path} ${w.operations.join(',')}`)).toEqual([
      'mutating Widget /mutate-cli-kubeloop-dev-v1-widget CREATE,UPDATE',
      'validating Widget /validate-cli-kubeloop-dev-v1-widget CREATE,DELETE',
      'validating Gadget /validate-cli-kubeloop-dev-v1-gadget UPDATE',
      'conversion Gizmo /convert ',
    ]);
    const service = (path: string): unknown => ({ service: { name: 'widgets-webhook-service', namespace: 'widgets-system', path } });
    const [validating, mutating] = result.manifests;
    expect(validating).toEqual({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'widgets-validating-webhook-configuration' },
      webhooks: [
        {
          name: 'vwidget-v1.cli.kubeloop.dev',
          admissionReviewVersions: ['v1'],
          clientConfig: service('/validate-cli-kubeloop-dev-v1-widget'),
          failurePolicy: 'Fail',
          sideEffects: 'None',
          timeoutSeconds: 10,
          rules: [{ apiGroups: ['cli.kubeloop.dev'], apiVersions: ['v1'], operations: ['CREATE', 'DELETE'], resources: ['widgets'], scope: 'Namespaced' }],
        },
        {
          name: 'vgadget-v1.cli.kubeloop.dev',
          admissionReviewVersions: ['v1'],
          clientConfig: service('/validate-cli-kubeloop-dev-v1-gadget'),
          failurePolicy: 'Fail',
          sideEffects: 'None',
          timeoutSeconds: 10,
          rules: [{ apiGroups: ['cli.kubeloop.dev'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['gadgets'], scope: 'Cluster' }],
        },
      ],
    });
    expect(mutating).toMatchObject({ kind: 'MutatingWebhookConfiguration', metadata: { name: 'widgets-mutating-webhook-configuration' }, webhooks: [{ name: 'mwidget-v1.cli.kubeloop.dev', clientConfig: service('/mutate-cli-kubeloop-dev-v1-widget') }] });
    // Managed certificates: the Secret in the namespace, the CA into exactly these configurations and the converted CRD.
    const roles = result.manifests.slice(2);
    expect(roles.map((m) => `${String(m['kind'])} ${String((m['metadata'] as { name: string }).name)}`)).toEqual([
      'Role widgets-webhook-certificates',
      'RoleBinding widgets-webhook-certificates',
      'ClusterRole widgets-webhook-certificates',
      'ClusterRoleBinding widgets-webhook-certificates',
    ]);
    expect(roles[0]!['rules']).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['widgets-webhook-server-cert'], verbs: ['get', 'update'] },
    ]);
    expect(roles[2]!['rules']).toEqual([
      { apiGroups: ['admissionregistration.k8s.io'], resources: ['validatingwebhookconfigurations'], resourceNames: ['widgets-validating-webhook-configuration'], verbs: ['get', 'update'] },
      { apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], resourceNames: ['widgets-mutating-webhook-configuration'], verbs: ['get', 'update'] },
      { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: ['gizmos.cli.kubeloop.dev'], verbs: ['get', 'update'] },
    ]);
    expect(roles[3]!['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'widgets-manager', namespace: 'widgets-system' }]);
    const text = await readFile(outFile, 'utf8');
    expect(text.split('\n')[0]).toContain(WEBHOOKS_MARKER);
    expect(text).toContain('#   validating Widget.v1.cli.kubeloop.dev at /validate-cli-kubeloop-dev-v1-widget on CREATE,DELETE');
    expect(parseAllDocuments(text).map((d) => d.toJS() as unknown)).toEqual(result.manifests);
  });

  it('with provided certificates (cert-manager) writes no certificate roles; with no webhooks, no documents', async () => {
    const provided = await generateWebhooks(base(join(out, 'provided.yaml'), { certificates: 'provided', serviceAccount: 'other' }));
    expect(provided.manifests.map((m) => m['kind'])).toEqual(['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']);
    const none = await generateWebhooks(base(join(out, 'none.yaml'), { setup: 'webhooks.ts#setupNothing' }));
    expect(none.manifests).toEqual([]);
    expect(parseAllDocuments(await readFile(join(out, 'none.yaml'), 'utf8')).every((d) => d.toJS() === null)).toBe(true);
  });

  it('refuses a converted kind whose CRD does not call the Service, saying what to set', async () => {
    expect(await reason(generateWebhooks(base(join(out, 'x.yaml'), { setup: 'webhooks.ts#setupUnwiredConversion' })))).toBe(
      "InvalidInput: the CRD plains.cli.kubeloop.dev does not call the webhook Service widgets-system/widgets-webhook-service at /convert for conversion: set crd: { conversion: { service: { namespace: 'widgets-system', name: 'widgets-webhook-service', path: '/convert' } } } on each version of Plain, then run kubeloop generate crds",
    );
    // The Service is named after the project: another name, another Service.
    expect(await reason(generateWebhooks(base(join(out, 'x.yaml'), { name: 'other' })))).toContain('does not call the webhook Service widgets-system/other-webhook-service');
    expect(await reason(generateWebhooks(base(join(out, 'x.yaml'), { kindModules: [] })))).toContain('none of the project\'s kinds makes the CRD gizmos.cli.kubeloop.dev');
  });

  it('refuses bad names and setups with typed errors', async () => {
    expect(await reason(generateWebhooks(base(join(out, 'x.yaml'), { name: 'Not_A_Label' })))).toMatch(/^Usage: the webhook name prefix "Not_A_Label" must be a DNS label/);
    expect(await reason(generateWebhooks(base(join(out, 'x.yaml'), { namespace: 'a.b' })))).toMatch(/^Usage: --namespace "a.b" is not a namespace name/);
    expect(await reason(generateWebhooks(base(join(out, 'x.yaml'), { setup: 'webhooks.ts' })))).toMatch(/^Usage: --setup must name a module and its export/);
    expect(await reason(generateWebhooks(base(join(out, 'x.yaml'), { setup: 'webhooks.ts#setupMissing' })))).toMatch(/^ModuleLoadFailed: webhooks.ts exports no function setupMissing \(its functions: .*setupWebhooks/);
    expect(await reason(generateWebhooks(base(join(out, 'x.yaml'), { setup: 'nowhere.js#setupWebhooks' })))).toMatch(/^ModuleLoadFailed: cannot import .*nowhere.js/);
  });

  it('--check passes on the file as generated and fails with a diff once it is edited; settings come from package.json', async () => {
    const project = await mkdtemp(join(out, 'project-'));
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: '@acme/widgets', kubeloop: { crds: { modules: [join(fixtures, 'webhooks.ts')] }, webhooks: { setup: `${join(fixtures, 'webhooks.ts')}#setupWebhooks`, namespace: 'widgets-system' } } }));
    const first = io();
    expect(await runCli(['generate', 'webhooks', '--cwd', project], first.io)).toBe(0);
    expect(first.err.join('')).toContain('wrote config/webhook/manifests.yaml: 4 webhook(s) (mutating Widget, validating Widget, validating Gadget, conversion Gizmo)');
    const check = io();
    expect(await runCli(['generate', 'webhooks', '--check', '--cwd', project], check.io)).toBe(0);
    expect(check.err.join('')).toContain('up to date');
    const file = join(project, 'config/webhook/manifests.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('timeoutSeconds: 10', 'timeoutSeconds: 30'));
    const stale = io();
    expect(await runCli(['generate', 'webhooks', '--check', '--cwd', project], stale.io)).toBe(1);
    expect(stale.out.join('')).toContain('-    timeoutSeconds: 30\n+    timeoutSeconds: 10');
    expect(stale.err.join('')).toContain('config/webhook/manifests.yaml is stale; run: kubeloop generate webhooks');
    const usage = io();
    expect(await runCli(['generate', 'webhooks', '--setup', 'x.js#f', '--name', 'x', '--cwd', out], usage.io)).toBe(2);
    expect(usage.err.join('')).toContain('generate webhooks needs --namespace');
    const certificates = io();
    expect(await runCli(['generate', 'webhooks', '--certificates', 'self', '--cwd', project], certificates.io)).toBe(2);
    expect(certificates.err.join('')).toContain('--certificates must be managed or provided, not "self"');
  });
});
