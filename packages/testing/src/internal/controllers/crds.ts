/**
 * The apiextensions controllers, as far as a test needs them: a stored
 * CustomResourceDefinition's kind is served (with schema validation per
 * version) and the CRD becomes Established and NamesAccepted; a CRD being
 * deleted is Terminating until its objects are gone (creates refused), then
 * goes, its kind no longer served and its watches ended.
 */
import { DELETION_IN_PROGRESS, setCRDCondition } from '../crd-conditions.js';
import { CRD_CLEANUP, deleteObject } from '../delete.js';
import { isObject, objKey, sameJson } from '../json.js';
import type { Json } from '../json.js';
import { typeFromCRD, typeKey } from '../resources.js';
import { crdCheck } from '../schema-check.js';
import type { SchemaCheck } from '../schema-check.js';
import { parseManaged, recordUpdate, renderManaged } from '../fields.js';
import { render } from '../storage.js';
import type { Storage, StoredType } from '../storage.js';

const CRD_TYPE = 'apiextensions.k8s.io/customresourcedefinitions';

/** Serve what stored CRDs define, from every change of a CRD on; finish a CRD's deletion when its last custom resource goes. */
export function runCRDController(s: Storage): void {
  s.onChange((change, st) => {
    if (change.typeKey === CRD_TYPE) {
      if (change.type === 'DELETED') removeCRD(s, change.object);
      else if ((change.object['metadata'] as Json)['deletionTimestamp'] !== undefined) {
        const name = (change.object['metadata'] as Json)['name'] as string;
        queueMicrotask(() => terminateCRD(s, st, name));
      } else establishCRD(s, st, change.object);
      return;
    }
    if (change.type === 'DELETED' && s.terminating.has(change.typeKey)) queueMicrotask(() => finishIfEmpty(s, change.typeKey));
  });
}

/**
 * Record a status write of the apiextensions controllers in `next`'s managed
 * fields, as kube-apiserver records them: an Update of the `status`
 * subresource by the manager `kube-apiserver`, owning what it changed (the
 * names and conditions when the CRD is established; the Terminating
 * condition's reason and message when its deletion starts). Measured on
 * kube-apiserver v1.37.2; the schema-change fuzzer compares these entries.
 */
function recordStatusWrite(s: Storage, crdSt: StoredType, before: Json, next: Json): void {
  const ctx = { manager: 'kube-apiserver', apiVersion: 'apiextensions.k8s.io/v1', time: s.now(), scope: 'status' as const, hasStatus: true, shape: crdSt.shape };
  const entries = recordUpdate(parseManaged((before['metadata'] as Json)['managedFields']), before, next, ctx);
  (next['metadata'] as Json)['managedFields'] = renderManaged(entries);
}

/**
 * A CRD marked for deletion (its storage added the cleanup finalizer), as
 * the apiextensions finalizer controller handles it: the Terminating
 * condition, creates refused (write.ts), every custom resource deleted
 * (those a finalizer holds stay, marked), and the CRD goes with the last
 * of them, its kind no longer served and its watches ended.
 */
function terminateCRD(s: Storage, crdSt: StoredType, name: string): void {
  const crd = crdSt.objects.get(objKey(undefined, name));
  if (!crd || (crd['metadata'] as Json)['deletionTimestamp'] === undefined) return;
  const type = typeFromCRD(crd);
  if (!type) return;
  const key = typeKey(type.group, type.plural);
  if (!s.terminating.has(key)) {
    s.terminating.add(key);
    const next = structuredClone(crd);
    setCRDCondition(next, DELETION_IN_PROGRESS, s.now());
    recordStatusWrite(s, crdSt, crd, next);
    s.store(crdSt, objKey(undefined, name), next, crd, 'MODIFIED');
    const st = s.types.get(key);
    if (st && !st.type.builtin) {
      for (const k of [...st.objects.keys()].sort()) {
        const obj = st.objects.get(k);
        if (!obj) continue;
        const m = obj['metadata'] as Json;
        deleteObject(s, { st, version: st.type.versions[0]!, namespace: m['namespace'] as string | undefined, name: m['name'] as string, subresource: undefined }, obj, {}, false);
      }
    }
  }
  finishIfEmpty(s, key);
}

