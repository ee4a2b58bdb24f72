/**
 * Defaults of built-in kinds, as kube-apiserver sets them while it decodes
 * a body into the kind's Go type (so the writer owns them in
 * managedFields), and what its REST storage and admission add on create
 * (not owned: a Service's cluster IP, a Pod's priority and default
 * tolerations, a Job's selector).
 *
 * Two sources:
 * - the OpenAPI snapshot's `default` values (`schemaDefaults`): the
 *   `+default` markers (a port's `protocol: TCP`, a ReplicationController's
 *   `replicas: 1`), the zero values Go writes for fields without
 *   `omitempty` (a StatefulSet's `serviceName: ""`, a Condition's
 *   `message: ""`) and the empty structs it writes for struct fields that
 *   are not pointers (a container's `resources: {}`, a template's
 *   `metadata: {}`);
 * - hand-written, after pkg/apis/<group>/v1/defaults.go (`SetDefaults_*`),
 *   where the snapshot says nothing: Pod specs and containers, probes,
 *   volumes, workloads' replicas, strategies and history limits, Jobs and
 *   CronJobs, Services, PVCs, NetworkPolicies, HPAs, RBAC subjects.
 */
import { randomInt } from 'node:crypto';
import { isObject } from './json.js';
import type { Json } from './json.js';
import { kindSchema, resolve } from './openapi/model.js';
import type { Resolved } from './openapi/model.js';

/** Zero defaults the snapshot gives fields that Go omits when zero (`omitempty`): not written. */
const OMITTED_ZEROS = new Set(['io.k8s.api.core.v1.ReplicationControllerSpec.minReadySeconds', 'io.k8s.api.autoscaling.v1.ScaleSpec.replicas']);

function schemaDefaults(value: unknown, r: Resolved | undefined): void {
  if (!r) return;
  const node = r.node;
  if (Array.isArray(value)) {
    const items = resolve(node.items);
    for (const item of value) schemaDefaults(item, items);
    return;
  }
  if (!isObject(value)) return;
  for (const f of NULL_TIMES[r.name ?? ''] ?? []) if (value[f] === undefined) value[f] = null;
  for (const f of OMITEMPTY_SCALARS[r.name ?? ''] ?? []) if (value[f] === false || value[f] === 0 || value[f] === '') delete value[f];
  if (node.properties) {
    for (const [k, prop] of Object.entries(node.properties)) {
      if (value[k] === undefined && prop.default !== undefined && !OMITTED_ZEROS.has(`${r.name ?? ''}.${k}`)) value[k] = structuredClone(prop.default);
      if (value[k] !== undefined) schemaDefaults(value[k], resolve(prop));
    }
  } else if (typeof node.additionalProperties === 'object') {
    const values = resolve(node.additionalProperties);
    for (const v of Object.values(value)) schemaDefaults(v, values);
  }
}

/** Scalar fields with `omitempty` (not pointers): Go drops them when zero, so a stored `paused: false` is no field at all. */
const OMITEMPTY_SCALARS: Readonly<Record<string, readonly string[]>> = {
  'io.k8s.api.apps.v1.DeploymentSpec': ['paused', 'minReadySeconds'],
  // its counters too: a status write of `replicas: 0` leaves no field, which no one owns (random fuzzer seed 1551889987)
  'io.k8s.api.apps.v1.DeploymentStatus': ['observedGeneration', 'replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas', 'unavailableReplicas'],
  'io.k8s.api.apps.v1.ReplicaSetSpec': ['minReadySeconds'],
  'io.k8s.api.apps.v1.StatefulSetSpec': ['minReadySeconds'],
  'io.k8s.api.apps.v1.DaemonSetSpec': ['minReadySeconds'],
  'io.k8s.api.core.v1.PodSpec': ['hostNetwork', 'hostPID', 'hostIPC', 'nodeName', 'hostname', 'subdomain', 'serviceAccountName', 'priorityClassName'],
  'io.k8s.api.core.v1.Container': ['stdin', 'stdinOnce', 'tty', 'workingDir'],
  'io.k8s.api.core.v1.ServiceSpec': ['publishNotReadyAddresses', 'externalName', 'loadBalancerIP'],
};

