/**
 * Hand-written differential probes, in the families the generated
 * sequences do not reach: built-in workload kinds and what their strategies
 * default, strategic merge patches of their lists by merge key, server-side
 * apply with list-map keys the server fills by default, custom resources
 * pruned by a structural schema, dry runs and deletes of built-ins, status
 * writes, and kubectl as a client. Each probe is a short sequence of raw
 * requests (or kubectl runs) in a namespace of its own; probes.test.ts runs
 * each on the fake and on envtest and compares the normalised answers.
 */
import type { Json } from './requests.js';

/** A raw request; `{ns}` in the path and body is the probe's namespace. */
export interface ProbeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
  readonly contentType?: string;
}

/** kubectl with these arguments (`-n <ns>` added), `stdin` piped in. */
export interface ProbeKubectl {
  readonly kubectl: readonly string[];
  readonly stdin?: unknown;
}

export type ProbeStep = ProbeRequest | ProbeKubectl;

export interface Probe {
  readonly name: string;
  readonly steps: readonly ProbeStep[];
}

const MERGE = 'application/merge-patch+json';
const JSONPATCH = 'application/json-patch+json';
const SMP = 'application/strategic-merge-patch+json';
const APPLY = 'application/apply-patch+yaml';

const core = (plural: string): string => `/api/v1/namespaces/{ns}/${plural}`;
const apps = (plural: string): string => `/apis/apps/v1/namespaces/{ns}/${plural}`;
const batch = (plural: string): string => `/apis/batch/v1/namespaces/{ns}/${plural}`;

const container = (name: string, image: string, extra: Json = {}): Json => ({ name, image, ...extra });
const template = (spec: Json = {}): Json => ({ metadata: { labels: { app: 'p' } }, spec: { containers: [container('c', 'nginx')], ...spec } });
const pod = (name: string, spec: Json = {}): Json => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [container('c', 'nginx')], ...spec } });
const deployment = (name: string, spec: Json = {}, tmpl: Json = {}): Json => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name }, spec: { selector: { matchLabels: { app: 'p' } }, template: template(tmpl), ...spec } });
const service = (name: string, spec: Json = {}): Json => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { selector: { app: 'p' }, ports: [{ port: 80 }], ...spec } });

/** Create then read back: what the server stores. */
function created(path: string, obj: Json, query?: Record<string, string>): ProbeStep[] {
  const name = (obj['metadata'] as Json)['name'] as string;
  return [{ method: 'POST', path, body: obj, ...(query ? { query } : {}) }, { method: 'GET', path: `${path}/${name}` }];
}

const CRD_GROUP = 'probes.kubeloop.dev';

/** A CRD with a structural schema (unknown fields pruned) and one subtree that keeps them. */
export const PROBE_CRD: Json = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `gizmos.${CRD_GROUP}` },
  spec: {
    group: CRD_GROUP,
    scope: 'Namespaced',
    names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo', listKind: 'GizmoList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  size: { type: 'integer', default: 1 },
                  mode: { type: 'string', enum: ['a', 'b'] },
                  port: { 'x-kubernetes-int-or-string': true },
                  free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  tags: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
                  limits: { type: 'object', additionalProperties: { type: 'string' } },
                  items: {
                    type: 'array',
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['name'],
                    items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, value: { type: 'string', default: 'v' } } },
                  },
                  embedded: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true },
                },
              },
              status: { type: 'object', properties: { phase: { type: 'string' }, count: { type: 'integer' } } },
            },
          },
        },
      },
    ],
  },
};
const gizmos = `/apis/${CRD_GROUP}/v1/namespaces/{ns}/gizmos`;
const gizmo = (name: string, spec: Json, extra: Json = {}): Json => ({ apiVersion: `${CRD_GROUP}/v1`, kind: 'Gizmo', metadata: { name }, spec, ...extra });

