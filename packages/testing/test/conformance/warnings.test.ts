/**
 * Conformance: the warnings built-in kinds' strategies send with a write
 * that passes (kube-apiserver v1.37.2, pkg/api/pod/warnings.go): a Pod's or
 * a workload's name that is not a DNS label, and what a pod template holds
 * that is likely a mistake. On create; on update when the generation moved
 * (a scale too); after the decoder's own warnings. Found by the differential
 * fuzzer (random seed 238290367: an apply merging a second container's port
 * 80 with the first's); the fake sent none before.
 */
import { describe, expect, it } from 'vitest';
import { BACKENDS, useBackend } from './backends.js';
import { raw } from './support.js';

const MERGE = 'application/merge-patch+json';
const w = (...texts: string[]): string => texts.map((t) => `299 - ${JSON.stringify(t)}`).join(', ');

/** Two containers defining port 80 and the name http, a host IP without a host port, an env variable hidden, fractional bytes. */
const CONTAINERS = [
  { name: 'c', image: 'i', ports: [{ containerPort: 80, name: 'http' }] },
  {
    name: 'd',
    image: 'i',
    ports: [{ containerPort: 80, name: 'http' }, { containerPort: 81, hostIP: '1.2.3.4' }],
    env: [{ name: 'A', value: '1' }, { name: 'A', value: 'x$(A)' }, { name: 'A', value: '2' }],
    resources: { limits: { memory: '2.5' }, requests: { memory: '1.5' } },
  },
];

function deployment(name: string, containers: unknown[] = CONTAINERS, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers } } }, ...extra };
}

const TEMPLATE_WARNINGS = (base: string): string[] => [
  `${base}.containers[1].resources.limits[memory]: fractional byte value "2500m" is invalid, must be an integer`,
  `${base}.containers[1].resources.requests[memory]: fractional byte value "1500m" is invalid, must be an integer`,
  `${base}.containers[1].env[2]: hides previous definition of "A", which may be dropped when using apply`,
  `${base}.containers[1].ports[0]: duplicate port definition with ${base}.containers[0].ports[0]`,
  `${base}.containers[1].ports[1]: hostIP set without hostPort: {Name: HostPort:0 ContainerPort:81 Protocol:TCP HostIP:1.2.3.4}`,
  `${base}.containers[1].ports[0]: duplicate port name "http" with ${base}.containers[0].ports[0], services and probes that select ports by name will use ${base}.containers[0].ports[0]`,
];

describe.each(BACKENDS)('built-in kinds\' strategy warnings ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  const deployments = (): string => `/apis/apps/v1/namespaces/${h().namespace}/deployments`;

  it('a Deployment\'s create: its name (not a DNS label), then its pod template; the decoder\'s warnings first', async () => {
    const res = await raw(h(), 'POST', deployments(), { query: { dryRun: 'All', fieldValidation: 'Warn' }, body: deployment('bad.name', CONTAINERS, { junk: 1 }) });
    expect(res.status).toBe(201);
    expect(res.warning).toBe(w('unknown field "junk"', 'metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]', ...TEMPLATE_WARNINGS('spec.template.spec')));
  });

  it('a long name, and a host port given two ways for one container port', async () => {
    const containers = [{ name: 'c', image: 'i', ports: [{ containerPort: 80, hostPort: 80 }, { containerPort: 80, hostPort: 80, hostIP: '1.1.1.1' }, { containerPort: 80, hostPort: 81 }] }];
    const res = await raw(h(), 'POST', deployments(), { query: { dryRun: 'All' }, body: deployment(`n${'a'.repeat(70)}`, containers) });
    expect(res.warning).toBe(
      w(
        'metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must be no more than 63 characters]',
        'spec.template.spec.containers[0].ports[1]: dangerously ambiguous port definition with spec.template.spec.containers[0].ports[0]',
      ),
    );
  });

  it('an update warns when the generation moves (a spec change, a scale), not for a label', async () => {
    const name = h().name('d');
    expect((await raw(h(), 'POST', deployments(), { body: deployment(name) })).status).toBe(201);
    const label = await raw(h(), 'PATCH', `${deployments()}/${name}`, { body: { metadata: { labels: { x: 'y' } } }, contentType: MERGE });
    expect({ status: label.status, warning: label.warning }).toEqual({ status: 200, warning: undefined });
    const spec = await raw(h(), 'PATCH', `${deployments()}/${name}`, { body: { spec: { paused: true } }, contentType: MERGE });
    expect(spec.warning).toBe(w(...TEMPLATE_WARNINGS('spec.template.spec')));
    const scaled = await raw(h(), 'PATCH', `${deployments()}/${name}/scale`, { body: { spec: { replicas: 3 } }, contentType: MERGE });
    expect({ status: scaled.status, kind: scaled.body['kind'], warning: scaled.warning }).toEqual({ status: 200, kind: 'Scale', warning: w(...TEMPLATE_WARNINGS('spec.template.spec')) });
  });

  it('a Pod: its own paths, its hostname, its deprecated annotation, repeated pull secrets and host aliases; a negative grace period is made 1 (no warning)', async () => {
    const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/pods`, {
      query: { dryRun: 'All' },
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p.x', annotations: { 'scheduler.alpha.kubernetes.io/critical-pod': '' } },
        spec: { terminationGracePeriodSeconds: -5, imagePullSecrets: [{ name: 'a' }, { name: 'a' }, { name: '' }], hostAliases: [{ ip: '1.1.1.1' }, { ip: '1.1.1.1' }], containers: CONTAINERS },
      },
    });
    expect(res.status).toBe(201);
    expect((res.body['spec'] as { terminationGracePeriodSeconds: number }).terminationGracePeriodSeconds).toBe(1);
    expect(res.warning).toBe(
      w(
        "metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]",
        'metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the "priorityClassName" field instead',
        'spec.hostAliases[1].ip: duplicate ip "1.1.1.1"',
        'spec.imagePullSecrets[1].name: duplicate name "a"',
        'spec.imagePullSecrets[2].name: invalid empty name ""',
        ...TEMPLATE_WARNINGS('spec'),
      ),
    );
  });

  it('a CronJob\'s job template, and a template\'s negative grace period', async () => {
    const res = await raw(h(), 'POST', `/apis/batch/v1/namespaces/${h().namespace}/cronjobs`, {
      query: { dryRun: 'All' },
      body: { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'c.j' }, spec: { schedule: '* * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', terminationGracePeriodSeconds: -5, containers: CONTAINERS } } } } } },
    });
    expect(res.status).toBe(201);
    expect(res.warning).toBe(
      w(
        'metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]',
        ...TEMPLATE_WARNINGS('spec.jobTemplate.spec.template.spec'),
        'spec.jobTemplate.spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1',
      ),
    );
  });

  it('a pod template\'s deprecated node labels (its node selector, a spread constraint\'s key) and a spread constraint without a selector', async () => {
    const template = {
      nodeSelector: { 'beta.kubernetes.io/os': 'linux', 'kubernetes.io/os': 'linux' },
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'failure-domain.beta.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule' },
        { maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { a: 'b' } } },
      ],
      containers: [{ name: 'c', image: 'i' }],
    };
    const body = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: h().name('d') }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: template } } };
    const res = await raw(h(), 'POST', deployments(), { query: { dryRun: 'All' }, body });
    expect(res.warning).toBe(
      w(
        'spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead',
        'spec.template.spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
        'spec.template.spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod',
      ),
    );
  });
});
