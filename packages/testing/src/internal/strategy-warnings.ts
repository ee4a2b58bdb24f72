/**
 * The warnings built-in kinds' REST strategies send with a write that
 * passes (kube-apiserver v1.37.2, pkg/registry/.../strategy.go and
 * pkg/api/pod/warnings.go): a workload's or Pod's name that is not a DNS
 * label, and what its pod template holds that is likely a mistake —
 * deprecated node labels in its node selector and topology spread
 * constraints, a spread constraint without a selector, repeated container
 * ports and port names, a host IP without a host port,
 * an env variable hiding an earlier one, a fractional byte quantity,
 * repeated image pull secrets and host alias IPs, deprecated annotations, a
 * negative termination grace period. On create always; on update when the
 * generation moved (a Pod's updates are not warned about). Found by the
 * differential fuzzer (random seed 238290367: an apply merging a second
 * container's port 80 with the first's).
 */
import { formatQuantity, parseQuantity, QuantityError } from './openapi/quantity.js';
import type { Quantity } from './openapi/quantity.js';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_TEXT } from './validation.js';
import { isObject } from './json.js';
import type { Json } from './json.js';

/** Where each workload kind keeps its pod template, and whether its create warns about its name (group/kind). */
const TEMPLATES: Readonly<Record<string, { readonly path: readonly string[]; readonly name: 'workload' | 'pod' | undefined }>> = {
  '/Pod': { path: [], name: 'pod' },
  '/ReplicationController': { path: ['spec', 'template'], name: 'workload' },
  '/PodTemplate': { path: ['template'], name: undefined },
  'apps/Deployment': { path: ['spec', 'template'], name: 'workload' },
  'apps/ReplicaSet': { path: ['spec', 'template'], name: 'workload' },
  'apps/StatefulSet': { path: ['spec', 'template'], name: undefined },
  'apps/DaemonSet': { path: ['spec', 'template'], name: undefined },
  'batch/Job': { path: ['spec', 'template'], name: 'workload' },
  'batch/CronJob': { path: ['spec', 'jobTemplate', 'spec', 'template'], name: 'workload' },
};

/** pkg/api/node's deprecated node labels and what to use instead. */
const DEPRECATED_NODE_LABELS: Readonly<Record<string, string>> = {
  'beta.kubernetes.io/arch': 'deprecated since v1.14; use "kubernetes.io/arch" instead',
  'beta.kubernetes.io/os': 'deprecated since v1.14; use "kubernetes.io/os" instead',
  'failure-domain.beta.kubernetes.io/region': 'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
  'failure-domain.beta.kubernetes.io/zone': 'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
  'beta.kubernetes.io/instance-type': 'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
  'app.kubernetes.io/created-by': 'deprecated since v1.9',
  'scheduler.alpha.kubernetes.io/preferAvoidPods': 'deprecated since v1.22; use Taints and Tolerations instead',
  'node-role.kubernetes.io/master': 'use "node-role.kubernetes.io/control-plane" instead',
};

const DEPRECATED_ANNOTATIONS: readonly (readonly [string, string])[] = [
  ['scheduler.alpha.kubernetes.io/critical-pod', 'non-functional in v1.16+; use the "priorityClassName" field instead'],
  ['security.alpha.kubernetes.io/sysctls', 'non-functional in v1.11+; use the "sysctls" field instead'],
  ['security.alpha.kubernetes.io/unsafe-sysctls', 'non-functional in v1.11+; use the "sysctls" field instead'],
];

/** apimachinery's IsDNS1123Label, its messages. */
function dns1123LabelMessages(name: string): string[] {
  const msgs: string[] = [];
  if (name.length > 63) msgs.push('must be no more than 63 characters');
  if (!DNS1123_LABEL.test(name)) msgs.push(DNS1123_SUBDOMAIN.test(name) ? 'must not contain dots' : LABEL_TEXT);
  return msgs;
}

function at(obj: unknown, path: readonly string[]): unknown {
  let cur = obj;
  for (const p of path) cur = isObject(cur) ? cur[p] : undefined;
  return cur;
}

const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

/** A field path as apimachinery prints it (`spec.template.spec.containers[1]`); `key` a map key (`[memory]`). */
function join(base: string, child: string): string {
  return base === '' ? child : `${base}.${child}`;
}

