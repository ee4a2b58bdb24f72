/**
 * What each kind's REST strategy does on a write, as kube-apiserver's
 * registry strategies (PrepareForCreate, PrepareForUpdate, Validate): status
 * and defaults a built-in kind sets on create, the fields Go always
 * serializes and those it drops when empty, Secret `stringData`, which
 * changes bump `generation`, and validation (metadata, immutable fields, a
 * custom resource's schema, validators of the test's own).
 */
import { celErrors, hasRules } from './cel.js';
import { crdDefaults, crdSchemaErrors, crdWarnings } from './crd-check.js';
import { isObject, sameJson } from './json.js';
import type { Json } from './json.js';
import { buffered, withWarnings } from './request-info.js';
import type { Target } from './request-info.js';
import { typeKey } from './resources.js';
import { ApiError, badRequest, invalid } from './status.js';
import type { FieldError } from './status.js';
import { render } from './storage.js';
import type { Storage } from './storage.js';
import { validateMetadata } from './validation.js';

/** Status a built-in kind's strategy sets on create (beyond the zero fields below). */
const STATUS_ON_CREATE: Readonly<Record<string, (now: string) => Json>> = {
  'apps/deployments': () => ({}),
  'batch/jobs': () => ({}),
  'batch/cronjobs': () => ({}),
  '/resourcequotas': () => ({}),
  '/persistentvolumeclaims': () => ({ phase: 'Pending' }),
  '/persistentvolumes': (now) => ({ phase: 'Pending', lastPhaseTransitionTime: now }),
};

/** Status fields serialized even when zero (no omitempty in the Go types). */
const STATUS_ZERO: Readonly<Record<string, Json>> = {
  '/services': { loadBalancer: {} },
  'networking.k8s.io/ingresses': { loadBalancer: {} },
  'policy/poddisruptionbudgets': { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 },
  'autoscaling/horizontalpodautoscalers': { desiredReplicas: 0, currentMetrics: null },
  'apps/statefulsets': { replicas: 0, availableReplicas: 0 },
  'apps/daemonsets': { currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0 },
  'apps/replicasets': { replicas: 0 },
  '/replicationcontrollers': { replicas: 0 },
  '/nodes': {
    daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
    nodeInfo: { machineID: '', systemUUID: '', bootID: '', kernelVersion: '', osImage: '', containerRuntimeVersion: '', kubeletVersion: '', kubeProxyVersion: '', operatingSystem: '', architecture: '' },
  },
};

