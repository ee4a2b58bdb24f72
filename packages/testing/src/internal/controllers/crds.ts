/**
 * The apiextensions controllers, as far as a test needs them: a stored
 * CustomResourceDefinition's kind is served (with schema validation per
 * version) and the CRD becomes Established and NamesAccepted; a deleted
 * CRD's objects are deleted and its kind is no longer served.
 */
import { isObject, objKey } from '../json.js';
import type { Json } from '../json.js';
import { typeFromCRD, typeKey } from '../resources.js';
import { crdCheck } from '../schema-check.js';
import type { SchemaCheck } from '../schema-check.js';
import type { Storage, StoredType } from '../storage.js';

const CRD_TYPE = 'apiextensions.k8s.io/customresourcedefinitions';

/** Serve what stored CRDs define, from every change of a CRD on. */
export function runCRDController(s: Storage): void {
  s.onChange((change, st) => {
    if (change.typeKey !== CRD_TYPE) return;
    if (change.type === 'DELETED') removeCRD(s, change.object);
    else establishCRD(s, st, change.object);
  });
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