/** Times in conditions that are Go structs, not pointers: written `null` when not set. */
const NULL_TIMES: Readonly<Record<string, readonly string[]>> = {
  'io.k8s.api.apps.v1.DeploymentCondition': ['lastUpdateTime', 'lastTransitionTime'],
  'io.k8s.api.apps.v1.ReplicaSetCondition': ['lastTransitionTime'],
  'io.k8s.api.apps.v1.StatefulSetCondition': ['lastTransitionTime'],
  'io.k8s.api.apps.v1.DaemonSetCondition': ['lastTransitionTime'],
  'io.k8s.api.batch.v1.JobCondition': ['lastProbeTime', 'lastTransitionTime'],
  'io.k8s.api.core.v1.PodCondition': ['lastProbeTime', 'lastTransitionTime'],
  'io.k8s.api.core.v1.NodeCondition': ['lastHeartbeatTime', 'lastTransitionTime'],
  'io.k8s.api.core.v1.ReplicationControllerCondition': ['lastTransitionTime'],
  'io.k8s.api.core.v1.PersistentVolumeClaimCondition': ['lastProbeTime', 'lastTransitionTime'],
};

/** Lists Go writes as `null` when empty (no `omitempty`): present in a zero object. */
const NULL_LISTS = new Set(['io.k8s.api.core.v1.PodSpec.containers']);

function fillZero(value: Json, r: Resolved | undefined): void {
  for (const [k, prop] of Object.entries(r?.node.properties ?? {})) {
    if (value[k] === undefined) {
      const zero = prop.default === '' || prop.default === 0 || prop.default === false || (isObject(prop.default) && Object.keys(prop.default).length === 0);
      if (zero && !OMITTED_ZEROS.has(`${r!.name ?? ''}.${k}`)) value[k] = structuredClone(prop.default);
      else if (NULL_LISTS.has(`${r!.name ?? ''}.${k}`)) value[k] = null;
    }
    const child = resolve(prop);
    if (isObject(value[k]) && child?.node.properties) fillZero(value[k], child);
  }
}

/**
 * `o` over the zero value of its Go type: the structs Go always writes
 * (not pointers) and the fields it writes when zero (no `omitempty`). A
 * write's field ownership is what changed from this (so a Deployment's
 * creator owns `spec.replicas` but not `spec` or `spec.template` as nodes).
 */
export function overGoZero(apiVersion: string, kind: string, o: Json | undefined): Json {
  const copy = o === undefined ? {} : structuredClone(o);
  fillZero(copy, kindSchema(apiVersion, kind));
  return copy;
}

const obj = (v: unknown): Json | undefined => (isObject(v) ? v : undefined);
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter((x): x is Json => isObject(x)) : []);
function setIfAbsent(o: Json, key: string, value: unknown): void {
  if (o[key] === undefined || o[key] === '') o[key] = value;
}

