/**
 * Tables, as kube-apiserver's default table convertor writes them for a
 * kind without printer columns (`kubectl get` asks with
 * `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`): a Name and an
 * Age column, one row per object, the row's object as metadata
 * (`includeObject=Metadata`, the default), whole (`Object`) or left out
 * (`None`). Lists and single objects alike.
 */
import type { Json } from './json.js';
import type { CoreRequest } from './request-info.js';
import { badRequest } from './status.js';
import { partial } from './storage.js';

const NAME_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
const AGE_DESCRIPTION =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

/** A duration as the API server's printers write an age (Go's `duration.HumanDuration`). */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(hours / (24 * 365));
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

/** What the rows carry of each object: `includeObject`, Metadata unless asked; another value is 400. */
function includeObject(req: CoreRequest): 'None' | 'Metadata' | 'Object' {
  const v = req.query.get('includeObject') ?? '';
  if (v === '' || v === 'Metadata') return 'Metadata';
  if (v === 'None' || v === 'Object') return v;
  throw badRequest(`includeObject: Unsupported value: ${JSON.stringify(v)}: supported values: "Metadata", "None", "Object"`);
}

/** A Table of `items` (rendered objects) at the server's time `now`. */
export function table(items: readonly Json[], listMeta: Json, req: CoreRequest, now: string): Json {
  const include = includeObject(req);
  const at = Date.parse(now);
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: [
      { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 },
      { name: 'Age', type: 'date', format: '', description: AGE_DESCRIPTION, priority: 0 },
    ],
    rows: items.map((i) => {
      const m = i['metadata'] as Json;
      const created = typeof m['creationTimestamp'] === 'string' ? Date.parse(m['creationTimestamp']) : NaN;
      const age = Number.isNaN(created) ? '<unknown>' : humanDuration(at - created);
      return { cells: [m['name'], age], object: include === 'None' ? null : include === 'Object' ? i : partial(i) };
    }),
  };
}
