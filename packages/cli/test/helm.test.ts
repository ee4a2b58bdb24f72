/**
 * A new project (with webhooks) deployed onto a control plane of its own,
 * which has never seen it: `kubeloop deploy --dry-run server` passes there
 * and creates nothing; `kubeloop generate helm` writes a chart that the real
 * helm v4 (built from the Go module proxy, test/support/helm.ts) lints,
 * renders (piped to `kubectl apply --dry-run=server`) and installs, running
 * docs/helm.md's commands exactly as written. Every option of the chart is
 * rendered and checked on the API server too. envtest has no kubelet and no
 * controller-manager: the installed Deployment is stored, its pods never run.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import type { RegisteredWebhook } from '@kubeloop/manager/internal';
import { createProject } from 'create-kubeloop';
import { generateHelm, isCliError, renderWebhookManifests, runCli, webhookManifests } from '../src/index.js';
import { documentedCommands } from '../../../test/support/doc-commands.js';
import { helmBinary } from '../../../test/support/helm.js';
import { io } from './support.js';

const root = join(import.meta.dirname, '..', '..', '..');
const MINUTE = 60_000;
const name = 'website-operator';
const namespace = `${name}-system`;
let env: Environment;
let work: string;
let project: string;
let bin: string;
let helm: string;

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  [key: string]: unknown;
}

function sh(command: string, options: { stdin?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd: project, env: { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? ''}`, KUBECONFIG: env.kubeconfigPath }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

async function ok(command: string, options: { stdin?: string } = {}): Promise<string> {
  const r = await sh(command, options);
  if (r.code !== 0) throw new Error(`${command} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const objectsOf = (text: string): Obj[] => parseAllDocuments(text).map((d) => d.toJSON() as Obj | null).filter((o): o is Obj => o !== null);

beforeAll(async () => {
  // The first run on a machine builds helm (minutes); later runs find it cached.
  helm = await helmBinary();
  env = createEnvironment();
  await env.start();
  work = mkdtempSync(join(tmpdir(), 'kubeloop-helm-'));
  project = (await createProject({ name, cwd: work })).directory;
  // Webhooks, as `kubeloop create webhook` wires them; the manifests `kubeloop generate webhooks` writes from
  // the built code, made here from what its setup registers (a defaulter and a validator of Website).
  expect(await runCli(['create', 'webhook', '--group', `${name}.example.com`, '--version', 'v1', '--kind', 'Website', '--defaulting', '--programmatic-validation', '--cwd', project], io().io)).toBe(0);
  const kind = { group: `${name}.example.com`, version: 'v1', kind: 'Website', plural: 'websites', namespaced: true } as RegisteredWebhook['kind'];
  const hooks: RegisteredWebhook[] = [
    { type: 'mutating', kind, path: `/mutate-${name}-example-com-v1-website`, operations: ['CREATE', 'UPDATE'] },
    { type: 'validating', kind, path: `/validate-${name}-example-com-v1-website`, operations: ['CREATE', 'UPDATE'] },
  ];
  writeFileSync(join(project, 'config', 'webhook', 'manifests.yaml'), renderWebhookManifests(hooks, webhookManifests(hooks, { name, namespace }), 'setupWebhooks'));
  // `kubeloop` and `helm` on PATH: the built bin, as a global install or `pnpm exec` would have it, and the built helm.
  const cli = join(root, 'packages', 'cli', 'dist', 'bin.js');
  expect(existsSync(cli), 'build first (pnpm build)').toBe(true);
  bin = mkdtempSync(join(tmpdir(), 'kubeloop-helm-bin-'));
  writeFileSync(join(bin, 'kubeloop'), `#!/bin/sh\nexec "${process.execPath}" "${cli}" "$@"\n`);
  chmodSync(join(bin, 'kubeloop'), 0o755);
  symlinkSync(helm, join(bin, 'helm'));
}, 30 * MINUTE);

afterAll(async () => {
  await env?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  if (bin) await rm(bin, { recursive: true, force: true });
});

describe('deploying a new project onto a cluster that has never seen it', () => {
  it('kubeloop deploy --dry-run server passes (the namespace\'s objects checked in default) and creates nothing', async () => {
    const dry = io();
    expect(await runCli(['deploy', '--', '--dry-run', 'server', '--kubeconfig', env.kubeconfigPath, '--cwd', project], dry.io), dry.out.join('')).toBe(0);
    const out = dry.out.join('');
    expect(out).toMatch(new RegExp(`namespace ${namespace} does not exist yet and a dry run creates none, so its \\d+ object\\(s\\) are checked in namespace default instead`));
    for (const object of [`namespace/${namespace}`, `deployment.apps/${name}-manager`, `service/${name}-webhook-service`, `role.rbac.authorization.k8s.io/${name}-webhook-certificates`, `validatingwebhookconfiguration.admissionregistration.k8s.io/${name}-validating-webhook-configuration`]) {
      expect(out).toContain(`${object} serverside-applied (server dry run)`);
    }
    expect(out).not.toMatch(/not found|error/i);
    expect(await ok(`kubectl get namespace ${namespace} --ignore-not-found -o name`)).toBe('');
    expect(await ok('kubectl get deployments,services,serviceaccounts -A -o name')).not.toContain(name);
  });

  it('runs docs/helm.md exactly as written: generate, lint, template piped to a server dry run, install; the Deployment stored with the image set', async () => {
    const commands = documentedCommands(root).filter((c) => c.file === 'docs/helm.md').map((c) => c.text);
    expect(commands).toEqual([
      'kubeloop generate helm',
      'helm lint dist/chart',
      `kubectl create namespace ${namespace}`,
      `helm template ${name} dist/chart --namespace ${namespace} | kubectl apply --server-side --dry-run=server -f -`,
      `helm install ${name} dist/chart --namespace ${namespace} --set manager.image.repository=registry.example.com/${name} --set manager.image.tag=0.1.0`,
      `helm status ${name} --namespace ${namespace}`,
    ]);
    const [generate, lint, create, template, install, status] = commands as [string, string, string, string, string, string];
    expect((await sh(generate)).stderr).toContain(`kubeloop: chart ${name} in dist/chart:`);
    expect(await ok('helm version --short')).toMatch(/^v4\./);
    expect(await ok(lint)).toContain('1 chart(s) linted, 0 chart(s) failed');
    await ok(create);
    const dry = await ok(template);
    for (const object of [`customresourcedefinition.apiextensions.k8s.io/websites.${name}.example.com`, `clusterrole.rbac.authorization.k8s.io/${name}-manager`, `role.rbac.authorization.k8s.io/${name}-manager`, `serviceaccount/${name}-manager`, `deployment.apps/${name}-manager`, `service/${name}-metrics`, `service/${name}-webhook-service`, `mutatingwebhookconfiguration.admissionregistration.k8s.io/${name}-mutating-webhook-configuration`]) {
      expect(dry).toContain(`${object} serverside-applied (server dry run)`);
    }
    expect(await ok(`kubectl get deployment -n ${namespace} -o name`)).toBe(''); // a dry run
    const installed = await ok(install);
    expect(installed).toContain('STATUS: deployed');
    expect(installed).toContain(`kubectl -n ${namespace} get deployment ${name}-manager`); // NOTES.txt
    expect(await ok(status)).toMatch(/STATUS: deployed[\s\S]*REVISION: 1/);
    expect(await ok(`kubectl -n ${namespace} get deployment ${name}-manager -o jsonpath='{.spec.template.spec.containers[0].image}'`)).toBe(`registry.example.com/${name}:0.1.0`);
    // Everything the chart holds is in the cluster, in the release's namespace, owned by the release.
    const deployment = JSON.parse(await ok(`kubectl -n ${namespace} get deployment ${name}-manager -o json`)) as { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: { replicas: number; template: { spec: { containers: { args: string[] }[] } } } };
    expect(deployment.metadata.annotations['meta.helm.sh/release-name']).toBe(name);
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.template.spec.containers[0]!.args).toEqual(['--leader-elect', '--metrics-bind-address=0.0.0.0:8443', '--health-probe-bind-address=0.0.0.0:8081']);
    const crd = JSON.parse(await ok(`kubectl get crd websites.${name}.example.com -o json`)) as Obj;
    expect(crd.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    const webhook = JSON.parse(await ok(`kubectl get validatingwebhookconfiguration ${name}-validating-webhook-configuration -o json`)) as { webhooks: { clientConfig: { service: { namespace: string } } }[] };
    expect(webhook.webhooks[0]!.clientConfig.service.namespace).toBe(namespace);
    expect(await ok(`kubectl -n ${namespace} get role,rolebinding -o name`)).toContain(`role.rbac.authorization.k8s.io/${name}-webhook-certificates`);
    expect(await ok(`helm list --namespace ${namespace} --short`)).toBe(`${name}\n`);
  });

  it('renders every option into objects the API server accepts: cert-manager, Prometheus, network policies, sharding, a digest, replicas, resources', async () => {
    // cert-manager's and the Prometheus Operator's kinds, as stand-in CRDs (any fields): the server checks the rest.
    const standIn = (group: string, kind: string, plural: string): string => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: ${plural}.${group} }
spec:
  group: ${group}
  names: { kind: ${kind}, plural: ${plural}, singular: ${kind.toLowerCase()} }
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: { openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true } }
`;
    await ok('kubectl apply --server-side -f -', { stdin: [standIn('cert-manager.io', 'Issuer', 'issuers'), standIn('cert-manager.io', 'Certificate', 'certificates'), standIn('monitoring.coreos.com', 'ServiceMonitor', 'servicemonitors')].join('---\n') });
    await ok('kubectl wait --for condition=Established --timeout 60s crd/issuers.cert-manager.io crd/certificates.cert-manager.io crd/servicemonitors.monitoring.coreos.com');
    // Discovery catches up with a new CRD a little after Established.
    for (let i = 0; (await sh('kubectl api-resources --api-group=monitoring.coreos.com -o name')).stdout.trim() === '' && i < 60; i++) await new Promise((r) => setTimeout(r, 1000));
    const digest = `sha256:${'a'.repeat(64)}`;
    const other = 'operators';
    const rendered = await ok(
      `helm template ${name} dist/chart --namespace ${other} --set certManager.enable=true --set prometheus.enable=true --set networkPolicy.enable=true --set sharding.enable=true --set manager.image.repository=registry.example.com/${name} --set manager.image.digest=${digest} --set manager.replicas=3 --set-json 'manager.resources={"requests":{"cpu":"100m","memory":"128Mi"}}' --set-json 'manager.extraEnv=[{"name":"LOG_LEVEL","value":"debug"}]' --set-json 'manager.extraArgs=["--no-metrics-secure"]'`,
    );
    expect(rendered).not.toContain(namespace);
    const objects = objectsOf(rendered);
    const find = (kind: string, n: string): Obj => {
      const o = objects.find((x) => x.kind === kind && x.metadata.name === n);
      if (!o) throw new Error(`no ${kind} ${n} in:\n${objects.map((x) => `${x.kind}/${x.metadata.name}`).join('\n')}`);
      return o;
    };
    for (const o of objects) if (!['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration'].includes(o.kind)) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe(other);
    const pod = (find('Deployment', `${name}-manager`) as Obj & { spec: { replicas: number; template: { spec: { containers: { image: string; args: string[]; env: { name: string }[]; resources: unknown; volumeMounts: { name: string }[] }[]; volumes: { name: string }[] } } } }).spec;
    expect(pod.replicas).toBe(3);
    const container = pod.template.spec.containers[0]!;
    expect(container.image).toBe(`registry.example.com/${name}@${digest}`);
    expect(container.args).toEqual(['--metrics-bind-address=0.0.0.0:8443', '--health-probe-bind-address=0.0.0.0:8081', '--metrics-cert-dir=/tmp/k8s-metrics-server/metrics-certs', '--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs', `--shard-ring=${name}`, `--shard-namespace=${other}`, '--no-metrics-secure']);
    expect(container.env.map((e) => e.name)).toEqual(['POD_NAMESPACE', 'POD_NAME', 'LOG_LEVEL']);
    expect(container.resources).toEqual({ limits: { memory: '256Mi' }, requests: { cpu: '100m', memory: '128Mi' } }); // merged over values.yaml's, as --set does
    expect(container.volumeMounts.map((v) => v.name)).toEqual(['metrics-certs', 'webhook-certs']);
    expect(pod.template.spec.volumes.map((v) => v.name)).toEqual(['metrics-certs', 'webhook-certs']);
    expect(find('ValidatingWebhookConfiguration', `${name}-validating-webhook-configuration`).metadata.annotations).toEqual({ 'cert-manager.io/inject-ca-from': `${other}/${name}-serving-cert` });
    expect(objects.filter((o) => o.metadata.name === `${name}-webhook-certificates`)).toEqual([]); // cert-manager's certificates need no roles of the operator's own
    expect((find('Certificate', `${name}-serving-cert`) as Obj & { spec: { dnsNames: string[] } }).spec.dnsNames).toEqual([`${name}-webhook-service.${other}.svc`, `${name}-webhook-service.${other}.svc.cluster.local`]);
    find('Issuer', `${name}-selfsigned-issuer`);
    find('Certificate', `${name}-metrics-cert`);
    expect((find('ServiceMonitor', `${name}-metrics`) as Obj & { spec: { endpoints: { tlsConfig: unknown }[] } }).spec.endpoints[0]!.tlsConfig).toEqual({ serverName: `${name}-metrics.${other}.svc`, insecureSkipVerify: false, ca: { secret: { name: `${name}-metrics-server-cert`, key: 'ca.crt' } } });
    find('NetworkPolicy', `${name}-allow-metrics-traffic`);
    find('NetworkPolicy', `${name}-allow-webhook-traffic`);
    expect((find('Role', `${name}-shard-ring`) as Obj & { rules: unknown[] }).rules).toEqual([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'create', 'update', 'delete'] }]);
    await ok(`kubectl create namespace ${other}`);
    // The release installed above holds the cluster-wide objects (CRDs, webhook configurations) with its own namespace: a dry run of another namespace's takes them over.
    const dry = await ok('kubectl apply --server-side --force-conflicts --dry-run=server -f -', { stdin: rendered });
    expect(dry).toContain(`certificate.cert-manager.io/${name}-serving-cert serverside-applied (server dry run)`);
    expect(dry).toContain(`servicemonitor.monitoring.coreos.com/${name}-metrics serverside-applied (server dry run)`);
    expect(dry).toContain(`networkpolicy.networking.k8s.io/${name}-allow-webhook-traffic serverside-applied (server dry run)`);

    // Off by default: no CRDs when crd.enable=false, no keep annotation when crd.keep=false.
    const bare = objectsOf(await ok(`helm template ${name} dist/chart --namespace ${other} --set crd.enable=false --set leaderElection.enable=false`));
    expect(bare.filter((o) => o.kind === 'CustomResourceDefinition')).toEqual([]);
    expect(bare.filter((o) => ['Issuer', 'Certificate', 'ServiceMonitor', 'NetworkPolicy'].includes(o.kind))).toEqual([]);
    const plain = bare.find((o) => o.kind === 'Deployment') as Obj & { spec: { template: { spec: { containers: { args: string[]; volumeMounts?: unknown }[]; volumes?: unknown } } } };
    expect(plain.spec.template.spec.containers[0]!.args).not.toContain('--leader-elect');
    expect(plain.spec.template.spec.containers[0]!.volumeMounts).toBeUndefined();
    expect(plain.spec.template.spec.volumes).toBeUndefined();
    const unkept = objectsOf(await ok(`helm template ${name} dist/chart --set crd.keep=false`)).find((o) => o.kind === 'CustomResourceDefinition')!;
    expect(unkept.metadata.annotations).toBeUndefined();
  });

  it('generate helm --check: up to date after generating, stale with a diff after config/ changes', async () => {
    const check = io();
    expect(await runCli(['generate', 'helm', '--check', '--cwd', project], check.io), check.err.join('')).toBe(0);
    const deployment = join(project, 'config', 'manager', 'deployment.yaml');
    writeFileSync(deployment, readFileSync(deployment, 'utf8').replace('memory: 256Mi', 'memory: 512Mi'));
    const stale = io();
    expect(await runCli(['generate', 'helm', '--check', '--cwd', project], stale.io)).toBe(1);
    expect(stale.err.join('')).toContain('the chart in dist/chart is stale (1 file(s)); run: kubeloop generate helm');
    expect(stale.out.join('')).toContain('+      memory: 512Mi');
  });

  it('says what is wrong when the directory builds no Deployment', async () => {
    const err = await generateHelm({ cwd: project, dir: 'config/crd' }).catch((e: unknown) => e);
    expect(isCliError(err) && err.reason === 'InvalidInput' && err.message).toContain('config/crd builds no Deployment');
  });
});