/** An image's pull policy default: Always for `:latest` or no tag, else IfNotPresent (a digest counts as a tag). */
function pullPolicy(image: unknown): string {
  if (typeof image !== 'string') return 'IfNotPresent';
  if (image.includes('@')) return 'IfNotPresent';
  const last = image.slice(image.lastIndexOf('/') + 1);
  const colon = last.lastIndexOf(':');
  const tag = colon >= 0 ? last.slice(colon + 1) : '';
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function probe(p: Json | undefined): void {
  if (!p) return;
  setIfAbsent(p, 'timeoutSeconds', 1);
  setIfAbsent(p, 'periodSeconds', 10);
  setIfAbsent(p, 'successThreshold', 1);
  setIfAbsent(p, 'failureThreshold', 3);
  const http = obj(p['httpGet']);
  if (http) {
    setIfAbsent(http, 'path', '/');
    setIfAbsent(http, 'scheme', 'HTTP');
  }
}

function lifecycleHandler(h: Json | undefined): void {
  const http = obj(h?.['httpGet']);
  if (http) {
    setIfAbsent(http, 'path', '/');
    setIfAbsent(http, 'scheme', 'HTTP');
  }
}

function container(c: Json, hostNetwork: boolean): void {
  setIfAbsent(c, 'imagePullPolicy', pullPolicy(c['image']));
  setIfAbsent(c, 'terminationMessagePath', '/dev/termination-log');
  setIfAbsent(c, 'terminationMessagePolicy', 'File');
  for (const p of ['livenessProbe', 'readinessProbe', 'startupProbe']) probe(obj(c[p]));
  const lifecycle = obj(c['lifecycle']);
  if (lifecycle) for (const h of ['postStart', 'preStop']) lifecycleHandler(obj(lifecycle[h]));
  for (const port of list(c['ports'])) if (hostNetwork && port['hostPort'] === undefined) port['hostPort'] = port['containerPort'];
  for (const env of list(c['env'])) {
    const fieldRef = obj(obj(env['valueFrom'])?.['fieldRef']);
    if (fieldRef) setIfAbsent(fieldRef, 'apiVersion', 'v1');
    const resourceRef = obj(obj(env['valueFrom'])?.['resourceFieldRef']);
    if (resourceRef && resourceRef['divisor'] === undefined) resourceRef['divisor'] = '0';
  }
}

/** Limits without requests: requests copied from limits (SetDefaults_Pod, also for templates' containers). */
function requestsFromLimits(c: Json): void {
  const resources = obj(c['resources']);
  const limits = obj(resources?.['limits']);
  if (!resources || !limits || Object.keys(limits).length === 0) return;
  const requests = { ...(obj(resources['requests']) ?? {}) };
  for (const [k, v] of Object.entries(limits)) if (requests[k] === undefined) requests[k] = v;
  resources['requests'] = requests;
}

function volume(v: Json): void {
  const sources = Object.keys(v).filter((k) => k !== 'name');
  if (sources.length === 0) v['emptyDir'] = {};
  for (const k of ['secret', 'configMap', 'downwardAPI', 'projected']) {
    const source = obj(v[k]);
    if (source) setIfAbsent(source, 'defaultMode', 420);
  }
  const hostPath = obj(v['hostPath']);
  if (hostPath) setIfAbsent(hostPath, 'type', '');
  const projected = obj(v['projected']);
  for (const s of list(projected?.['sources'])) {
    const token = obj(s['serviceAccountToken']);
    if (token) setIfAbsent(token, 'expirationSeconds', 3600);
  }
  const iscsi = obj(v['iscsi']);
  if (iscsi) setIfAbsent(iscsi, 'iscsiInterface', 'default');
}

/** SetDefaults_PodSpec and what it calls, for a Pod and for every pod template. */
function podSpec(spec: Json | undefined, pod: boolean): void {
  if (!spec) return;
  setIfAbsent(spec, 'dnsPolicy', 'ClusterFirst');
  setIfAbsent(spec, 'restartPolicy', 'Always');
  if (spec['securityContext'] === undefined || spec['securityContext'] === null) spec['securityContext'] = {};
  setIfAbsent(spec, 'terminationGracePeriodSeconds', 30);
  // a Pod's negative grace period is 1 (SetDefaults_Pod; a template's is kept, and warned about)
  if (pod && typeof spec['terminationGracePeriodSeconds'] === 'number' && spec['terminationGracePeriodSeconds'] < 0) spec['terminationGracePeriodSeconds'] = 1;
  setIfAbsent(spec, 'schedulerName', 'default-scheduler');
  if (pod && spec['enableServiceLinks'] === undefined) spec['enableServiceLinks'] = true;
  // the deprecated serviceAccount is an alias: the v1 conversion reads it when serviceAccountName is empty and always
  // writes serviceAccountName back into it (Convert_v1_PodSpec_To_core_PodSpec and back)
  const account = typeof spec['serviceAccountName'] === 'string' && spec['serviceAccountName'] !== '' ? spec['serviceAccountName'] : typeof spec['serviceAccount'] === 'string' ? spec['serviceAccount'] : '';
  if (account === '') {
    delete spec['serviceAccountName'];
    delete spec['serviceAccount'];
  } else {
    spec['serviceAccountName'] = account;
    spec['serviceAccount'] = account;
  }
  const hostNetwork = spec['hostNetwork'] === true;
  for (const field of ['containers', 'initContainers', 'ephemeralContainers']) {
    for (const c of list(spec[field])) {
      container(c, hostNetwork);
      // SetDefaults_Pod, not the PodSpec defaulter: a template's containers keep requests unset (found by the fuzzer)
      if (pod) requestsFromLimits(c);
    }
  }
  for (const v of list(spec['volumes'])) volume(v);
}

function template(t: Json | undefined): void {
  if (t) podSpec(obj(t['spec']), false);
}

function labelsFromTemplate(o: Json, t: Json | undefined): void {
  const labels = obj(obj(t?.['metadata'])?.['labels']);
  const m = obj(o['metadata']);
  if (labels && m && (obj(m['labels']) === undefined || Object.keys(obj(m['labels'])!).length === 0)) m['labels'] = { ...labels };
}

function pvcSpec(spec: Json | undefined): void {
  if (spec) setIfAbsent(spec, 'volumeMode', 'Filesystem');
}

function serviceSpec(spec: Json | undefined): void {
  if (!spec) return;
  setIfAbsent(spec, 'type', 'ClusterIP');
  setIfAbsent(spec, 'sessionAffinity', 'None');
  if (spec['sessionAffinity'] === 'ClientIP') {
    const config = obj(spec['sessionAffinityConfig']) ?? {};
    const clientIP = obj(config['clientIP']) ?? {};
    setIfAbsent(clientIP, 'timeoutSeconds', 10800);
    config['clientIP'] = clientIP;
    spec['sessionAffinityConfig'] = config;
  }
  for (const p of list(spec['ports'])) if (p['targetPort'] === undefined || p['targetPort'] === 0 || p['targetPort'] === '') p['targetPort'] = p['port'];
  const type = spec['type'];
  if (type === 'NodePort' || type === 'LoadBalancer') setIfAbsent(spec, 'externalTrafficPolicy', 'Cluster');
  if (type === 'LoadBalancer' && spec['allocateLoadBalancerNodePorts'] === undefined) spec['allocateLoadBalancerNodePorts'] = true;
  if (type !== 'ExternalName') setIfAbsent(spec, 'internalTrafficPolicy', 'Cluster');
}

/** What the Go defaulters of a built-in kind set on a decoded object (group, kind; the object without apiVersion and kind is fine). */
/**
 * A LimitRange's Container item, as SetDefaults_LimitRangeItem fills it: the
 * default limit from the max, the default request from the default limit,
 * then from the min (empty maps are left out, as Go's omitempty does).
 */
function limitRangeItem(item: Json): void {
  if (item['type'] !== 'Container') return;
  const def = { ...(obj(item['default']) ?? {}) };
  const request = { ...(obj(item['defaultRequest']) ?? {}) };
  for (const [k, v] of Object.entries(obj(item['max']) ?? {})) if (def[k] === undefined) def[k] = v;
  for (const [k, v] of Object.entries(def)) if (request[k] === undefined) request[k] = v;
  for (const [k, v] of Object.entries(obj(item['min']) ?? {})) if (request[k] === undefined) request[k] = v;
  if (Object.keys(def).length > 0) item['default'] = def;
  if (Object.keys(request).length > 0) item['defaultRequest'] = request;
}

function handWritten(group: string, kind: string, o: Json): void {
  const spec = obj(o['spec']);
  switch (`${group}/${kind}`) {
    case '/Pod':
      podSpec(spec, true);
      return;
    case '/PodTemplate':
      template(obj(o['template']));
      return;
    case '/ReplicationController':
      if (spec) {
        const t = obj(spec['template']);
        const labels = obj(obj(t?.['metadata'])?.['labels']);
        if (labels && (obj(spec['selector']) === undefined || Object.keys(obj(spec['selector'])!).length === 0)) spec['selector'] = { ...labels };
        labelsFromTemplate(o, t);
        template(t);
      }
      return;
    case '/Service':
      serviceSpec(spec);
      for (const ingress of list(obj(obj(o['status'])?.['loadBalancer'])?.['ingress'])) if (ingress['ip'] !== undefined && ingress['ipMode'] === undefined) ingress['ipMode'] = 'VIP';
      return;
    case '/PersistentVolumeClaim':
      pvcSpec(spec);
      return;
    case '/PersistentVolume':
      if (spec) {
        setIfAbsent(spec, 'persistentVolumeReclaimPolicy', 'Retain');
        setIfAbsent(spec, 'volumeMode', 'Filesystem');
      }
      return;
    case '/LimitRange':
      for (const item of list(spec?.['limits'])) limitRangeItem(item);
      return;
    case '/Namespace':
    case '/ConfigMap':
      return;
    case '/Secret':
      setIfAbsent(o, 'type', 'Opaque');
      return;
    case 'apps/Deployment':
      if (!spec) return;
      setIfAbsent(spec, 'replicas', 1);
      {
        const strategy = obj(spec['strategy']) ?? {};
        setIfAbsent(strategy, 'type', 'RollingUpdate');
        if (strategy['type'] === 'RollingUpdate') {
          const ru = obj(strategy['rollingUpdate']) ?? {};
          setIfAbsent(ru, 'maxUnavailable', '25%');
          setIfAbsent(ru, 'maxSurge', '25%');
          strategy['rollingUpdate'] = ru;
        }
        spec['strategy'] = strategy;
      }
      setIfAbsent(spec, 'revisionHistoryLimit', 10);
      setIfAbsent(spec, 'progressDeadlineSeconds', 600);
      template(obj(spec['template']));
      return;
    case 'apps/ReplicaSet':
      if (!spec) return;
      setIfAbsent(spec, 'replicas', 1);
      template(obj(spec['template']));
      return;
    case 'apps/StatefulSet':
      if (!spec) return;
      setIfAbsent(spec, 'replicas', 1);
      setIfAbsent(spec, 'podManagementPolicy', 'OrderedReady');
      {
        const strategy = obj(spec['updateStrategy']) ?? {};
        setIfAbsent(strategy, 'type', 'RollingUpdate');
        if (strategy['type'] === 'RollingUpdate') {
          const ru = obj(strategy['rollingUpdate']) ?? {};
          setIfAbsent(ru, 'partition', 0);
          setIfAbsent(ru, 'maxUnavailable', 1);
          strategy['rollingUpdate'] = ru;
        }
        spec['updateStrategy'] = strategy;
      }
      setIfAbsent(spec, 'revisionHistoryLimit', 10);
      {
        const retention = obj(spec['persistentVolumeClaimRetentionPolicy']) ?? {};
        setIfAbsent(retention, 'whenDeleted', 'Retain');
        setIfAbsent(retention, 'whenScaled', 'Retain');
        spec['persistentVolumeClaimRetentionPolicy'] = retention;
      }
      for (const claim of list(spec['volumeClaimTemplates'])) {
        setIfAbsent(claim, 'apiVersion', 'v1');
        setIfAbsent(claim, 'kind', 'PersistentVolumeClaim');
        pvcSpec(obj(claim['spec']));
        const status = obj(claim['status']) ?? {};
        setIfAbsent(status, 'phase', 'Pending');
        claim['status'] = status;
      }
      template(obj(spec['template']));
      return;
    case 'apps/DaemonSet':
      if (!spec) return;
      {
        const strategy = obj(spec['updateStrategy']) ?? {};
        setIfAbsent(strategy, 'type', 'RollingUpdate');
        if (strategy['type'] === 'RollingUpdate') {
          const ru = obj(strategy['rollingUpdate']) ?? {};
          setIfAbsent(ru, 'maxUnavailable', 1);
          if (ru['maxSurge'] === undefined) ru['maxSurge'] = 0;
          strategy['rollingUpdate'] = ru;
        }
        spec['updateStrategy'] = strategy;
      }
      setIfAbsent(spec, 'revisionHistoryLimit', 10);
      template(obj(spec['template']));
      return;
    case 'batch/Job':
      labelsFromTemplate(o, obj(spec?.['template']));
      jobSpec(spec);
      return;
    case 'batch/CronJob':
      if (!spec) return;
      setIfAbsent(spec, 'concurrencyPolicy', 'Allow');
      if (spec['suspend'] === undefined) spec['suspend'] = false;
      setIfAbsent(spec, 'successfulJobsHistoryLimit', 3);
      setIfAbsent(spec, 'failedJobsHistoryLimit', 1);
      template(obj(obj(obj(spec['jobTemplate'])?.['spec'])?.['template']));
      return;
    case 'networking.k8s.io/NetworkPolicy':
      if (!spec) return;
      for (const rule of [...list(spec['ingress']), ...list(spec['egress'])]) for (const p of list(rule['ports'])) setIfAbsent(p, 'protocol', 'TCP');
      if (spec['policyTypes'] === undefined) spec['policyTypes'] = spec['egress'] === undefined ? ['Ingress'] : ['Ingress', 'Egress'];
      return;
    case 'autoscaling/HorizontalPodAutoscaler':
      if (!spec) return;
      setIfAbsent(spec, 'minReplicas', 1);
      if (spec['metrics'] === undefined) spec['metrics'] = [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }];
      return;
    case 'rbac.authorization.k8s.io/RoleBinding':
    case 'rbac.authorization.k8s.io/ClusterRoleBinding':
      for (const s of list(o['subjects'])) {
        if (s['apiGroup'] !== undefined && s['apiGroup'] !== '') continue;
        if (s['kind'] === 'User' || s['kind'] === 'Group') s['apiGroup'] = 'rbac.authorization.k8s.io';
      }
      return;
    default:
      return;
  }
}