/** A Pod's QoS class: Guaranteed when every container limits cpu and memory with requests equal to limits; BestEffort when none asks for anything. */
function qosClass(pod: Json): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const spec = isObject(pod['spec']) ? pod['spec'] : {};
  const containers = [...(Array.isArray(spec['containers']) ? (spec['containers'] as Json[]) : []), ...(Array.isArray(spec['initContainers']) ? (spec['initContainers'] as Json[]) : [])];
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const res = isObject(c['resources']) ? c['resources'] : {};
    const limits = isObject(res['limits']) ? res['limits'] : {};
    const requests = isObject(res['requests']) ? res['requests'] : {};
    if (Object.keys(limits).length > 0 || Object.keys(requests).length > 0) any = true;
    for (const r of ['cpu', 'memory']) {
      if (limits[r] === undefined || (requests[r] !== undefined && !sameJson(requests[r], limits[r]))) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** Secrets: `stringData` is written into `data` (base64), as the API server does on every write. */
export function foldStringData(t: Target, obj: Json): void {
  if (t.st.type.kind !== 'Secret' || t.st.type.group !== '' || !isObject(obj['stringData'])) return;
  const data = isObject(obj['data']) ? { ...obj['data'] } : {};
  for (const [k, v] of Object.entries(obj['stringData'])) if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
  obj['data'] = data;
  delete obj['stringData'];
}

/**
 * Empty maps and lists the real server drops on the way to storage (Go
 * `omitempty`): metadata's labels, annotations, finalizers, owner
 * references for every kind; a ConfigMap's or Secret's data.
 */
export function dropEmpty(t: Target, obj: Json): void {
  const empty = (v: unknown): boolean => (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0) || v === null;
  const m = obj['metadata'] as Json;
  for (const f of ['labels', 'annotations', 'finalizers', 'ownerReferences', 'managedFields']) if (empty(m[f])) delete m[f];
  if (t.st.type.builtin && t.st.type.group === '' && (t.st.type.kind === 'ConfigMap' || t.st.type.kind === 'Secret')) {
    for (const f of ['data', 'binaryData', 'stringData']) if (empty(obj[f])) delete obj[f];
  }
}

/** Kind-specific defaults and status on create (what the built-in strategies do). */
export function prepareForCreate(s: Storage, t: Target, obj: Json): void {
  const kind = t.st.type.kind;
  if (t.st.type.status) delete obj['status'];
  foldStringData(t, obj);
  if (!t.st.type.builtin) return;
  const m = obj['metadata'] as Json;
  if (kind === 'Namespace' && t.st.type.group === '') {
    const spec = isObject(obj['spec']) ? obj['spec'] : {};
    spec['finalizers'] = ['kubernetes'];
    obj['spec'] = spec;
    obj['status'] = { phase: 'Active' };
    m['labels'] = { ...(m['labels'] as Json | undefined), 'kubernetes.io/metadata.name': m['name'] };
  } else if (kind === 'Pod' && t.st.type.group === '') {
    obj['status'] = { phase: 'Pending', qosClass: qosClass(obj) };
  } else if (kind === 'DaemonSet' && t.st.type.group === 'apps') {
    // the DaemonSet strategy records the template's generation (owned by the creator, as the server records it)
    m['annotations'] = { ...(m['annotations'] as Json | undefined), 'deprecated.daemonset.template.generation': '1' };
  } else if (kind === 'CustomResourceDefinition') {
    // the CRD strategy's status on create: no conditions (a nil slice, written as null), the zero accepted names
    // (their plural and kind have no omitempty), the storage version stored; measured on kube-apiserver v1.37.2
    const versions = isObject(obj['spec']) && Array.isArray(obj['spec']['versions']) ? (obj['spec']['versions'] as unknown[]).filter(isObject) : [];
    const storage = versions.find((v) => v['storage'] === true)?.['name'];
    obj['status'] = { conditions: null, acceptedNames: { plural: '', kind: '' }, storedVersions: typeof storage === 'string' ? [storage] : [] };
    crdDefaults(obj);
  } else {
    const initial = STATUS_ON_CREATE[typeKey(t.st.type.group, t.st.type.plural)];
    if (initial) obj['status'] = initial(s.now());
  }
}

/** Status fields the API server always serializes (Go fields without omitempty) for some built-in kinds. */
/** Top-level fields Go always writes, `null` when unset (time fields without omitempty): a core Event's times. */
const NULL_FIELDS: Readonly<Record<string, readonly string[]>> = {
  '/events': ['firstTimestamp', 'lastTimestamp', 'eventTime'],
};

export function zeroStatus(t: Target, obj: Json): void {
  if (!t.st.type.builtin) return;
  for (const f of NULL_FIELDS[typeKey(t.st.type.group, t.st.type.plural)] ?? []) if (obj[f] === undefined) obj[f] = null;
  const zero = STATUS_ZERO[typeKey(t.st.type.group, t.st.type.plural)];
  if (!zero) return;
  obj['status'] = { ...structuredClone(zero), ...(isObject(obj['status']) ? obj['status'] : {}) };
}

/** The value at a field path of a validation error (`spec.ports[0].port`); `found: false` when the path is not there. */
function atFieldPath(obj: unknown, path: string): { found: boolean; value: unknown } {
  if (path === '') return { found: true, value: obj };
  let here: unknown = obj;
  for (const part of path.match(/[^.[\]]+|\[\d+\]/g) ?? []) {
    if (part.startsWith('[')) {
      const i = Number(part.slice(1, -1));
      if (!Array.isArray(here) || i >= here.length) return { found: false, value: undefined };
      here = here[i];
    } else {
      if (!isObject(here) || !(part in here)) return { found: false, value: undefined };
      here = here[part];
    }
  }
  return { found: true, value: here };
}

/**
 * The schema errors an update keeps under validation ratcheting: one at a
 * value the update left unchanged is dropped; a required field's error
 * belongs to the object that lacks it, so it is dropped when that object is
 * unchanged. The whole object (metadata aside) for an error at the root.
 */
function ratchet(errors: readonly FieldError[], next: Json, old: Json): FieldError[] {
  const withoutMeta = (o: Json): Json => ({ ...o, metadata: undefined });
  return errors.filter((e) => {
    const field = e.field ?? '';
    const path = e.type === 'FieldValueRequired' ? field.replace(/(\.[^.[\]]+|\[\d+\])$/, '') : field;
    if (path === '') return !sameJson(withoutMeta(next), withoutMeta(old));
    const a = atFieldPath(next, path);
    const b = atFieldPath(old, path);
    return !(a.found && b.found && sameJson(a.value, b.value));
  });
}

/** Paths of fields a structural schema does not declare (where no node keeps unknown fields). */
function undeclared(value: unknown, schema: Json | undefined, path: string, root: boolean): string[] {
  if (!isObject(schema)) return [];
  if (Array.isArray(value)) {
    // a list the schema does not declare: every field of its objects is pruned, unless the schema keeps unknown fields
    const items = isObject(schema['items']) ? schema['items'] : schema['x-kubernetes-preserve-unknown-fields'] === true ? undefined : {};
    return items ? value.flatMap((v, i) => undeclared(v, items, `${path}[${i}]`, false)) : [];
  }
  if (!isObject(value)) return [];
  const props = isObject(schema['properties']) ? schema['properties'] : undefined;
  const extra = isObject(schema['additionalProperties']) ? schema['additionalProperties'] : undefined;
  const keeps = schema['x-kubernetes-preserve-unknown-fields'] === true;
  const out: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (root && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue;
    const p = path === '' ? k : `${path}.${k}`;
    const child = props?.[k] ?? extra;
    if (isObject(child)) out.push(...undeclared(v, child, p, false));
    else if (!keeps) out.push(p);
  }
  return out;
}

/** Paths (`spec.items[0].junk`) of fields `given` has and `stored` does not: what a structural schema pruned. */
function prunedPaths(given: unknown, stored: unknown, path: string): string[] {
  if (Array.isArray(given) && Array.isArray(stored)) return given.flatMap((g, i) => prunedPaths(g, stored[i], `${path}[${i}]`));
  if (!isObject(given) || !isObject(stored)) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(given)) {
    if (path === '' && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue;
    const p = path === '' ? k : `${path}.${k}`;
    if (!Object.hasOwn(stored, k)) out.push(p);
    else out.push(...prunedPaths(v, stored[k], p));
  }
  return out;
}

/** Whether a change from `old` to `next` bumps metadata.generation. */
export function specChanged(t: Target, old: Json, next: Json): boolean {
  if (t.st.type.group === 'discovery.k8s.io' && t.st.type.kind === 'EndpointSlice') {
    // its strategy counts every change, labels included
    const bare = (o: Json): Json => {
      const { resourceVersion: _r, managedFields: _f, generation: _g, ...m } = o['metadata'] as Json;
      return { ...o, metadata: m };
    };
    return !sameJson(bare(old), bare(next));
  }
  const strip = (o: Json): Json => {
    const { metadata: _m, status, ...rest } = o;
    return t.st.type.status ? rest : { ...rest, status };
  };
  return !sameJson(strip(old), strip(next));
}

/** The value at `path` in `obj`, or undefined where the path leaves the object. */
function valueAt(obj: unknown, path: readonly string[]): unknown {
  let cur = obj;
  for (const k of path) {
    if (!isObject(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

/**
 * A custom resource's replicas paths (int32, not negative), checked as the
 * custom-resource validator does after the schema: the replicas of a Scale are an int32 (found by the int64
 * conformance case, 2^31 in `.spec.replicas` is 422 on the server).
 */
function scaleErrors(scale: NonNullable<Target['st']['type']['scale']>, obj: Json, spec: boolean): FieldError[] {
  const errors: FieldError[] = [];
  const replicas = (path: readonly string[]): void => {
    const value = valueAt(obj, path);
    if (typeof value !== 'number' && typeof value !== 'bigint') return; // absent is 0; another type is the schema's to refuse
    const field = `.${path.join('.')}`;
    if (value < 0) errors.push({ type: 'FieldValueInvalid', field, value, detail: 'should be a non-negative integer' });
    else if (value > 2147483647) errors.push({ type: 'FieldValueInvalid', field, value, detail: 'should be less than or equal to 2147483647' });
  };
  if (spec) replicas(scale.specReplicasPath);
  replicas(scale.statusReplicasPath);
  return errors;
}

/**
 * A Deployment's status as its status strategy validates it (apps
 * ValidateDeploymentStatus): counts not negative, in the struct's order,
 * then the replica counts against each other. Unset counts are Go's 0;
 * the optional ones (terminatingReplicas, collisionCount) only when set.
 */
function deploymentStatusErrors(status: unknown): FieldError[] {
  const st = isObject(status) ? status : {};
  const count = (f: string): number | undefined => (typeof st[f] === 'number' ? st[f] : typeof st[f] === 'bigint' ? Number(st[f]) : undefined);
  const errors: FieldError[] = [];
  for (const f of ['observedGeneration', 'replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas', 'unavailableReplicas', 'terminatingReplicas', 'collisionCount']) {
    const v = count(f);
    if (v !== undefined && v < 0) errors.push({ type: 'FieldValueInvalid', field: `status.${f}`, value: st[f], detail: 'must be greater than or equal to 0' });
  }
  const n = (f: string): number => count(f) ?? 0;
  for (const f of ['updatedReplicas', 'readyReplicas', 'availableReplicas']) {
    if (n(f) > n('replicas')) errors.push({ type: 'FieldValueInvalid', field: `status.${f}`, value: st[f], detail: 'cannot be greater than status.replicas' });
  }
  if (n('availableReplicas') > n('readyReplicas')) errors.push({ type: 'FieldValueInvalid', field: 'status.availableReplicas', value: st['availableReplicas'], detail: 'cannot be greater than readyReplicas' });
  return errors;
}

/**
 * Validate a create (`old` undefined) or an update: metadata, finalizers of
 * an object being deleted, a deletion time or grace period the update tried
 * to change (`changed`: the values it gave), immutable ConfigMaps and Secrets, a Deployment's status, the custom
 * resource's schema (which also prunes and defaults `obj` in place), the
 * kind's validators. 422 Invalid with every problem found; the warnings
 * the server sends with a write that passes.
 */
/**
 * The decoder's word on a custom resource's body that is not validated (an
 * update of a missing object): `Strict`'s 400 for undeclared fields, or a
 * `Warn` warning each, which the 404 then carries (found by the schema-change
 * fuzzer).
 */
export function unknownFieldWarnings(t: Target, obj: Json): string[] {
  if (t.st.type.builtin || !t.st.schema) return [];
  const mode = t.fieldValidation ?? 'Ignore';
  const unknown = mode === 'Ignore' ? [] : undeclared(obj, t.st.schema, '', true).sort();
  if (unknown.length > 0 && mode === 'Strict') throw strictDecodingError(t, unknown);
  return mode === 'Warn' ? unknown.map((p) => `unknown field ${JSON.stringify(p)}`) : [];
}

/** `fieldValidation=Strict`'s 400 for a custom resource's undeclared fields. */
function strictDecodingError(t: Target, unknown: readonly string[]): Error {
  return badRequest(`${t.st.type.kind} in version ${JSON.stringify(t.version)} cannot be handled as a ${t.st.type.kind}: strict decoding error: ${unknown.map((p) => `unknown field ${JSON.stringify(p)}`).join(', ')}`);
}

/** What apimachinery's IsConfigMapKey says of a ConfigMap's or Secret's key, each problem a message (kube-apiserver v1.37.2's words). */
function configKeyProblems(key: string): string[] {
  const problems: string[] = [];
  // Go's len(): bytes, though the message says characters
  if (Buffer.byteLength(key, 'utf8') > 253) problems.push('must be no more than 253 characters');
  if (!/^[-._a-zA-Z0-9]+$/.test(key)) problems.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");
  if (key === '.') problems.push("must not be '.'");
  else if (key === '..') problems.push("must not be '..'");
  else if (key.startsWith('..')) problems.push("must not start with '..'");
  return problems;
}

/**
 * The keys of a ConfigMap's `data` and `binaryData` (a key in both is a duplicate, told at `binaryData`) or a Secret's
 * `data` and `stringData`, as ValidateConfigMap and ValidateSecret check them (found by probing JSON patches).
 */
function configKeyErrors(kind: 'ConfigMap' | 'Secret', obj: Json): FieldError[] {
  const errors: FieldError[] = [];
  const keysOf = (field: string): string[] => (isObject(obj[field]) ? Object.keys(obj[field]).sort() : []);
  const fields = kind === 'ConfigMap' ? ['data', 'binaryData'] : ['data', 'stringData'];
  for (const field of fields) {
    for (const key of keysOf(field)) for (const detail of configKeyProblems(key)) errors.push({ type: 'FieldValueInvalid', field: `${field}[${key}]`, value: key, detail });
  }
  if (kind === 'ConfigMap') {
    const data = new Set(keysOf('data'));
    for (const key of keysOf('binaryData')) if (data.has(key)) errors.push({ type: 'FieldValueInvalid', field: `data[${key}]`, value: key, detail: 'duplicate of key present in binaryData' });
  }
  return errors;
}

/** Each error once, in the order first given. */
function distinctErrors(errors: readonly FieldError[]): FieldError[] {
  return [...new Map(errors.map((e) => [JSON.stringify([e.type, e.field, e.value, e.detail, e.text]), e])).values()];
}

export function validate(s: Storage, t: Target, obj: Json, old: Json | undefined, changed: { readonly deletionTimestamp?: unknown; readonly deletionGracePeriodSeconds?: unknown } = {}): string[] {
  const m = obj['metadata'] as Json;
  const name = typeof m['name'] === 'string' ? m['name'] : '';
  const oldFinalizers = old ? (((old['metadata'] as Json)['finalizers'] as string[] | undefined) ?? []) : [];
  const warnings = t.st.type.builtin ? undefined : { list: [] as string[], old: oldFinalizers };
  // A custom resource's ObjectMeta is checked declaratively by its validator (identical errors once: two labels with
  // one bad value are one cause), and on an update first by the generic checks, which list every one (found by the
  // differential fuzzer, random seed 1195077979: a create listed it twice; an update lists it 2 + 2 + 1 times)
  const metaChecked = validateMetadata(t.st.type.group, t.st.type.kind, m, t.st.type.namespaced, warnings);
  const errors = old && !t.st.type.builtin ? [...metaChecked] : distinctErrors(metaChecked);
  // what ObjectMeta's update rules check again: labels, annotations, owner references (not a finalizer's name, not the name)
  const recheckedOf = (list: readonly FieldError[]): FieldError[] => list.filter((e) => e.field === 'metadata.labels' || e.field === 'metadata.annotations' || e.field.startsWith('metadata.ownerReferences'));
  if (t.st.type.builtin && t.st.type.group === '' && (t.st.type.kind === 'ConfigMap' || t.st.type.kind === 'Secret')) errors.push(...configKeyErrors(t.st.type.kind, obj));
  if (!old && t.st.type.group === 'batch' && t.st.type.kind === 'Job' && name.length > 63 && (obj['spec'] as Json | undefined)?.['manualSelector'] !== true) {
    // a Job's name becomes a label of its template (job-name), which a label value's 63 bytes bound (found by the widened fuzzer)
    errors.push({ type: 'FieldValueInvalid', field: 'spec.template.labels', value: name, detail: 'must be no more than 63 bytes' });
  }
  if (old) {
    const om = old['metadata'] as Json;
    const oldFinalizers = (om['finalizers'] as string[] | undefined) ?? [];
    const newFinalizers = (m['finalizers'] as string[] | undefined) ?? [];
    const added = newFinalizers.filter((f) => !oldFinalizers.includes(f));
    // ObjectMeta's update rules, in the server's order: no new finalizer while being deleted, the grace period unchanged
    const metaErrors: FieldError[] = [];
    if (om['deletionTimestamp'] !== undefined && added.length > 0) {
      // the new ones in Go's %#v of a []string (found by the widened fuzzer)
      metaErrors.push({ type: 'FieldValueForbidden', field: 'metadata.finalizers', detail: `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}` });
    }
    for (const f of ['deletionTimestamp', 'deletionGracePeriodSeconds'] as const) {
      if (changed[f] !== undefined) metaErrors.push({ type: 'FieldValueInvalid', field: `metadata.${f}`, value: changed[f], detail: 'field is immutable' });
    }
    // A custom resource's update lists these twice and its labels', annotations' and owner references' problems three
    // times: the generic update validates ObjectMeta as on create, then by its update rules (which check those again),
    // then the custom-resource validator by the update rules once more (kube-apiserver v1.37.2: validateCommonFields,
    // then customResourceValidator.ValidateUpdate; measured by a probe after the random run, seed 1769776260). A
    // built-in kind folds identical errors into one.
    if (t.st.type.builtin) {
      // a built-in kind's own check of finalizer names (neither standard nor qualified) comes in its strategy, after the
      // generic update's rules (a random run of the fuzzer, seed 381842293: an apply adding `hold` to a Deployment being
      // deleted)
      const kindOwn = errors.filter((e) => e.detail === 'name is neither a standard finalizer name nor is it fully qualified');
      const generic = errors.filter((e) => !kindOwn.includes(e));
      errors.length = 0;
      errors.push(...generic, ...metaErrors, ...kindOwn);
    } else errors.push(...metaErrors, ...recheckedOf(metaChecked), ...metaErrors, ...recheckedOf(distinctErrors(metaChecked)));
    // a Secret's type never changes (ValidateSecretUpdate, before its immutable data; found by the differential fuzzer)
    if (t.st.type.builtin && t.st.type.group === '' && t.st.type.kind === 'Secret' && old['type'] !== undefined && obj['type'] !== old['type']) {
      errors.push({ type: 'FieldValueInvalid', field: 'type', value: obj['type'], detail: 'field is immutable' });
    }
    if ((t.st.type.kind === 'ConfigMap' || t.st.type.kind === 'Secret') && old['immutable'] === true) {
      for (const field of ['data', 'binaryData', 'stringData']) {
        if (!sameJson(old[field], obj[field])) errors.push({ type: 'FieldValueForbidden', field, detail: 'field is immutable when `immutable` is set' });
      }
      if (obj['immutable'] !== true) errors.push({ type: 'FieldValueForbidden', field: 'immutable', detail: 'field is immutable when `immutable` is set' });
    }
  }
  if (t.subresource === 'status' && t.st.type.builtin && t.st.type.group === 'apps' && t.st.type.kind === 'Deployment') errors.push(...deploymentStatusErrors(obj['status']));
  // a CRD's schemas: structural, and every default valid where it sits (found by the schema-change fuzzer)
  if (t.st.type.builtin && t.st.type.group === 'apiextensions.k8s.io' && t.st.type.kind === 'CustomResourceDefinition' && t.subresource === undefined) errors.push(...crdSchemaErrors(obj));
  // The schema first, as the API server validates a custom resource against it before anything else looks at it.
  const check = t.st.type.builtin ? undefined : s.schemaChecks.get(typeKey(t.st.type.group, t.st.type.plural))?.get(t.version);
  const mode = t.fieldValidation ?? 'Ignore'; // an apply (no fieldValidation on its target) prunes without a warning, as the server's apply does
  /** The decoder's unknown-field warnings (Warn), given with the answer also when validation then fails (found by the differential fuzzer). */
  let decoderWarnings: string[] = [];
  if (check) {
    const rendered = render(t.st, obj, t.version);
    let result = check.check(rendered);
    if (result.errors && old) {
      // validation ratcheting (CRDValidationRatcheting, on since 1.30): an error at a field the update left as it was is
      // not an error; the update as decoded (unknown fields pruned, defaults applied) is what is compared (found by
      // the schema-change fuzzer, seed 965371385)
      const kept = ratchet(result.errors, check.normalise(rendered), render(t.st, old, t.version));
      result = kept.length > 0 ? { errors: kept } : { stored: check.normalise(rendered) };
    }
    if (result.errors || errors.length > 0) {
      // decoding comes before validation: a strict decode fails on unknown fields, a warning one has warned about them (found by the fuzzer)
      const unknown = mode === 'Ignore' ? [] : undeclared(obj, t.st.schema, '', true).sort();
      if (unknown.length > 0 && mode === 'Strict') throw strictDecodingError(t, unknown);
      if (mode === 'Warn') decoderWarnings = unknown.map((p) => `unknown field ${JSON.stringify(p)}`);
      if (result.errors) errors.push(...result.errors);
    } else {
      // unknown fields: pruned, with a warning each (Warn), or the decoder's 400 (Strict)
      const unknown = prunedPaths(obj, result.stored, '').sort();
      if (unknown.length > 0 && mode === 'Strict') throw strictDecodingError(t, unknown);
      if (mode === 'Warn') decoderWarnings = unknown.map((p) => `unknown field ${JSON.stringify(p)}`);
      // the decoder's warnings come before the strategy's (found by the fuzzer)
      if (warnings) warnings.list.unshift(...decoderWarnings);
      // stored as the server would: unknown fields pruned, defaults applied
      // metadata is the fake's to keep (ObjectMeta is never pruned by a CRD's schema)
      const stored: Json = { ...result.stored, metadata: obj['metadata'] };
      delete stored['apiVersion'];
      delete stored['kind'];
      for (const k of Object.keys(obj)) delete obj[k];
      Object.assign(obj, stored);
    }
  }
  // the scale subresource's paths, after the schema (a main write checks both replicas paths, a status write the status ones)
  if (!t.st.type.builtin && t.st.type.scale) errors.push(...scaleErrors(t.st.type.scale, obj, t.subresource !== 'status'));
  // the CRD's validation rules (CEL), on the object as pruned and defaulted, ratcheted as the schema's errors are
  if (!t.st.type.builtin && t.st.schema && hasRules(t.st.schema)) {
    const now = render(t.st, obj, t.version);
    const normal = check ? check.normalise(now) : now;
    const before = old ? render(t.st, old, t.version) : undefined;
    const failed = celErrors(normal, before, t.st.schema);
    errors.push(...(before ? ratchet(failed, normal, before) : failed));
  }
  for (const validator of t.st.type.validators) {
    for (const p of validator(render(t.st, obj, t.version), old ? render(t.st, old, t.version) : undefined)) {
      errors.push({ type: p.type ?? 'FieldValueInvalid', field: p.field, ...(p.value === undefined ? {} : { value: p.value }), detail: p.message });
    }
  }
  if (errors.length > 0) {
    // a built-in kind's identical errors once (two labels with the same bad value, a bad finalizer given twice: one cause
    // on kube-apiserver 1.37, measured on ConfigMaps and Services, create and apply; found by the differential fuzzer);
    // a custom resource's are not folded (its metadata errors come twice, above)
    const distinct = t.st.type.builtin ? distinctErrors(errors) : errors;
    // the strategy's warnings come only after validation passes; the decoder's came before it
    const err = invalid(t.st.type.group, t.st.type.kind, name, distinct);
    throw decoderWarnings.length === 0 ? err : new ApiError(err.body, withWarnings(buffered(err.code, err.body, err.headers), decoderWarnings).headers);
  }
  if (t.st.type.builtin && t.st.type.group === 'apiextensions.k8s.io' && t.st.type.kind === 'CustomResourceDefinition' && t.subresource === undefined) return crdWarnings(obj, old);
  return warnings?.list ?? [];
}
