/**
 * The resources the fake serves: the built-in kinds of `@kubeloop/scheme`
 * with what their REST strategies do (status subresource, generation,
 * field selectors), and kinds registered from descriptors or CRD objects.
 */
import { builtinScheme } from '@kubeloop/scheme';
import type { ObjectValidator } from '../validator.js';

type Json = Record<string, unknown>;

/** Reads a field for a field selector; undefined when the object has none. */
export type FieldGetter = (obj: Json) => string | undefined;

export interface ScaleSpec {
  readonly specReplicasPath: readonly string[];
  readonly statusReplicasPath: readonly string[];
  readonly labelSelectorPath?: readonly string[];
}

export interface ResourceType {
  readonly group: string;
  /** Served versions, storage version first. */
  readonly versions: readonly string[];
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly listKind: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  /** Discovery categories (`all` makes `kubectl get all` list the kind). */
  readonly categories: readonly string[];
  readonly status: boolean;
  readonly scale: ScaleSpec | undefined;
  /** metadata.generation is kept (set to 1, bumped on spec changes). */
  readonly generation: boolean;
  /** A built-in kind: strategic merge patch, unconditional update, list items without apiVersion/kind. */
  readonly builtin: boolean;
  readonly fieldSelectors: ReadonlyMap<string, FieldGetter>;
  /** The CRD this kind came from (its name), if any. */
  readonly crd: string | undefined;
  /** Whether `metadata.resourceVersion` may be left out of an update. */
  readonly unconditionalUpdate: boolean;
  readonly validators: readonly ObjectValidator[];
}

export function typeKey(group: string, plural: string): string {
  return `${group}/${plural}`;
}

function path(p: string): FieldGetter {
  const parts = p.split('.');
  return (obj) => {
    let cur: unknown = obj;
    for (const part of parts) {
      if (typeof cur !== 'object' || cur === null) return undefined;
      cur = (cur as Json)[part];
    }
    if (cur === undefined || cur === null) return undefined;
    return typeof cur === 'string' ? cur : typeof cur === 'number' || typeof cur === 'boolean' ? String(cur) : undefined;
  };
}

function fields(...paths: string[]): Map<string, FieldGetter> {
  const m = new Map<string, FieldGetter>([
    ['metadata.name', path('metadata.name')],
    ['metadata.namespace', path('metadata.namespace')],
  ]);
  for (const p of paths) m.set(p, path(p));
  return m;
}

const withDefault = (get: FieldGetter, fallback: string): FieldGetter => (obj) => get(obj) ?? fallback;