/** Whether a memory or ephemeral-storage quantity is not a whole number of bytes (Quantity.MilliValue rounds up, then % 1000). */
function fractionalBytes(text: unknown): Quantity | undefined {
  if (typeof text !== 'string') return undefined;
  let q: Quantity;
  try {
    q = parseQuantity(text);
  } catch (err) {
    if (err instanceof QuantityError) return undefined;
    throw err;
  }
  // milli = ceil(mantissa * 10^(scale+3))
  const shift = q.scale + 3;
  let milli: bigint;
  if (shift >= 0) milli = q.mantissa * 10n ** BigInt(shift);
  else {
    const d = 10n ** BigInt(-shift);
    milli = q.mantissa / d;
    if (q.mantissa % d !== 0n && q.mantissa > 0n) milli += 1n;
  }
  return milli % 1000n !== 0n ? q : undefined;
}

/** A ContainerPort as Go's `%+v` prints the internal type. */
function goPort(p: Json): string {
  return `{Name:${str(p['name'])} HostPort:${num(p['hostPort'])} ContainerPort:${num(p['containerPort'])} Protocol:${str(p['protocol'])} HostIP:${str(p['hostIP'])}}`;
}

/** pkg/api/pod's warningsForPodSpecAndMeta, the parts the fake holds; `base` is the template's field path ('' for a Pod). */
function podSpecWarnings(base: string, template: Json): string[] {
  const warnings: string[] = [];
  const spec = isObject(template['spec']) ? template['spec'] : {};
  const meta = isObject(template['metadata']) ? template['metadata'] : {};
  const annotations = isObject(meta['annotations']) ? meta['annotations'] : {};
  const specPath = join(base, 'spec');
  // deprecated node labels a node selector names (several: in Go's map order, here sorted), then topology spread
  // constraints' keys and their missing selectors
  const nodeSelector = isObject(spec['nodeSelector']) ? spec['nodeSelector'] : {};
  for (const key of Object.keys(nodeSelector).sort()) {
    const message = Object.hasOwn(DEPRECATED_NODE_LABELS, key) ? DEPRECATED_NODE_LABELS[key] : undefined;
    if (message) warnings.push(`${specPath}.nodeSelector[${key}]: ${message}`);
  }
  for (const [i, c] of list(spec['topologySpreadConstraints']).entries()) {
    const key = str(c['topologyKey']);
    const message = Object.hasOwn(DEPRECATED_NODE_LABELS, key) ? DEPRECATED_NODE_LABELS[key] : undefined;
    if (message) warnings.push(`${specPath}.topologySpreadConstraints[${i}].topologyKey: ${key} is ${message}`);
    if (c['labelSelector'] === undefined || c['labelSelector'] === null) warnings.push(`${specPath}.topologySpreadConstraints[${i}].labelSelector: a null labelSelector results in matching no pod`);
  }
  for (const [key, message] of DEPRECATED_ANNOTATIONS) if (Object.hasOwn(annotations, key)) warnings.push(`${join(base, 'metadata.annotations')}[${key}]: ${message}`);
  const seenIps = new Set<string>();
  for (const [i, alias] of list(spec['hostAliases']).entries()) {
    const ip = str(alias['ip']);
    if (seenIps.has(ip)) warnings.push(`${specPath}.hostAliases[${i}].ip: duplicate ip ${JSON.stringify(ip)}`);
    seenIps.add(ip);
  }
  const secrets = list(spec['imagePullSecrets']);
  const seenSecrets = new Set<string>();
  for (const [i, s] of secrets.entries()) {
    const name = str(s['name']);
    if (seenSecrets.has(name)) warnings.push(`${specPath}.imagePullSecrets[${i}].name: duplicate name ${JSON.stringify(name)}`);
    seenSecrets.add(name);
  }
  for (const [i, s] of secrets.entries()) if (str(s['name']) === '') warnings.push(`${specPath}.imagePullSecrets[${i}].name: invalid empty name ""`);
  for (const resource of ['memory', 'ephemeral-storage']) {
    const q = fractionalBytes(at(spec, ['overhead', resource]));
    if (q) warnings.push(`${specPath}.overhead[${resource}]: fractional byte value ${JSON.stringify(formatQuantity(q))} is invalid, must be an integer`);
  }
  const containers: [string, Json][] = [
    ...list(spec['initContainers']).map((c, i): [string, Json] => [`${specPath}.initContainers[${i}]`, c]),
    ...list(spec['containers']).map((c, i): [string, Json] => [`${specPath}.containers[${i}]`, c]),
  ];
  for (const [p, c] of containers) {
    for (const [kind, resource] of [['limits', 'memory'], ['requests', 'memory'], ['limits', 'ephemeral-storage'], ['requests', 'ephemeral-storage']] as const) {
      const q = fractionalBytes(at(c, ['resources', kind, resource]));
      if (q) warnings.push(`${p}.resources.${kind}[${resource}]: fractional byte value ${JSON.stringify(formatQuantity(q))} is invalid, must be an integer`);
    }
    const env = list(c['env']);
    const names = new Set<string>();
    for (const [i, item] of env.entries()) {
      const name = str(item['name']);
      if (names.has(name)) {
        const ref = `$(${name})`;
        const value = str(item['value']);
        if ((item['valueFrom'] !== undefined && item['valueFrom'] !== null) || value === ref || !value.includes(ref)) {
          warnings.push(`${p}.env[${i}]: hides previous definition of ${JSON.stringify(name)}, which may be dropped when using apply`);
        }
      } else names.add(name);
    }
  }
  const ports = new Map<string, { field: string; port: Json }[]>();
  for (const [p, c] of containers) {
    for (const [i, port] of list(c['ports']).entries()) {
      const field = `${p}.ports[${i}]`;
      if (str(port['hostIP']) !== '' && num(port['hostPort']) === 0) warnings.push(`${field}: hostIP set without hostPort: ${goPort(port)}`);
      const key = `${num(port['containerPort'])}/${str(port['protocol'])}`;
      const others = ports.get(key);
      if (!others) {
        ports.set(key, [{ field, port }]);
        continue;
      }
      for (const other of others) {
        const [ip, otherIp] = [str(port['hostIP']), str(other.port['hostIP'])];
        const [hp, otherHp] = [num(port['hostPort']), num(other.port['hostPort'])];
        if (ip === otherIp && hp === otherHp) warnings.push(`${field}: duplicate port definition with ${other.field}`);
        else if (hp === 0 || otherHp === 0) warnings.push(`${field}: overlapping port definition with ${other.field}`);
        else if (hp === otherHp && (ip === '') !== (otherIp === '')) warnings.push(`${field}: dangerously ambiguous port definition with ${other.field}`);
      }
      others.push({ field, port });
    }
  }
  const portNames = new Map<string, string>();
  for (const [p, c] of containers) {
    for (const [i, port] of list(c['ports']).entries()) {
      const name = str(port['name']);
      if (name === '') continue;
      const other = portNames.get(name);
      if (other) warnings.push(`${p}.ports[${i}]: duplicate port name ${JSON.stringify(name)} with ${other}, services and probes that select ports by name will use ${other}`);
      else portNames.set(name, `${p}.ports[${i}]`);
    }
  }
  if (typeof spec['terminationGracePeriodSeconds'] === 'number' && spec['terminationGracePeriodSeconds'] < 0) {
    warnings.push(`${specPath}.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`);
  }
  return warnings;
}