function jobSpec(spec: Json | undefined): void {
  if (!spec) return;
  setIfAbsent(spec, 'completionMode', 'NonIndexed');
  if (spec['completions'] === undefined && spec['parallelism'] === undefined) {
    spec['completions'] = 1;
    spec['parallelism'] = 1;
  }
  if (spec['parallelism'] === undefined) spec['parallelism'] = 1;
  if (spec['backoffLimit'] === undefined) spec['backoffLimit'] = spec['completionMode'] === 'Indexed' && spec['backoffLimitPerIndex'] !== undefined ? 2147483647 : 6;
  if (spec['suspend'] === undefined) spec['suspend'] = false;
  if (spec['manualSelector'] === undefined) spec['manualSelector'] = false;
  if (spec['podReplacementPolicy'] === undefined) spec['podReplacementPolicy'] = spec['podFailurePolicy'] === undefined ? 'TerminatingOrFailed' : 'Failed';
  template(obj(spec['template']));
}

/**
 * Defaults a decoded built-in object (the `metadata` and body of kind
 * `group`/`kind` at `apiVersion`) in place, as the server's decoder does.
 */
export function defaultBuiltin(apiVersion: string, group: string, kind: string, o: Json): void {
  handWritten(group, kind, o);
  schemaDefaults(o, kindSchema(apiVersion, kind));
}