/** Field selectors the API server supports per built-in resource (the common ones). */
const BUILTIN_FIELDS: Record<string, Map<string, FieldGetter>> = {
  '/pods': (() => {
    const m = fields('spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'status.phase', 'status.podIP', 'status.nominatedNodeName');
    m.set('spec.nodeName', withDefault(path('spec.nodeName'), ''));
    m.set('spec.hostNetwork', (o) => String((o['spec'] as Json | undefined)?.['hostNetwork'] === true));
    return m;
  })(),
  '/secrets': fields('type'),
  '/services': fields('spec.clusterIP', 'spec.type'),
  '/events': fields(
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ),
  'events.k8s.io/events': fields('regarding.kind', 'regarding.namespace', 'regarding.name', 'regarding.uid', 'regarding.apiVersion', 'reason', 'reportingController', 'type'),
  '/namespaces': fields('status.phase'),
  '/nodes': (() => {
    const m = fields();
    m.set('spec.unschedulable', (o) => String((o['spec'] as Json | undefined)?.['unschedulable'] === true));
    return m;
  })(),
  '/replicationcontrollers': fields('status.replicas'),
  'batch/jobs': fields('status.successful'),
  '/persistentvolumeclaims': fields(),
};

/** Built-in resources with a status subresource. */
const STATUS = new Set([
  '/pods',
  '/services',
  '/nodes',
  '/namespaces',
  '/persistentvolumes',
  '/persistentvolumeclaims',
  '/replicationcontrollers',
  '/resourcequotas',
  'apps/deployments',
  'apps/replicasets',
  'apps/statefulsets',
  'apps/daemonsets',
  'batch/jobs',
  'batch/cronjobs',
  'autoscaling/horizontalpodautoscalers',
  'policy/poddisruptionbudgets',
  'networking.k8s.io/ingresses',
  'apiextensions.k8s.io/customresourcedefinitions',
]);

/** Built-in resources whose strategy keeps metadata.generation. */
const GENERATION = new Set([
  '/pods',
  '/replicationcontrollers',
  'apps/deployments',
  'apps/replicasets',
  'apps/statefulsets',
  'apps/daemonsets',
  'batch/jobs',
  'batch/cronjobs',
  'autoscaling/horizontalpodautoscalers',
  'policy/poddisruptionbudgets',
  'networking.k8s.io/ingresses',
  'networking.k8s.io/ingressclasses',
  'networking.k8s.io/networkpolicies',
  'discovery.k8s.io/endpointslices',
  'apiextensions.k8s.io/customresourcedefinitions',
  'admissionregistration.k8s.io/validatingwebhookconfigurations',
  'admissionregistration.k8s.io/mutatingwebhookconfigurations',
]);

const SCALE: Record<string, ScaleSpec> = {
  'apps/deployments': { specReplicasPath: ['spec', 'replicas'], statusReplicasPath: ['status', 'replicas'], labelSelectorPath: ['spec', 'selector'] },
  'apps/replicasets': { specReplicasPath: ['spec', 'replicas'], statusReplicasPath: ['status', 'replicas'], labelSelectorPath: ['spec', 'selector'] },
  'apps/statefulsets': { specReplicasPath: ['spec', 'replicas'], statusReplicasPath: ['status', 'replicas'], labelSelectorPath: ['spec', 'selector'] },
  '/replicationcontrollers': { specReplicasPath: ['spec', 'replicas'], statusReplicasPath: ['status', 'replicas'], labelSelectorPath: ['spec', 'selector'] },
};

const SHORT_NAMES: Record<string, string[]> = {
  '/pods': ['po'],
  '/services': ['svc'],
  '/configmaps': ['cm'],
  '/namespaces': ['ns'],
  '/nodes': ['no'],
  '/serviceaccounts': ['sa'],
  '/endpoints': ['ep'],
  '/events': ['ev'],
  '/persistentvolumes': ['pv'],
  '/persistentvolumeclaims': ['pvc'],
  '/replicationcontrollers': ['rc'],
  '/resourcequotas': ['quota'],
  '/limitranges': ['limits'],
  'apps/deployments': ['deploy'],
  'apps/replicasets': ['rs'],
  'apps/statefulsets': ['sts'],
  'apps/daemonsets': ['ds'],
  'batch/cronjobs': ['cj'],
  'autoscaling/horizontalpodautoscalers': ['hpa'],
  'policy/poddisruptionbudgets': ['pdb'],
  'networking.k8s.io/ingresses': ['ing'],
  'networking.k8s.io/networkpolicies': ['netpol'],
  'apiextensions.k8s.io/customresourcedefinitions': ['crd', 'crds'],
  'storage.k8s.io/storageclasses': ['sc'],
  'events.k8s.io/events': ['ev'],
};

/** The categories kube-apiserver v1.37 puts built-in resources in (`kubectl get all`). */
const CATEGORIES: Record<string, string[]> = {
  '/pods': ['all'],
  '/services': ['all'],
  '/replicationcontrollers': ['all'],
  'apps/deployments': ['all'],
  'apps/replicasets': ['all'],
  'apps/statefulsets': ['all'],
  'apps/daemonsets': ['all'],
  'batch/jobs': ['all'],
  'batch/cronjobs': ['all'],
  'autoscaling/horizontalpodautoscalers': ['all'],
  'apiextensions.k8s.io/customresourcedefinitions': ['api-extensions'],
  'admissionregistration.k8s.io/mutatingwebhookconfigurations': ['api-extensions'],
  'admissionregistration.k8s.io/validatingwebhookconfigurations': ['api-extensions'],
};

/** Kinds that are subresources, not resources (served under their parent). */
const NOT_RESOURCES = new Set(['policy/Eviction']);

/** The built-in resource types, from the built-in scheme. */
export function builtinTypes(): ResourceType[] {
  const out: ResourceType[] = [];
  for (const d of builtinScheme.descriptors()) {
    if (NOT_RESOURCES.has(`${d.group}/${d.kind}`) || !d.plural || d.namespaced === undefined) continue;
    const key = typeKey(d.group, d.plural);
    out.push({
      group: d.group,
      versions: [d.version],
      kind: d.kind,
      plural: d.plural,
      singular: d.kind.toLowerCase(),
      listKind: d.listKind ?? `${d.kind}List`,
      namespaced: d.namespaced,
      shortNames: SHORT_NAMES[key] ?? [],
      categories: CATEGORIES[key] ?? [],
      status: STATUS.has(key),
      scale: SCALE[key],
      generation: GENERATION.has(key),
      builtin: true,
      fieldSelectors: BUILTIN_FIELDS[key] ?? fields(),
      crd: undefined,
      unconditionalUpdate: true,
      validators: [],
    });
  }
  return out;
}

/** What the fake needs to serve a custom kind. */
export interface CustomTypeSpec {
  readonly group: string;
  readonly versions: readonly string[];
  readonly kind: string;
  readonly plural: string;
  readonly singular?: string;
  readonly listKind?: string;
  readonly namespaced: boolean;
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  readonly status?: boolean;
  readonly scale?: ScaleSpec;
  readonly selectableFields?: readonly string[];
  readonly crd?: string;
  readonly validators?: readonly ObjectValidator[];
}

export function customType(spec: CustomTypeSpec): ResourceType {
  return {
    group: spec.group,
    versions: spec.versions,
    kind: spec.kind,
    plural: spec.plural,
    singular: spec.singular ?? spec.kind.toLowerCase(),
    listKind: spec.listKind ?? `${spec.kind}List`,
    namespaced: spec.namespaced,
    shortNames: spec.shortNames ?? [],
    categories: spec.categories ?? [],
    status: spec.status ?? false,
    scale: spec.scale,
    generation: true,
    builtin: false,
    fieldSelectors: fields(...(spec.selectableFields ?? [])),
    crd: spec.crd,
    unconditionalUpdate: false,
    validators: spec.validators ?? [],
  };
}

function jsonPathParts(p: string): string[] {
  return p.replace(/^\./, '').split('.').filter(Boolean);
}

/** A CRD object (apiextensions.k8s.io/v1) → the type it defines; undefined when malformed. */
export function typeFromCRD(crd: Json): ResourceType | undefined {
  const spec = crd['spec'] as Json | undefined;
  const names = spec?.['names'] as Json | undefined;
  const group = spec?.['group'];
  const plural = names?.['plural'];
  const kind = names?.['kind'];
  if (typeof group !== 'string' || typeof plural !== 'string' || typeof kind !== 'string') return undefined;
  const versions = (Array.isArray(spec?.['versions']) ? (spec['versions'] as Json[]) : []).filter((v) => v['served'] !== false && typeof v['name'] === 'string');
  if (versions.length === 0) return undefined;
  const storage = versions.find((v) => v['storage'] === true) ?? versions[0]!;
  const ordered = [storage, ...versions.filter((v) => v !== storage)];
  const sub = (storage['subresources'] ?? {}) as Json;
  const scale = sub['scale'] as Json | undefined;
  const selectable = Array.isArray(storage['selectableFields']) ? (storage['selectableFields'] as Json[]).map((f) => f['jsonPath']).filter((p): p is string => typeof p === 'string') : [];
  return customType({
    group,
    versions: ordered.map((v) => v['name'] as string),
    kind,
    plural,
    ...(typeof names?.['singular'] === 'string' ? { singular: names['singular'] } : {}),
    ...(typeof names?.['listKind'] === 'string' ? { listKind: names['listKind'] } : {}),
    namespaced: spec?.['scope'] !== 'Cluster',
    ...(Array.isArray(names?.['shortNames']) ? { shortNames: names['shortNames'] as string[] } : {}),
    ...(Array.isArray(names?.['categories']) ? { categories: names['categories'] as string[] } : {}),
    status: sub['status'] !== undefined,
    ...(scale && typeof scale['specReplicasPath'] === 'string' && typeof scale['statusReplicasPath'] === 'string'
      ? {
          scale: {
            specReplicasPath: jsonPathParts(scale['specReplicasPath']),
            statusReplicasPath: jsonPathParts(scale['statusReplicasPath']),
            ...(typeof scale['labelSelectorPath'] === 'string' ? { labelSelectorPath: jsonPathParts(scale['labelSelectorPath']) } : {}),
          },
        }
      : {}),
    selectableFields: selectable.map((p) => p.replace(/^\./, '')),
    ...(typeof (crd['metadata'] as Json | undefined)?.['name'] === 'string' ? { crd: (crd['metadata'] as Json)['name'] as string } : {}),
  });
}
