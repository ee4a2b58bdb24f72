/**
 * A patched object as kube-apiserver quotes it when the kind's Go type
 * cannot hold the result (`patch: Invalid value: "{...}"`). Its patch
 * library (evanphx/json-patch) decodes only what a patch goes into: the top
 * level and every member a patch descends into are encoded again with
 * their keys sorted (Go sorts map keys), a value a JSON patch sets keeps
 * the patch's own bytes, and a member the patch did not touch keeps the
 * bytes the object was encoded with, in its Go type's field order. Found by
 * the differential fuzzer; the field orders known here are the metadata
 * types every object has and a Deployment's (other structs' members are
 * written sorted).
 */
import { canonical, isObject } from './json.js';
import type { Json } from './json.js';
import { stringifyJson } from '@kubeloop/scheme';

/**
 * Go structs as encoding/json writes them: their fields in declaration
 * order (k8s.io/api and apimachinery types.go), and the Go type of the
 * members that are structs (or lists of them, `[]X`) themselves.
 */
interface GoStruct {
  readonly order: readonly string[];
  readonly children?: Readonly<Record<string, string>>;
}

const PROBE: GoStruct = {
  order: ['exec', 'httpGet', 'tcpSocket', 'grpc', 'initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold', 'terminationGracePeriodSeconds'],
  children: { httpGet: 'HTTPGetAction' },
};