/** Service IPs the fake hands out, from the range envtest serves (10.0.0.0/24; .1 is the `kubernetes` Service's). */
export interface ServiceAllocator {
  clusterIPs: Set<string>;
  nodePorts: Set<number>;
}

export function newServiceAllocator(): ServiceAllocator {
  return { clusterIPs: new Set(['10.0.0.1']), nodePorts: new Set() };
}

function freeIP(a: ServiceAllocator): string {
  for (let tries = 0; tries < 1000; tries++) {
    const ip = `10.0.0.${randomInt(2, 255)}`;
    if (!a.clusterIPs.has(ip)) return ip;
  }
  throw new Error('the fake ran out of Service cluster IPs (10.0.0.0/24)');
}

function freePort(a: ServiceAllocator): number {
  for (let tries = 0; tries < 10000; tries++) {
    const port = randomInt(30000, 32768);
    if (!a.nodePorts.has(port)) return port;
  }
  throw new Error('the fake ran out of Service node ports (30000-32767)');
}

/**
 * What the Service REST storage adds on create and keeps on update (not
 * owned by the writer): cluster IPs from 10.0.0.0/24, IP families, node
 * ports from 30000-32767. `old` is the stored Service on an update.
 */
export function allocateService(a: ServiceAllocator, spec: Json | undefined, old: Json | undefined, dry: boolean): void {
  if (!spec) return;
  const type = spec['type'];
  if (type === 'ExternalName') return;
  const before = obj(old?.['spec']);
  if (before && spec['clusterIP'] === undefined && before['clusterIP'] !== undefined) {
    for (const k of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy']) if (spec[k] === undefined && before[k] !== undefined) spec[k] = structuredClone(before[k]);
  }
  if (spec['clusterIP'] === undefined || spec['clusterIP'] === '') {
    const ip = freeIP(a);
    if (!dry) a.clusterIPs.add(ip);
    spec['clusterIP'] = ip;
  }
  if (spec['clusterIPs'] === undefined) spec['clusterIPs'] = [spec['clusterIP']];
  if (spec['ipFamilies'] === undefined) spec['ipFamilies'] = ['IPv4'];
  if (spec['ipFamilyPolicy'] === undefined) spec['ipFamilyPolicy'] = 'SingleStack';
  if (type === 'NodePort' || type === 'LoadBalancer') {
    const oldPorts = list(before?.['ports']);
    for (const p of list(spec['ports'])) {
      if (p['nodePort'] !== undefined) continue;
      const kept = oldPorts.find((q) => q['port'] === p['port'] && (q['protocol'] ?? 'TCP') === (p['protocol'] ?? 'TCP'))?.['nodePort'];
      const port = typeof kept === 'number' ? kept : freePort(a);
      if (!dry) a.nodePorts.add(port);
      p['nodePort'] = port;
    }
  }
}

/** A Service's allocations given back when it goes. */
export function releaseService(a: ServiceAllocator, spec: Json | undefined): void {
  if (!spec) return;
  if (typeof spec['clusterIP'] === 'string') a.clusterIPs.delete(spec['clusterIP']);
  for (const p of list(spec['ports'])) if (typeof p['nodePort'] === 'number') a.nodePorts.delete(p['nodePort']);
}

/**
 * What admission adds to a Pod on create (kube-apiserver's default plugins
 * envtest runs: Priority and DefaultTolerationSeconds): priority 0 and
 * `PreemptLowerPriority` without a priority class, tolerations of
 * not-ready and unreachable nodes for 300 s. Not owned by the writer.
 */
export function admitPod(spec: Json | undefined): void {
  if (!spec) return;
  if (spec['priorityClassName'] === undefined || spec['priorityClassName'] === '') {
    if (spec['priority'] === undefined) spec['priority'] = 0;
    if (spec['preemptionPolicy'] === undefined) spec['preemptionPolicy'] = 'PreemptLowerPriority';
  }
  const tolerations = list(spec['tolerations']);
  const has = (key: string): boolean => tolerations.some((t) => (t['key'] === key || (t['key'] === undefined && t['operator'] === 'Exists')) && (t['effect'] === undefined || t['effect'] === '' || t['effect'] === 'NoExecute'));
  const added: Json[] = [];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) if (!has(key)) added.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
  if (added.length > 0) spec['tolerations'] = [...(Array.isArray(spec['tolerations']) ? (spec['tolerations'] as unknown[]) : []), ...added];
}

/**
 * A Job's strategy on create: without `manualSelector`, a selector on the
 * Job's uid and the matching labels on the Job and its template (not owned).
 */
export function prepareJob(o: Json, uid: string): void {
  const spec = obj(o['spec']);
  const m = obj(o['metadata']);
  if (!spec || !m || spec['manualSelector'] === true) return;
  const name = m['name'];
  const generated = { 'batch.kubernetes.io/controller-uid': uid, 'batch.kubernetes.io/job-name': name, 'controller-uid': uid, 'job-name': name };
  spec['selector'] = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
  const t = obj(spec['template']) ?? {};
  const tm = obj(t['metadata']) ?? {};
  tm['labels'] = { ...(obj(tm['labels']) ?? {}), ...generated };
  t['metadata'] = tm;
  spec['template'] = t;
  if (obj(m['labels']) === undefined || Object.keys(obj(m['labels'])!).length === 0) m['labels'] = { ...generated };
}
