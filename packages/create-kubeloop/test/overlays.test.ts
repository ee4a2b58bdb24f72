/**
 * The scaffold's optional kustomize components (config/prometheus, config/certmanager,
 * config/network-policy, config/grafana), enabled as config/default's comment says (uncomment
 * the lines), built with `kubectl kustomize` and sent to the shared kube-apiserver as a server-side
 * dry run, with the Prometheus Operator's and cert-manager's CRDs (test/fixtures/crds) installed so
 * the ServiceMonitor, Issuer and Certificates are validated against their real schemas. The
 * objects must also fit together: what the ServiceMonitor selects, the Secrets the certificates
 * write and the Deployment mounts, the ports the network policies open.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createProject } from '../src/index.js';

const NAME = 'overlay-demo';
const NS = `${NAME}-system`;
const FIXTURES = join(import.meta.dirname, 'fixtures', 'crds');
const COMPONENTS = ['prometheus', 'certmanager', 'network-policy'] as const;

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

function kubectl(args: readonly string[], stdin?: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync('kubectl', ['--kubeconfig', inject('kubeconfigPath'), ...args], { input: stdin ?? '', encoding: 'utf8', maxBuffer: 1 << 26 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function kubectlOk(args: readonly string[], stdin?: string): string {
  const r = kubectl(args, stdin);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

describe('the scaffold\'s kustomize components', () => {
  let work: string;
  let project: string;
  let defaultKustomization: string;

  /** config/default with the given components' lines uncommented, built by kubectl kustomize. */
  const build = (enabled: readonly string[]): K8sObject[] => {
    const text = defaultKustomization
      .split('\n')
      .map((line) => {
        if (/^# components:/.test(line) && enabled.length > 0) return 'components:';
        const m = /^#(\s+- \.\.\/([\w-]+).*)$/.exec(line);
        return m && enabled.includes(m[2]!) ? m[1]! : line;
      })
      .join('\n');
    writeFileSync(join(project, 'config', 'default', 'kustomization.yaml'), text);
    return parseAllDocuments(kubectlOk(['kustomize', join(project, 'config', 'default')])).map((d) => d.toJSON() as K8sObject);
  };

  const find = (objects: readonly K8sObject[], kind: string, name?: string): K8sObject => {
    const found = objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
    if (!found) throw new Error(`no ${kind}${name ? ` ${name}` : ''} in ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
    return found;
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'create-kubeloop-overlays-'));
    project = (await createProject({ name: NAME, cwd: work })).directory;
    defaultKustomization = readFileSync(join(project, 'config', 'default', 'kustomization.yaml'), 'utf8');
    // The third-party kinds the components create, as their projects publish them.
    for (const file of readdirSync(FIXTURES)) kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(FIXTURES, file)]);
    kubectlOk(['wait', '--for', 'condition=Established', '--timeout', '60s', 'crd/servicemonitors.monitoring.coreos.com', 'crd/certificates.cert-manager.io', 'crd/issuers.cert-manager.io']);
    // A dry-run create in a namespace that does not exist is refused: the Namespace is made for real.
    kubectlOk(['apply', '--server-side', '-f', join(project, 'config', 'manager', 'namespace.yaml')]);
  }, 120_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('config/default names each component in a commented line, and builds without them', () => {
    for (const c of COMPONENTS) expect(defaultKustomization).toMatch(new RegExp(`^#\\s+- \\.\\./${c}\\s`, 'm'));
    const kinds = build([]).map((o) => o.kind);
    expect(kinds).not.toContain('ServiceMonitor');
    expect(kinds).not.toContain('Certificate');
    expect(kinds).not.toContain('NetworkPolicy');
  });

  for (const enabled of [...COMPONENTS.map((c) => [c]), [...COMPONENTS]]) {
    it(`${enabled.join(' + ')}: kubectl kustomize, then a server-side dry run of every object`, () => {
      const objects = build(enabled);
      const manifest = objects.map((o) => JSON.stringify(o)).join('\n');
      const r = kubectl(['apply', '--server-side', '--dry-run=server', '--field-manager', 'overlays-test', '-f', '-'], manifest);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      // One line per object, each accepted as a dry run.
      expect(r.stdout.trim().split('\n')).toHaveLength(objects.length);
      expect(r.stdout).not.toMatch(/^(?!.*serverside-applied \(server dry run\)).+$/m);
    });
  }

  it('prometheus: the ServiceMonitor selects the metrics Service by its labels and scrapes its HTTPS port; the dashboard ships as a ConfigMap for Grafana\'s sidecar', () => {
    const objects = build(['prometheus']);
    const monitor = find(objects, 'ServiceMonitor');
    const spec = monitor.spec as { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; scheme: string }[] };
    const services = objects.filter((o) => o.kind === 'Service' && Object.entries(spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v));
    expect(services.map((s) => s.metadata.name)).toEqual([`${NAME}-metrics`]);
    const ports = (services[0]!.spec as { ports: { name: string }[] }).ports.map((p) => p.name);
    expect(ports).toContain(spec.endpoints[0]!.port);
    expect(spec.endpoints[0]!.scheme).toBe('https');
    const dashboard = find(objects, 'ConfigMap', `${NAME}-grafana-dashboard`);
    expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect((JSON.parse(dashboard.data!['kubeloop-operator.json']!) as { panels: unknown[] }).panels.length).toBeGreaterThan(10);
  });

  it('certmanager: the metrics certificate names the metrics Service, its Secret is mounted at --metrics-cert-dir, and the ServiceMonitor verifies it', () => {
    const objects = build(['prometheus', 'certmanager']);
    const metricsCert = find(objects, 'Certificate', `${NAME}-metrics-cert`).spec as { dnsNames: string[]; secretName: string; issuerRef: { name: string } };
    expect(metricsCert.dnsNames).toContain(`${NAME}-metrics.${NS}.svc`);
    find(objects, 'Issuer', metricsCert.issuerRef.name);
    const pod = (find(objects, 'Deployment').spec as { template: { spec: { containers: { args: string[]; volumeMounts: { name: string; mountPath: string }[] }[]; volumes: { name: string; secret?: { secretName: string } }[] } } }).template.spec;
    const volume = pod.volumes.find((v) => v.secret?.secretName === metricsCert.secretName);
    expect(volume).toBeDefined();
    const mount = pod.containers[0]!.volumeMounts.find((m) => m.name === volume!.name);
    expect(pod.containers[0]!.args).toContain(`--metrics-cert-dir=${mount!.mountPath}`);
    const tls = (find(objects, 'ServiceMonitor').spec as { endpoints: { tlsConfig: Record<string, unknown> }[] }).endpoints[0]!.tlsConfig;
    expect(tls).toEqual({ serverName: `${NAME}-metrics.${NS}.svc`, insecureSkipVerify: false, ca: { secret: { name: metricsCert.secretName, key: 'ca.crt' } } });
    const servingCert = find(objects, 'Certificate', `${NAME}-serving-cert`).spec as { dnsNames: string[]; secretName: string };
    expect(servingCert.dnsNames).toContain(`${NAME}-webhook-service.${NS}.svc`);
    expect(servingCert.secretName).toBe(`${NAME}-webhook-server-cert`);
    // The webhook certificate is mounted where --webhook-cert-dir points: the operator serves with it.
    const webhookVolume = pod.volumes.find((v) => v.secret?.secretName === servingCert.secretName);
    expect(webhookVolume).toBeDefined();
    const webhookMount = pod.containers[0]!.volumeMounts.find((m) => m.name === webhookVolume!.name);
    expect(pod.containers[0]!.args).toContain(`--webhook-cert-dir=${webhookMount!.mountPath}`);
  });

  it('certmanager: webhook configurations get cainjector\'s annotation, their own annotations kept; the roles for the operator\'s own certificates are not deployed', () => {
    // config/webhook as it is once `kubeloop create webhook` and `kubeloop generate webhooks` have run: the configurations,
    // the roles the operator's self-managed certificates need (certificates: managed, the default), and another role.
    mkdirSync(join(work, 'with-webhooks'));
    const roles = ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].map((kind) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: { name: `${NAME}-webhook-certificates`, ...(kind.startsWith('Role') ? { namespace: NS } : {}) } }));
    const other = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `${NAME}-manager` } };
    const configurations = ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration'].map((kind) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: `${NAME}-${kind.toLowerCase()}`, annotations: { mine: 'kept' } }, webhooks: [] }));
    writeFileSync(join(work, 'with-webhooks', 'webhooks.yaml'), [...configurations, ...roles, other].map((d) => JSON.stringify(d)).join('\n---\n'));
    const kustomize = (components: readonly string[]) => {
      writeFileSync(join(work, 'with-webhooks', 'kustomization.yaml'), ['resources:', '  - webhooks.yaml', ...(components.length > 0 ? ['components:', ...components.map((c) => `  - ../${NAME}/config/${c}`)] : []), ''].join('\n'));
      return parseAllDocuments(kubectlOk(['kustomize', join(work, 'with-webhooks')])).map((d) => d.toJSON() as K8sObject);
    };
    const kinds = (objects: readonly K8sObject[]) => objects.filter((o) => o.kind.startsWith('Role') || o.kind.startsWith('ClusterRole')).map((o) => `${o.kind}/${o.metadata.name}`).sort();
    // Without cert-manager the operator keeps its own certificates: the roles are deployed.
    expect(kinds(kustomize([]))).toEqual([...roles, other].map((o) => `${o.kind}/${o.metadata.name}`).sort());
    const objects = kustomize(['certmanager']);
    for (const kind of ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']) {
      expect(find(objects, kind).metadata.annotations).toEqual({ mine: 'kept', 'cert-manager.io/inject-ca-from': `${NS}/${NAME}-serving-cert` });
    }
    // With cert-manager's certificate mounted (--webhook-cert-dir) they would be unused: only the other role is left.
    expect(kinds(objects)).toEqual([`ClusterRole/${NAME}-manager`]);
  });

  it('network-policy: only the metrics port (from namespaces labelled metrics: enabled) and the webhook port are open, on the manager\'s pods', () => {
    const objects = build(['network-policy']);
    const deployment = find(objects, 'Deployment').spec as { template: { metadata: { labels: Record<string, string> }; spec: { containers: { ports: { name: string }[] }[] } } };
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy').map((o) => o.spec as { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: { from?: unknown[]; ports: { port: string }[] }[] });
    expect(policies).toHaveLength(2);
    for (const p of policies) {
      expect(Object.entries(p.podSelector.matchLabels).every(([k, v]) => deployment.template.metadata.labels[k] === v)).toBe(true);
      expect(p.policyTypes).toEqual(['Ingress']);
    }
    const open = policies.flatMap((p) => p.ingress.flatMap((i) => i.ports.map((port) => ({ port: port.port, from: i.from }))));
    expect(open).toEqual([
      { port: 'metrics', from: [{ namespaceSelector: { matchLabels: { metrics: 'enabled' } } }] },
      { port: 'webhook-server', from: undefined },
    ]);
    // The metrics port is one the manager's container names.
    expect(deployment.template.spec.containers[0]!.ports.map((p) => p.name)).toContain('metrics');
  });
});