const STRUCTS: Readonly<Record<string, GoStruct>> = {
  ObjectMeta: {
    order: ['name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers', 'managedFields'],
    children: { ownerReferences: '[]OwnerReference', managedFields: '[]ManagedFieldsEntry' },
  },
  OwnerReference: { order: ['apiVersion', 'kind', 'name', 'uid', 'controller', 'blockOwnerDeletion'] },
  // FieldsV1 holds raw bytes, written as the server built them
  ManagedFieldsEntry: { order: ['manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'fieldsV1', 'subresource'], children: { fieldsV1: 'raw' } },
  DeploymentSpec: {
    order: ['replicas', 'selector', 'template', 'strategy', 'minReadySeconds', 'revisionHistoryLimit', 'paused', 'progressDeadlineSeconds'],
    children: { selector: 'LabelSelector', template: 'PodTemplateSpec', strategy: 'DeploymentStrategy' },
  },
  DeploymentStrategy: { order: ['type', 'rollingUpdate'], children: { rollingUpdate: 'RollingUpdateDeployment' } },
  RollingUpdateDeployment: { order: ['maxUnavailable', 'maxSurge'] },
  DeploymentStatus: {
    order: ['observedGeneration', 'replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas', 'unavailableReplicas', 'terminatingReplicas', 'conditions', 'collisionCount'],
    children: { conditions: '[]DeploymentCondition' },
  },
  DeploymentCondition: { order: ['type', 'status', 'lastUpdateTime', 'lastTransitionTime', 'reason', 'message'] },
  LabelSelector: { order: ['matchLabels', 'matchExpressions'], children: { matchExpressions: '[]LabelSelectorRequirement' } },
  LabelSelectorRequirement: { order: ['key', 'operator', 'values'] },
  PodTemplateSpec: { order: ['metadata', 'spec'], children: { metadata: 'ObjectMeta', spec: 'PodSpec' } },
  PodSpec: {
    order: [
      'volumes', 'initContainers', 'containers', 'ephemeralContainers', 'restartPolicy', 'terminationGracePeriodSeconds', 'activeDeadlineSeconds', 'dnsPolicy', 'nodeSelector', 'serviceAccountName', 'serviceAccount',
      'automountServiceAccountToken', 'nodeName', 'hostNetwork', 'hostPID', 'hostIPC', 'shareProcessNamespace', 'securityContext', 'imagePullSecrets', 'hostname', 'subdomain', 'affinity', 'schedulerName', 'tolerations',
      'hostAliases', 'priorityClassName', 'priority', 'dnsConfig', 'readinessGates', 'runtimeClassName', 'enableServiceLinks', 'preemptionPolicy', 'overhead', 'topologySpreadConstraints', 'setHostnameAsFQDN', 'os',
      'hostUsers', 'schedulingGates', 'resourceClaims', 'resources', 'hostnameOverride',
    ],
    children: { volumes: '[]Volume', initContainers: '[]Container', containers: '[]Container', tolerations: '[]Toleration', resources: 'ResourceRequirements' },
  },
  Container: {
    order: [
      'name', 'image', 'command', 'args', 'workingDir', 'ports', 'envFrom', 'env', 'resources', 'resizePolicy', 'restartPolicy', 'restartPolicyRules', 'volumeMounts', 'volumeDevices', 'livenessProbe', 'readinessProbe',
      'startupProbe', 'lifecycle', 'terminationMessagePath', 'terminationMessagePolicy', 'imagePullPolicy', 'securityContext', 'stdin', 'stdinOnce', 'tty',
    ],
    children: { ports: '[]ContainerPort', env: '[]EnvVar', resources: 'ResourceRequirements', volumeMounts: '[]VolumeMount', livenessProbe: 'Probe', readinessProbe: 'Probe', startupProbe: 'Probe' },
  },
  ContainerPort: { order: ['name', 'hostPort', 'containerPort', 'protocol', 'hostIP'] },
  EnvVar: { order: ['name', 'value', 'valueFrom'] },
  ResourceRequirements: { order: ['limits', 'requests', 'claims'] },
  VolumeMount: { order: ['name', 'readOnly', 'recursiveReadOnly', 'mountPath', 'subPath', 'mountPropagation', 'subPathExpr'] },
  Probe: PROBE,
  HTTPGetAction: { order: ['path', 'port', 'host', 'scheme', 'httpHeaders'] },
  Volume: { order: ['name'] },
  Toleration: { order: ['key', 'operator', 'value', 'effect', 'tolerationSeconds'] },
};

/** The types of an object's top-level members, by kind (every kind's metadata is an ObjectMeta). */
const ROOTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  Deployment: { spec: 'DeploymentSpec', status: 'DeploymentStatus' },
};

/** The Go type of `key` inside a value of `type` (undefined: one whose order is not known here; `[]X` for lists). */
function childType(type: string | undefined, key: string): string | undefined {
  if (type?.startsWith('root:') === true) return key === 'metadata' ? 'ObjectMeta' : ROOTS[type.slice(5)]?.[key];
  return type === undefined ? undefined : STRUCTS[type]?.children?.[key];
}

/** `value` as the server encoded the stored object: known structs in field order, the rest sorted. */
function stored(value: unknown, type: string | undefined): string {
  if (type === 'raw') return stringifyJson(value) ?? 'null'; // FieldsV1: raw bytes, written as the server built them
  if (type?.startsWith('[]') === true && Array.isArray(value)) return `[${value.map((v) => stored(v, type.slice(2))).join(',')}]`;
  const order = type === undefined ? undefined : STRUCTS[type]?.order;
  if (order && isObject(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined);
    const known = order.filter((k) => keys.includes(k));
    // a field not in the table (one newer than it) is written after the known ones
    const rest = keys.filter((k) => !order.includes(k)).sort();
    return `{${[...known, ...rest].map((k) => `${JSON.stringify(k)}:${stored(value[k], childType(type, k))}`).join(',')}}`;
  }
  return canonical(value);
}

function members(value: Json, write: (key: string) => string): string {
  const keys = Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${write(k)}`).join(',')}}`;
}

/** A merge patch's result: members both hold as objects are merged (decoded, sorted), members it set are its (sorted), the rest stored. */
function quoteMerge(patched: Json, original: Json, patch: Json, type: string | undefined): string {
  return members(patched, (k) => {
    if (!(k in patch)) return stored(patched[k], childType(type, k));
    const p = patch[k];
    const o = original[k];
    const n = patched[k];
    return isObject(p) && isObject(o) && isObject(n) ? quoteMerge(n, o, p, childType(type, k)) : canonical(n);
  });
}

const SEP = '\u0001';

/** A JSON pointer's reference tokens. */
function tokens(pointer: unknown): string[] | undefined {
  if (typeof pointer !== 'string' || (pointer !== '' && !pointer.startsWith('/'))) return undefined;
  return pointer === '' ? [] : pointer.slice(1).split('/').map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** A JSON patch's result: containers on an operation's path decoded (sorted), values it set in its own bytes, the rest stored. */
function quoteJsonPatch(value: unknown, path: string[], containers: ReadonlySet<string>, set: ReadonlySet<string>, type: string | undefined): string {
  const key = path.join(SEP);
  if (path.length > 0 && set.has(key)) return stringifyJson(value) ?? 'null';
  if (!containers.has(key)) return stored(value, type);
  if (Array.isArray(value)) {
    const item = type?.startsWith('[]') === true ? type.slice(2) : undefined;
    return `[${value.map((v, i) => quoteJsonPatch(v, [...path, String(i)], containers, set, item)).join(',')}]`;
  }
  if (isObject(value)) return members(value, (k) => quoteJsonPatch(value[k], [...path, k], containers, set, childType(type, k)));
  return stored(value, type);
}

/**
 * The patched object `patched` (the result of `patch`, of `contentType`,
 * over `original`) as the server quotes it; `unstructured`: a custom
 * resource's, stored as a map (every member sorted), not a Go struct.
 *
 * @example
 * ```ts
 * const current = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'n', name: 'a' }, data: {} };
 * const patched = { ...current, data: { x: 1 } };
 * quotePatchedObject(patched, current, { data: { x: 1 } }, 'application/merge-patch+json');
 * // '{"apiVersion":"v1","data":{"x":1},"kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}'
 * ```
 */
export function quotePatchedObject(patched: Json, original: Json, patch: unknown, contentType: string, unstructured = false): string {
  // a custom resource is stored as an unstructured map: every member sorted
  const root = unstructured ? undefined : `root:${typeof original['kind'] === 'string' ? original['kind'] : ''}`;
  if (contentType === 'application/merge-patch+json' && isObject(patch)) return quoteMerge(patched, original, patch, root);
  if (contentType === 'application/json-patch+json' && Array.isArray(patch)) {
    const containers = new Set<string>(['']);
    const set = new Set<string>();
    for (const op of patch) {
      if (!isObject(op)) continue;
      for (const pointer of [op['path'], op['from']]) {
        const t = tokens(pointer);
        if (t === undefined) continue;
        // evanphx/json-patch decodes every container on the way to the member an operation names
        for (let i = 0; i < t.length; i++) containers.add(t.slice(0, i).join(SEP));
      }
      const target = tokens(op['path']);
      if (target && target.length > 0 && (op['op'] === 'add' || op['op'] === 'replace')) set.add(target.join(SEP));
    }
    return quoteJsonPatch(patched, [], containers, set, root);
  }
  return canonical(patched);
}

/**
 * `obj` with its members in its Go types' field order where the fake
 * knows it (the order the unstructured converter meets them in), as JSON.
 *
 * @example
 * ```ts
 * inGoFieldOrder({ kind: 'Deployment', spec: { paused: true, replicas: 1 } }); // '{"kind":"Deployment","spec":{"replicas":1,"paused":true}}'
 * ```
 */
export function inGoFieldOrder(obj: Json): string {
  const root = `root:${typeof obj['kind'] === 'string' ? obj['kind'] : ''}`;
  return members(obj, (k) => stored(obj[k], childType(root, k)));
}
