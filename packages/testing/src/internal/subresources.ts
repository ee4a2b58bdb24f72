/**
 * Subresources beyond status (which the write path handles with its
 * scope): `scale` as an autoscaling/v1 Scale read from and written to the
 * replicas paths of the kind (built-in workloads, CRDs that declare one).
 */
import { isObject } from './json.js';
import type { Json } from './json.js';
import { existing } from './list.js';
import { jsonPatch, mergePatch } from './patch-formats.js';
import { buffered, dryRun, fieldManager, parseJsonBody } from './request-info.js';
import type { BufferedResponse, CoreRequest, Target } from './request-info.js';
import { badRequest, conflict, invalid, MODIFIED } from './status.js';
import { gr } from './storage.js';
import type { Storage } from './storage.js';
import { commit } from './write.js';

function scaleOf(t: Target, obj: Json): Json {
  const spec = t.st.type.scale!;
  const read = (p: readonly string[]): unknown => p.reduce<unknown>((cur, k) => (isObject(cur) ? cur[k] : undefined), obj);
  const selector = spec.labelSelectorPath ? read(spec.labelSelectorPath) : undefined;
  const m = obj['metadata'] as Json;
  let selectorText: string | undefined;
  if (typeof selector === 'string') selectorText = selector;
  else if (isObject(selector) && isObject(selector['matchLabels'])) {
    selectorText = Object.entries(selector['matchLabels']).map(([k, v]) => `${k}=${String(v)}`).join(',');
  }
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: m['name'], ...(m['namespace'] ? { namespace: m['namespace'] } : {}), uid: m['uid'], resourceVersion: m['resourceVersion'], creationTimestamp: m['creationTimestamp'] },
    spec: { replicas: (read(spec.specReplicasPath) as number | undefined) ?? 0 },
    status: { replicas: (read(spec.statusReplicasPath) as number | undefined) ?? 0, ...(selectorText ? { selector: selectorText } : {}) },
  };
}

export function getScale(t: Target): BufferedResponse {
  return buffered(200, scaleOf(t, existing(t)));
}

function setReplicas(s: Storage, t: Target, req: CoreRequest, scale: Json): BufferedResponse {
  const old = existing(t);
  const sm = isObject(scale['metadata']) ? scale['metadata'] : {};
  if (sm['resourceVersion'] !== undefined && sm['resourceVersion'] !== '' && sm['resourceVersion'] !== (old['metadata'] as Json)['resourceVersion']) {
    throw conflict(gr(t.st), t.name!, MODIFIED);
  }
  const replicas = isObject(scale['spec']) ? scale['spec']['replicas'] : undefined;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
    throw invalid('autoscaling', 'Scale', t.name!, [{ type: 'FieldValueInvalid', field: 'spec.replicas', value: replicas ?? null, detail: 'must be greater than or equal to 0' }]);
  }
  const next = structuredClone(old);
  const path = t.st.type.scale!.specReplicasPath;
  let cur = next;
  for (const k of path.slice(0, -1)) {
    if (!isObject(cur[k])) cur[k] = {};
    cur = cur[k] as Json;
  }
  cur[path[path.length - 1]!] = replicas;
  const res = commit(s, t, old, next, 'main', undefined, fieldManager(req, false), dryRun(req), undefined);
  return buffered(res.status, scaleOf(t, JSON.parse(res.body) as Json));
}

export function updateScale(s: Storage, t: Target, req: CoreRequest): BufferedResponse {
  return setReplicas(s, t, req, parseJsonBody(req.body, req.contentType));
}

export function patchScale(s: Storage, t: Target, req: CoreRequest, contentType: string): BufferedResponse {
  const current = scaleOf(t, existing(t));
  let body: unknown;
  try {
    body = JSON.parse(req.body ?? '');
  } catch (cause) {
    throw badRequest(`error decoding patch: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  const patched = contentType === 'application/json-patch+json' ? jsonPatch(current, body) : (mergePatch(current, body) as Json);
  return setReplicas(s, t, req, patched);
}