/**
 * The warnings a built-in kind's strategy sends with a create (`old`
 * undefined) or an update of its main resource that passed validation;
 * `generationMoved`: the update changed the spec.
 *
 * @example
 * ```ts
 * strategyWarnings('apps', 'Deployment', deployment, undefined);
 * // ['spec.template.spec.containers[1].ports[0]: duplicate port definition with spec.template.spec.containers[0].ports[0]']
 * ```
 */
export function strategyWarnings(group: string, kind: string, obj: Json, old: Json | undefined, generationMoved = false): string[] {
  const t = TEMPLATES[`${group}/${kind}`];
  if (!t) return [];
  if (old && (kind === 'Pod' || !generationMoved)) return [];
  const warnings: string[] = [];
  const name = str(at(obj, ['metadata', 'name']));
  const msgs = t.name && !old ? dns1123LabelMessages(name) : [];
  if (msgs.length > 0) {
    const used = t.name === 'pod' ? "this is used in the Pod's hostname" : 'this is used in Pod names and hostnames';
    warnings.push(`metadata.name: ${used}, which can result in surprising behavior; a DNS label is recommended: [${msgs.join(' ')}]`);
  }
  const template = t.path.length === 0 ? obj : at(obj, t.path);
  if (isObject(template)) warnings.push(...podSpecWarnings(t.path.join('.'), template));
  return warnings;
}