export const PROBES: readonly Probe[] = [
  // --- defaults the built-in strategies and the server's defaulting write
  { name: 'pod: minimal defaults', steps: created(core('pods'), pod('p')) },
  { name: 'pod: tagged image, ports, env', steps: created(core('pods'), pod('p', { containers: [container('c', 'nginx:1.25', { ports: [{ containerPort: 80 }, { containerPort: 53, protocol: 'UDP', name: 'dns' }], env: [{ name: 'A', value: '1' }] })] })) },
  { name: 'pod: limits without requests', steps: created(core('pods'), pod('p', { containers: [container('c', 'nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000', { resources: { limits: { cpu: '0.5', memory: '128Mi' } } })] })) },
  { name: 'pod: init container, restartPolicy Never, volumes', steps: created(core('pods'), pod('p', { restartPolicy: 'Never', initContainers: [container('i', 'busybox:latest')], volumes: [{ name: 'v', emptyDir: {} }, { name: 's', secret: { secretName: 's' } }, { name: 'c', configMap: { name: 'c' } }] })) },
  { name: 'pod: probes and lifecycle', steps: created(core('pods'), pod('p', { containers: [container('c', 'nginx', { livenessProbe: { httpGet: { path: '/', port: 80 } }, readinessProbe: { tcpSocket: { port: 'http' } }, ports: [{ containerPort: 80, name: 'http' }] })] })) },
  { name: 'pod: hostNetwork dnsPolicy', steps: created(core('pods'), pod('p', { hostNetwork: true })) },
  { name: 'pod: dry-run create', steps: [{ method: 'POST', path: core('pods'), query: { dryRun: 'All' }, body: pod('p') }, { method: 'GET', path: `${core('pods')}/p` }] },
  { name: 'pod: status patch keeps spec', steps: [...created(core('pods'), pod('p')), { method: 'PATCH', path: `${core('pods')}/p/status`, contentType: MERGE, body: { status: { phase: 'Running' }, spec: { activeDeadlineSeconds: 5 } } }] },
  { name: 'pod: field selector on nodeName and phase', steps: [...created(core('pods'), pod('p', { nodeName: 'n1' })), { method: 'POST', path: core('pods'), body: pod('q') }, { method: 'GET', path: core('pods'), query: { fieldSelector: 'spec.nodeName=n1' } }, { method: 'GET', path: core('pods'), query: { fieldSelector: 'status.phase=Pending,spec.nodeName!=n1' } }] },
  { name: 'deployment: minimal defaults', steps: created(apps('deployments'), deployment('d')) },
  { name: 'deployment: Recreate strategy', steps: created(apps('deployments'), deployment('d', { strategy: { type: 'Recreate' }, replicas: 3 })) },
  { name: 'deployment: rolling update given in part', steps: created(apps('deployments'), deployment('d', { strategy: { rollingUpdate: { maxSurge: 2 } } })) },
  { name: 'replicaset: defaults', steps: created(apps('replicasets'), { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'r' }, spec: { selector: { matchLabels: { app: 'p' } }, template: template() } }) },
  { name: 'statefulset: defaults', steps: created(apps('statefulsets'), { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's' }, spec: { serviceName: 's', selector: { matchLabels: { app: 'p' } }, template: template() } }) },
  { name: 'statefulset: volumeClaimTemplates', steps: created(apps('statefulsets'), { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's' }, spec: { selector: { matchLabels: { app: 'p' } }, template: template(), volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }] } }) },
  { name: 'daemonset: defaults', steps: created(apps('daemonsets'), { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'ds' }, spec: { selector: { matchLabels: { app: 'p' } }, template: template() } }) },
  { name: 'replicationcontroller: defaults', steps: created(core('replicationcontrollers'), { apiVersion: 'v1', kind: 'ReplicationController', metadata: { name: 'rc' }, spec: { selector: { app: 'p' }, template: template() } }) },
  { name: 'podtemplate: defaults', steps: created(core('podtemplates'), { apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 'pt' }, template: template() }) },
  { name: 'job: defaults', steps: created(batch('jobs'), { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [container('c', 'busybox')] } } } }) },
  { name: 'job: indexed', steps: created(batch('jobs'), { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { completions: 3, completionMode: 'Indexed', template: { spec: { restartPolicy: 'OnFailure', containers: [container('c', 'busybox')] } } } }) },
  { name: 'cronjob: defaults', steps: created(batch('cronjobs'), { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'cj' }, spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [container('c', 'busybox')] } } } } } }) },
  { name: 'service: ClusterIP defaults', steps: created(core('services'), service('s')) },
  { name: 'service: named targetPort, two ports', steps: created(core('services'), service('s', { ports: [{ name: 'http', port: 80, targetPort: 'web' }, { name: 'dns', port: 53, protocol: 'UDP' }] })) },
  { name: 'service: headless', steps: created(core('services'), service('s', { clusterIP: 'None' })) },
  { name: 'service: ExternalName', steps: created(core('services'), { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { type: 'ExternalName', externalName: 'example.com' } }) },
  { name: 'service: sessionAffinity ClientIP', steps: created(core('services'), service('s', { sessionAffinity: 'ClientIP' })) },
  { name: 'pvc: defaults', steps: created(core('persistentvolumeclaims'), { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }) },
  { name: 'serviceaccount, role, rolebinding', steps: [...created(core('serviceaccounts'), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa' } }), ...created('/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles', { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] }), ...created('/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings', { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'rb' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' }, subjects: [{ kind: 'ServiceAccount', name: 'sa' }, { kind: 'User', name: 'u' }] })] },
  { name: 'networkpolicy: defaults', steps: created('/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies', { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'np' }, spec: { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] } }) },
  { name: 'ingress: defaults', steps: created('/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses', { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'i' }, spec: { rules: [{ host: 'a.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 's', port: { number: 80 } } } }] } }] } }) },
  { name: 'hpa v2: defaults', steps: created('/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers', { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h' }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' }, maxReplicas: 3 } }) },
  { name: 'pdb: defaults', steps: created('/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets', { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'b' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'p' } } } }) },
  { name: 'lease: microtime', steps: created('/apis/coordination.k8s.io/v1/namespaces/{ns}/leases', { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l' }, spec: { holderIdentity: 'me', leaseDurationSeconds: 15, renewTime: '2026-01-02T03:04:05.123456Z' } }) },
  { name: 'secret: tls type and stringData', steps: created(core('secrets'), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'c', 'tls.key': 'k' } }) },
  { name: 'configmap: binaryData and immutable', steps: [...created(core('configmaps'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, binaryData: { b: 'AAE=' }, immutable: true }), { method: 'PATCH', path: `${core('configmaps')}/c`, contentType: MERGE, body: { data: { a: '1' } } }] },

  // --- no-op writes of built-ins
  { name: 'deployment: update with defaults left out is not a no-op only if defaults change', steps: [...created(apps('deployments'), deployment('d')), { method: 'PUT', path: `${apps('deployments')}/d`, body: deployment('d') }, { method: 'GET', path: `${apps('deployments')}/d` }] },
  { name: 'deployment: merge patch with an equal value', steps: [...created(apps('deployments'), deployment('d', { replicas: 2 })), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: MERGE, body: { spec: { replicas: 2 } } }] },
  { name: 'service: re-apply the same spec', steps: [{ method: 'PATCH', path: `${core('services')}/s`, query: { fieldManager: 'm' }, contentType: APPLY, body: service('s') }, { method: 'PATCH', path: `${core('services')}/s`, query: { fieldManager: 'm' }, contentType: APPLY, body: service('s') }] },
  { name: 'pod: quantity written another way', steps: [...created(core('pods'), pod('p', { containers: [container('c', 'nginx', { resources: { requests: { cpu: '500m' } } })] })), { method: 'PATCH', path: `${core('pods')}/p`, contentType: SMP, body: { spec: { containers: [{ name: 'c', resources: { requests: { cpu: '0.5' } } }] } } }] },

  // --- strategic merge patches of built-in lists
  { name: 'smp: container image by name', steps: [...created(apps('deployments'), deployment('d', {}, { containers: [container('a', 'nginx'), container('b', 'redis')] })), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: SMP, body: { spec: { template: { spec: { containers: [{ name: 'b', image: 'redis:7' }] } } } } }] },
  { name: 'smp: add a container', steps: [...created(apps('deployments'), deployment('d')), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: SMP, body: { spec: { template: { spec: { containers: [{ name: 'side', image: 'busybox' }] } } } } }] },
  { name: 'smp: delete a container', steps: [...created(apps('deployments'), deployment('d', {}, { containers: [container('a', 'nginx'), container('b', 'redis')] })), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: SMP, body: { spec: { template: { spec: { containers: [{ name: 'a', $patch: 'delete' }] } } } } }] },
  { name: 'smp: env by name, set and delete', steps: [...created(core('pods'), pod('p', { containers: [container('c', 'nginx', { env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] })] })), { method: 'PATCH', path: `${core('pods')}/p`, contentType: SMP, body: { spec: { containers: [{ name: 'c', env: [{ name: 'B', value: '3' }, { name: 'A', $patch: 'delete' }, { name: 'C', value: '4' }] }] } } }] },
  { name: 'smp: ports by containerPort', steps: [...created(apps('deployments'), deployment('d', {}, { containers: [container('c', 'nginx', { ports: [{ containerPort: 80, name: 'http' }] })] })), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: SMP, body: { spec: { template: { spec: { containers: [{ name: 'c', ports: [{ containerPort: 443, name: 'https' }] }] } } } } }] },
  { name: 'smp: service ports by port', steps: [...created(core('services'), service('s', { ports: [{ name: 'a', port: 80 }, { name: 'b', port: 81 }] })), { method: 'PATCH', path: `${core('services')}/s`, contentType: SMP, body: { spec: { ports: [{ port: 81, targetPort: 8081, name: 'b' }] } } }] },
  { name: 'smp: volumes by name and setElementOrder', steps: [...created(apps('deployments'), deployment('d', {}, { volumes: [{ name: 'a', emptyDir: {} }, { name: 'b', emptyDir: {} }] })), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: SMP, body: { spec: { template: { spec: { '$setElementOrder/volumes': [{ name: 'b' }, { name: 'a' }], volumes: [{ name: 'a', emptyDir: { medium: 'Memory' } }] } } } } }] },
  { name: 'smp: tolerations replaced (no merge key)', steps: [...created(core('pods'), pod('p', { tolerations: [{ key: 'a', operator: 'Exists' }] })), { method: 'PATCH', path: `${core('pods')}/p`, contentType: SMP, body: { spec: { tolerations: [{ key: 'b', operator: 'Exists' }] } } }] },
  { name: 'smp: retainKeys on strategy', steps: [...created(apps('deployments'), deployment('d')), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: SMP, body: { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate' } } } }] },
  { name: 'smp: Recreate without retainKeys', steps: [...created(apps('deployments'), deployment('d')), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: SMP, body: { spec: { strategy: { type: 'Recreate' } } } }] },
  { name: 'smp: labels null deletes a key', steps: [...created(apps('deployments'), { ...deployment('d'), metadata: { name: 'd', labels: { a: '1', b: '2' } } }), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: SMP, body: { metadata: { labels: { a: null } } } }] },
  { name: 'smp: finalizers list merge', steps: [...created(core('configmaps'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', finalizers: ['example.com/a'] } }), { method: 'PATCH', path: `${core('configmaps')}/c`, contentType: SMP, body: { metadata: { finalizers: ['example.com/b'] } } }, { method: 'PATCH', path: `${core('configmaps')}/c`, contentType: SMP, body: { metadata: { '$deleteFromPrimitiveList/finalizers': ['example.com/a', 'example.com/b'] } } }] },
  { name: 'json patch: replace image of container 0', steps: [...created(apps('deployments'), deployment('d')), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: JSONPATCH, body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'nginx:2' }] }] },
  { name: 'json patch: test fails', steps: [...created(apps('deployments'), deployment('d')), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: JSONPATCH, body: [{ op: 'test', path: '/spec/replicas', value: 5 }] }] },
  { name: 'json patch: remove a missing path', steps: [...created(core('configmaps'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } }), { method: 'PATCH', path: `${core('configmaps')}/c`, contentType: JSONPATCH, body: [{ op: 'remove', path: '/data/b' }] }] },
  { name: 'merge patch: replicas as a string', steps: [...created(apps('deployments'), deployment('d')), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: MERGE, body: { spec: { replicas: '3' } } }] },

  // --- server-side apply of built-ins
  { name: 'apply: deployment create, then a second manager scales', steps: [{ method: 'PATCH', path: `${apps('deployments')}/d`, query: { fieldManager: 'a' }, contentType: APPLY, body: deployment('d', { replicas: 2 }) }, { method: 'PATCH', path: `${apps('deployments')}/d`, query: { fieldManager: 'b' }, contentType: APPLY, body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { replicas: 3 } } }] },
  { name: 'apply: service ports without protocol (a key filled by default)', steps: [{ method: 'PATCH', path: `${core('services')}/s`, query: { fieldManager: 'a' }, contentType: APPLY, body: service('s', { ports: [{ name: 'http', port: 80 }] }) }, { method: 'PATCH', path: `${core('services')}/s`, query: { fieldManager: 'a' }, contentType: APPLY, body: service('s', { ports: [{ name: 'http', port: 80, targetPort: 8080 }] }) }] },
  { name: 'apply: container ports without protocol', steps: [{ method: 'PATCH', path: `${core('pods')}/p`, query: { fieldManager: 'a' }, contentType: APPLY, body: pod('p', { containers: [container('c', 'nginx', { ports: [{ containerPort: 80 }] })] }) }, { method: 'PATCH', path: `${core('pods')}/p`, query: { fieldManager: 'b' }, contentType: APPLY, body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', ports: [{ containerPort: 80, protocol: 'TCP', name: 'http' }] }] } } }] },
  { name: 'apply: two managers, containers by name', steps: [{ method: 'PATCH', path: `${apps('deployments')}/d`, query: { fieldManager: 'a' }, contentType: APPLY, body: deployment('d') }, { method: 'PATCH', path: `${apps('deployments')}/d`, query: { fieldManager: 'b' }, contentType: APPLY, body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template: { spec: { containers: [{ name: 'side', image: 'busybox' }] } } } } }] },
  { name: 'apply: conflict on image', steps: [{ method: 'PATCH', path: `${apps('deployments')}/d`, query: { fieldManager: 'a' }, contentType: APPLY, body: deployment('d') }, { method: 'PATCH', path: `${apps('deployments')}/d`, query: { fieldManager: 'b' }, contentType: APPLY, body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template: { spec: { containers: [{ name: 'c', image: 'nginx:2' }] } } } } }] },
  { name: 'apply: env removed by its only applier', steps: [{ method: 'PATCH', path: `${core('pods')}/p`, query: { fieldManager: 'a' }, contentType: APPLY, body: pod('p', { containers: [container('c', 'nginx', { env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] })] }) }, { method: 'PATCH', path: `${core('pods')}/p`, query: { fieldManager: 'a' }, contentType: APPLY, body: pod('p', { containers: [container('c', 'nginx', { env: [{ name: 'B', value: '2' }] })] }) }] },
  { name: 'apply: dry run of a new deployment', steps: [{ method: 'PATCH', path: `${apps('deployments')}/d`, query: { fieldManager: 'a', dryRun: 'All' }, contentType: APPLY, body: deployment('d') }, { method: 'GET', path: `${apps('deployments')}/d` }] },
  { name: 'apply: status of a deployment', steps: [{ method: 'PATCH', path: `${apps('deployments')}/d`, query: { fieldManager: 'a' }, contentType: APPLY, body: deployment('d') }, { method: 'PATCH', path: `${apps('deployments')}/d/status`, query: { fieldManager: 'ctl', force: 'true' }, contentType: APPLY, body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, status: { replicas: 1, conditions: [{ type: 'Available', status: 'True' }] } } }] },
  { name: 'apply: YAML body', steps: [{ method: 'PATCH', path: `${core('configmaps')}/c`, query: { fieldManager: 'a' }, contentType: APPLY, body: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: "1"\n  b: yes\n' }] },

  // --- status and metadata
  { name: 'status put with changed labels on a deployment', steps: [...created(apps('deployments'), deployment('d')), { method: 'GET', path: `${apps('deployments')}/d` }, { method: 'PATCH', path: `${apps('deployments')}/d/status`, contentType: MERGE, body: { metadata: { labels: { x: 'y' }, annotations: { n: '1' } }, status: { replicas: 2 } } }] },
  { name: 'status patch of a service', steps: [...created(core('services'), service('s', { type: 'LoadBalancer' })), { method: 'PATCH', path: `${core('services')}/s/status`, contentType: MERGE, body: { status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } } } }] },
  { name: 'scale of a deployment', steps: [...created(apps('deployments'), deployment('d')), { method: 'GET', path: `${apps('deployments')}/d/scale` }, { method: 'PATCH', path: `${apps('deployments')}/d/scale`, contentType: MERGE, body: { spec: { replicas: 4 } } }, { method: 'GET', path: `${apps('deployments')}/d` }] },
  { name: 'scale of a statefulset via PUT', steps: [...created(apps('statefulsets'), { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's' }, spec: { selector: { matchLabels: { app: 'p' } }, template: template() } }), { method: 'PUT', path: `${apps('statefulsets')}/s/scale`, body: { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 's' }, spec: { replicas: 2 } } }] },
  { name: 'generation: deployment spec and label changes', steps: [...created(apps('deployments'), deployment('d')), { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: MERGE, body: { metadata: { labels: { a: 'b' } } } }, { method: 'PATCH', path: `${apps('deployments')}/d`, contentType: MERGE, body: { spec: { replicas: 5 } } }] },
  { name: 'ownerReferences on a pod', steps: created(core('pods'), { ...pod('p'), metadata: { name: 'p', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'r', uid: '00000000-0000-0000-0000-000000000001', controller: true }] } }) },
  { name: 'generateName on a pod', steps: [{ method: 'POST', path: core('pods'), body: { ...pod('x'), metadata: { generateName: 'web-' } } }] },

  // --- deletes and dry runs
  { name: 'delete: a deployment with Foreground', steps: [...created(apps('deployments'), deployment('d')), { method: 'DELETE', path: `${apps('deployments')}/d`, query: { propagationPolicy: 'Foreground' } }, { method: 'GET', path: `${apps('deployments')}/d` }] },
  { name: 'delete: a pod dry run', steps: [...created(core('pods'), pod('p')), { method: 'DELETE', path: `${core('pods')}/p`, query: { dryRun: 'All' } }, { method: 'GET', path: `${core('pods')}/p` }] },
  { name: 'delete: a pod with grace period', steps: [...created(core('pods'), pod('p')), { method: 'DELETE', path: `${core('pods')}/p`, body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 10 } }, { method: 'GET', path: `${core('pods')}/p` }] },
  { name: 'delete: a service, then a second time', steps: [...created(core('services'), service('s')), { method: 'DELETE', path: `${core('services')}/s` }, { method: 'DELETE', path: `${core('services')}/s` }] },
  { name: 'delete: collection of pods by label', steps: [{ method: 'POST', path: core('pods'), body: { ...pod('p'), metadata: { name: 'p', labels: { x: '1' } } } }, { method: 'POST', path: core('pods'), body: pod('q') }, { method: 'DELETE', path: core('pods'), query: { labelSelector: 'x=1' } }, { method: 'GET', path: core('pods') }] },
  { name: 'delete: a job with Background', steps: [...created(batch('jobs'), { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [container('c', 'busybox')] } } } }), { method: 'DELETE', path: `${batch('jobs')}/j`, query: { propagationPolicy: 'Background' } }] },
  { name: 'delete: a job without a policy (orphan by default)', steps: [...created(batch('jobs'), { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [container('c', 'busybox')] } } } }), { method: 'DELETE', path: `${batch('jobs')}/j` }, { method: 'GET', path: `${batch('jobs')}/j` }] },
  { name: 'dry run: update of a deployment', steps: [...created(apps('deployments'), deployment('d')), { method: 'PATCH', path: `${apps('deployments')}/d`, query: { dryRun: 'All' }, contentType: MERGE, body: { spec: { replicas: 7 } } }, { method: 'GET', path: `${apps('deployments')}/d` }] },
  { name: 'dry run: create of a service', steps: [{ method: 'POST', path: core('services'), query: { dryRun: 'All' }, body: service('s', { clusterIP: 'None' }) }] },

  // --- lists, tables, watches
  { name: 'kubectl: get pods (a table)', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: pod('p') }, { kubectl: ['get', 'pods'] }, { kubectl: ['get', 'pods', '-o', 'wide'] }] },
  { name: 'list: deployments with limit', steps: [{ method: 'POST', path: apps('deployments'), body: deployment('a') }, { method: 'POST', path: apps('deployments'), body: deployment('b') }, { method: 'GET', path: apps('deployments'), query: { limit: '1' } }] },
  { name: 'list: services with a field selector on name', steps: [...created(core('services'), service('s')), { method: 'GET', path: core('services'), query: { fieldSelector: 'metadata.name=s' } }, { method: 'GET', path: core('services'), query: { fieldSelector: 'spec.type=ClusterIP' } }] },

  // --- custom resources pruned by a structural schema
  { name: 'cr: unknown fields pruned', steps: created(gizmos, gizmo('g', { size: 2, extra: 'x', items: [{ name: 'a', junk: 1 }] }, { junk: true })) },
  { name: 'cr: unknown fields Strict', steps: [{ method: 'POST', path: gizmos, query: { fieldValidation: 'Strict' }, body: gizmo('g', { size: 2, extra: 'x' }) }] },
  { name: 'cr: preserved subtree keeps unknown fields', steps: created(gizmos, gizmo('g', { free: { a: { b: 1 } }, embedded: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', junk: 1 }, data: { a: 1 } } })) },
  { name: 'cr: defaults in list items and the root', steps: created(gizmos, gizmo('g', { items: [{ name: 'a' }, { name: 'b', value: 'w' }] })) },
  { name: 'cr: int-or-string both ways', steps: [...created(gizmos, gizmo('g', { port: 80 })), ...created(gizmos, gizmo('h', { port: 'http' }))] },
  { name: 'cr: enum refused', steps: [{ method: 'POST', path: gizmos, body: gizmo('g', { mode: 'c' }) }] },
  { name: 'cr: set list duplicate', steps: [{ method: 'POST', path: gizmos, body: gizmo('g', { tags: ['a', 'a'] }) }] },
  { name: 'cr: map list duplicate key', steps: [{ method: 'POST', path: gizmos, body: gizmo('g', { items: [{ name: 'a' }, { name: 'a' }] }) }] },
  { name: 'cr: merge patch adds an unknown field', steps: [...created(gizmos, gizmo('g', { size: 2 })), { method: 'PATCH', path: `${gizmos}/g`, contentType: MERGE, body: { spec: { other: 1, size: 3 } } }] },
  { name: 'cr: apply with an unknown field', steps: [{ method: 'PATCH', path: `${gizmos}/g`, query: { fieldManager: 'a' }, contentType: APPLY, body: gizmo('g', { size: 2, other: 1 }) }] },
  { name: 'cr: apply list-map items by two managers', steps: [{ method: 'PATCH', path: `${gizmos}/g`, query: { fieldManager: 'a' }, contentType: APPLY, body: gizmo('g', { items: [{ name: 'a' }] }) }, { method: 'PATCH', path: `${gizmos}/g`, query: { fieldManager: 'b' }, contentType: APPLY, body: gizmo('g', { items: [{ name: 'b', value: 'z' }] }) }] },
  { name: 'cr: status write ignores spec, keeps pruning', steps: [...created(gizmos, gizmo('g', { size: 2 })), { method: 'PATCH', path: `${gizmos}/g/status`, contentType: MERGE, body: { spec: { size: 9 }, status: { phase: 'Ready', count: 1, junk: 1 } } }] },
  { name: 'cr: wrong type', steps: [{ method: 'POST', path: gizmos, body: gizmo('g', { size: 'big' }) }] },
  { name: 'cr: limits additionalProperties', steps: created(gizmos, gizmo('g', { limits: { a: 'x', b: 1 } })) },

  // --- kubectl as a client
  { name: 'kubectl: apply a deployment, get it as JSON', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: deployment('d') }, { kubectl: ['get', 'deployment', 'd', '-o', 'json'] }] },
  { name: 'kubectl: apply twice (configured, unchanged)', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: service('s') }, { kubectl: ['apply', '--validate=false', '-f', '-'], stdin: service('s') }, { kubectl: ['get', 'service', 's', '-o', 'jsonpath={.spec.ports}'] }] },
  { name: 'kubectl: server-side apply', steps: [{ kubectl: ['apply', '--server-side', '--validate=false', '-f', '-'], stdin: deployment('d') }, { kubectl: ['get', 'deployment', 'd', '-o', 'jsonpath={.metadata.managedFields[*].manager}'] }] },
  { name: 'kubectl: patch a deployment (strategic)', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: deployment('d') }, { kubectl: ['patch', 'deployment', 'd', '-p', '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:3"}]}}}}'] }, { kubectl: ['get', 'deployment', 'd', '-o', 'jsonpath={.spec.template.spec.containers}'] }] },
  { name: 'kubectl: patch --type json and merge', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } } }, { kubectl: ['patch', 'configmap', 'c', '--type', 'json', '-p', '[{"op":"add","path":"/data/b","value":"2"}]'] }, { kubectl: ['patch', 'configmap', 'c', '--type', 'merge', '-p', '{"data":{"a":null}}'] }, { kubectl: ['get', 'configmap', 'c', '-o', 'jsonpath={.data}'] }] },
  { name: 'kubectl: delete and get a missing one', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } } }, { kubectl: ['delete', 'configmap', 'c'] }, { kubectl: ['get', 'configmap', 'c'] }] },
  { name: 'kubectl: get custom resources -o name', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: gizmo('g', { size: 1 }) }, { kubectl: ['get', 'gizmos', '-o', 'name'] }, { kubectl: ['get', 'gizmo', 'g', '-o', 'jsonpath={.spec}'] }] },
  { name: 'kubectl: label and annotate', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: pod('p') }, { kubectl: ['label', 'pod', 'p', 'tier=web'] }, { kubectl: ['annotate', 'pod', 'p', 'note=x'] }, { kubectl: ['get', 'pods', '-l', 'tier=web', '-o', 'name'] }] },
  { name: 'kubectl: scale a deployment', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: deployment('d') }, { kubectl: ['scale', 'deployment', 'd', '--replicas=3'] }, { kubectl: ['get', 'deployment', 'd', '-o', 'jsonpath={.spec.replicas}'] }] },
  { name: 'kubectl: dry run server', steps: [{ kubectl: ['apply', '--dry-run=server', '--validate=false', '-f', '-'], stdin: deployment('d') }, { kubectl: ['get', 'deployments', '-o', 'name'] }] },
  { name: 'kubectl: replace', steps: [{ kubectl: ['apply', '--validate=false', '-f', '-'], stdin: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } } }, { kubectl: ['replace', '--validate=false', '-f', '-'], stdin: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '2' } } }, { kubectl: ['get', 'configmap', 'c', '-o', 'jsonpath={.data.a}'] }] },
];