/** The CRD of a terminating kind goes (its cleanup finalizer removed) once no custom resource of it is left. */
function finishIfEmpty(s: Storage, key: string): void {
  const st = s.types.get(key);
  if (st && st.objects.size > 0) return;
  const crdSt = s.types.get(CRD_TYPE);
  const slash = key.indexOf('/');
  const crdKey = objKey(undefined, `${key.slice(slash + 1)}.${key.slice(0, slash)}`);
  const crd = crdSt?.objects.get(crdKey);
  if (!crdSt || !crd) return;
  const m = crd['metadata'] as Json;
  const finalizers = (m['finalizers'] as string[] | undefined) ?? [];
  if (m['deletionTimestamp'] === undefined || !finalizers.includes(CRD_CLEANUP)) return;
  const rest = finalizers.filter((f) => f !== CRD_CLEANUP);
  if (rest.length === 0) {
    // the last finalizer gone: deleted, the event carrying the object as stored
    s.store(crdSt, crdKey, structuredClone(crd), crd, 'DELETED');
    return;
  }
  const next = structuredClone(crd);
  (next['metadata'] as Json)['finalizers'] = rest;
  s.store(crdSt, crdKey, next, crd, 'MODIFIED');
}

function establishCRD(s: Storage, st: StoredType, crd: Json): void {
  const type = typeFromCRD(crd);
  if (!type) return;
  const existing = s.types.get(typeKey(type.group, type.plural));
  if (existing && existing.type.builtin) return;
  const spec = crd['spec'] as Json;
  const versions = Array.isArray(spec['versions']) ? (spec['versions'] as Json[]) : [];
  const storage = versions.find((v) => v['storage'] === true) ?? versions[0];
  const schema = isObject(storage?.['schema']) && isObject(storage['schema']['openAPIV3Schema']) ? storage['schema']['openAPIV3Schema'] : undefined;
  s.addType(type, schema);
  const checks = new Map<string, SchemaCheck>();
  for (const v of versions) {
    const openAPIV3Schema = isObject(v['schema']) && isObject(v['schema']['openAPIV3Schema']) ? v['schema']['openAPIV3Schema'] : undefined;
    const check = typeof v['name'] === 'string' ? crdCheck(type.group, v['name'], type.kind, type.plural, type.namespaced, openAPIV3Schema) : undefined;
    if (check) checks.set(v['name'] as string, check);
  }
  s.setSchemaChecks(type.group, type.plural, checks);
  // objects stored before a schema change are read back pruned and defaulted by the new one (as the server decodes them), unchanged in storage: no new resourceVersion, no event
  const served = s.types.get(typeKey(type.group, type.plural));
  const storageCheck = typeof storage?.['name'] === 'string' ? checks.get(storage['name']) : undefined;
  if (served && storageCheck) {
    for (const [k, o] of served.objects) {
      // from the form stored, which an earlier schema change may have read differently
      const stored = s.storedForm.get(o) ?? o;
      const normal = storageCheck.normalise(render(served, { ...stored, metadata: o['metadata'] }, storage!['name'] as string));
      const next: Json = { ...normal, metadata: o['metadata'] };
      delete next['apiVersion'];
      delete next['kind'];
      if (sameJson(next, o)) continue;
      const kept: Json = { ...stored, metadata: o['metadata'] };
      if (sameJson(next, kept)) served.objects.set(k, kept);
      else {
        served.objects.set(k, next);
        s.storedForm.set(next, kept);
      }
    }
  }
  // Established and NamesAccepted, as the apiextensions controllers set them.
  const status = isObject(crd['status']) ? crd['status'] : {};
  if (Array.isArray(status['conditions']) && (status['conditions'] as Json[]).some((c) => c['type'] === 'Established')) return;
  const name = (crd['metadata'] as Json)['name'] as string;
  const next = structuredClone(crd);
  const time = s.now();
  next['status'] = {
    conditions: [
      { type: 'NamesAccepted', status: 'True', lastTransitionTime: time, reason: 'NoConflicts', message: 'no conflicts found' },
      { type: 'Established', status: 'True', lastTransitionTime: time, reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
    ],
    acceptedNames: spec['names'],
    storedVersions: storage ? [storage['name']] : [],
  };
  recordStatusWrite(s, st, crd, next);
  queueMicrotask(() => {
    const current = st.objects.get(objKey(undefined, name));
    if (current !== crd) return;
    s.store(st, objKey(undefined, name), next, crd, 'MODIFIED');
  });
}

function removeCRD(s: Storage, crd: Json): void {
  const type = typeFromCRD(crd);
  if (!type) return;
  const key = typeKey(type.group, type.plural);
  const st = s.types.get(key);
  if (!st || st.type.builtin) return;
  for (const [k, obj] of [...st.objects.entries()]) s.store(st, k, structuredClone(obj), obj, 'DELETED');
  s.removeType(key);
}
