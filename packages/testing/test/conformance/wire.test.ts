/**
 * Conformance: built-in objects as the API server decodes them into its Go
 * types, from its OpenAPI schemas: JSON types checked (400 with the
 * decoder's message), unknown fields dropped with a warning or refused
 * (fieldValidation), values written in the server's normal forms
 * (quantities, timestamps, base64), on envtest and on the fake.
 */
import { describe, expect, it } from 'vitest';
import { stringifyJson } from '@kubeloop/scheme';
import { BACKENDS, useBackend } from './backends.js';
import { raw } from './support.js';

type Method = 'POST' | 'PUT' | 'PATCH';
interface Case {
  readonly what: string;
  readonly method: Method;
  /** `{ns}` is the test namespace; `{name}` a fresh name (also in the body). */
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body: unknown;
  readonly contentType?: string;
  readonly status: number;
  readonly reason?: string;
  /** The whole message, `{name}` and `{ns}` replaced. */
  readonly message?: string;
  /** Fields of the answer (dotted paths) and their values. */
  readonly fields?: Record<string, unknown>;
  readonly warning?: string;
}

const CM = '/api/v1/namespaces/{ns}/configmaps';
const DRY = { dryRun: 'All' };
const pod = (resources: unknown, extra: Record<string, unknown> = {}): unknown => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: '{name}' }, spec: { containers: [{ name: 'c', image: 'i', resources, ...extra }] } });

const CASES: Case[] = [
  { what: 'a Secret whose data is not base64', method: 'POST', path: '/api/v1/namespaces/{ns}/secrets', body: { metadata: { name: '{name}' }, data: { a: 'not base64!' } }, status: 400, reason: 'BadRequest', message: 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3' },
  { what: 'a Secret whose data lacks padding', method: 'POST', path: '/api/v1/namespaces/{ns}/secrets', body: { metadata: { name: '{name}' }, data: { a: 'YQ=' } }, status: 400, reason: 'BadRequest', message: 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3' },
  { what: 'a Secret whose data has a line break (skipped)', method: 'POST', path: '/api/v1/namespaces/{ns}/secrets', query: DRY, body: { metadata: { name: '{name}' }, data: { a: 'YW\nJj' } }, status: 201, fields: { 'data.a': 'YWJj' } },
  { what: 'a number in a ConfigMap\'s data', method: 'POST', path: CM, body: { metadata: { name: '{name}' }, data: { a: 1 } }, status: 400, reason: 'BadRequest', message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string' },
  { what: 'a number in a label', method: 'POST', path: CM, body: { metadata: { name: '{name}', labels: { a: 1 } } }, status: 400, reason: 'BadRequest', message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string' },
  { what: 'a string for replicas', method: 'POST', path: '/apis/apps/v1/namespaces/{ns}/deployments', body: { metadata: { name: '{name}' }, spec: { replicas: '3' } }, status: 400, reason: 'BadRequest', message: 'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32' },
  { what: 'a fraction for an int-or-string', method: 'POST', path: '/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets', body: { metadata: { name: '{name}' }, spec: { minAvailable: 1.5 } }, status: 400, reason: 'BadRequest', message: 'PodDisruptionBudget in version "v1" cannot be handled as a PodDisruptionBudget: json: cannot unmarshal number 1.5 into Go struct field PodDisruptionBudgetSpec.spec.minAvailable of type int32' },
  { what: 'a MicroTime with milliseconds', method: 'POST', path: '/apis/coordination.k8s.io/v1/namespaces/{ns}/leases', body: { metadata: { name: '{name}' }, spec: { acquireTime: '2024-01-01T00:00:00.123Z' } }, status: 400, reason: 'BadRequest', message: 'Lease in version "v1" cannot be handled as a Lease: parsing time "2024-01-01T00:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"' },
  { what: 'a MicroTime in another zone (written in UTC)', method: 'POST', path: '/apis/coordination.k8s.io/v1/namespaces/{ns}/leases', query: DRY, body: { metadata: { name: '{name}' }, spec: { acquireTime: '2024-01-01T00:00:00.123456+02:00' } }, status: 201, fields: { 'spec.acquireTime': '2023-12-31T22:00:00.123456Z' } },
  { what: 'a Time with milliseconds and a zone (written to the second, in UTC)', method: 'POST', path: '/api/v1/namespaces/{ns}/events', query: DRY, body: { metadata: { name: '{name}' }, involvedObject: { name: 'x', namespace: '{ns}' }, firstTimestamp: '2024-01-01T00:00:00.123Z', lastTimestamp: '2024-01-01T02:00:00+02:00' }, status: 201, fields: { firstTimestamp: '2024-01-01T00:00:00Z', lastTimestamp: '2024-01-01T00:00:00Z' } },
  { what: 'a month out of range', method: 'POST', path: '/api/v1/namespaces/{ns}/events', query: DRY, body: { metadata: { name: '{name}' }, involvedObject: { name: 'x', namespace: '{ns}' }, firstTimestamp: '2024-13-01T00:00:00Z' }, status: 400, reason: 'BadRequest', message: 'Event in version "v1" cannot be handled as a Event: parsing time "2024-13-01T00:00:00Z": month out of range' },
  { what: 'a pod template\'s serviceAccountName (written to the deprecated serviceAccount too)', method: 'POST', path: '/apis/apps/v1/namespaces/{ns}/deployments', query: DRY, body: { metadata: { name: '{name}' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { serviceAccountName: 'sa', containers: [{ name: 'c', image: 'i' }] } } } }, status: 201, fields: { 'spec.template.spec.serviceAccountName': 'sa', 'spec.template.spec.serviceAccount': 'sa' } },
  { what: 'a pod template\'s deprecated serviceAccount alone (read as serviceAccountName)', method: 'POST', path: '/apis/apps/v1/namespaces/{ns}/deployments', query: DRY, body: { metadata: { name: '{name}' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { serviceAccount: 'old', containers: [{ name: 'c', image: 'i' }] } } } }, status: 201, fields: { 'spec.template.spec.serviceAccountName': 'old', 'spec.template.spec.serviceAccount': 'old' } },
  { what: 'a pod template with both service account fields (serviceAccountName wins)', method: 'POST', path: '/apis/apps/v1/namespaces/{ns}/deployments', query: DRY, body: { metadata: { name: '{name}' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { serviceAccountName: 'new', serviceAccount: 'old', containers: [{ name: 'c', image: 'i' }] } } } }, status: 201, fields: { 'spec.template.spec.serviceAccountName': 'new', 'spec.template.spec.serviceAccount': 'new' } },
  { what: 'quantities in their canonical forms', method: 'POST', path: '/api/v1/namespaces/{ns}/pods', query: DRY, body: pod({ requests: { cpu: 0.25, memory: '1024Mi' }, limits: { cpu: '1000m', memory: '1.5Gi' } }), status: 201, fields: { 'spec.containers.0.resources.requests': { cpu: '250m', memory: '1Gi' }, 'spec.containers.0.resources.limits': { cpu: '1', memory: '1536Mi' } } },
  { what: 'a quantity that is not one', method: 'POST', path: '/api/v1/namespaces/{ns}/pods', query: DRY, body: pod({ requests: { cpu: '1x' } }), status: 400, reason: 'BadRequest', message: 'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'' },
  { what: 'unknown fields (dropped, with a warning)', method: 'POST', path: CM, query: DRY, body: { metadata: { name: '{name}', foo: 'x' }, data: { a: '1' }, bar: { x: 1 } }, status: 201, fields: { bar: undefined, 'metadata.foo': undefined, 'data.a': '1' }, warning: '299 - "unknown field \\"metadata.foo\\"", 299 - "unknown field \\"bar\\""' },
  { what: 'an unknown field in a list item', method: 'POST', path: '/api/v1/namespaces/{ns}/pods', query: DRY, body: pod({}, { foo: 1 }), status: 201, fields: { 'spec.containers.0.foo': undefined }, warning: '299 - "unknown field \\"spec.containers[0].foo\\""' },
  { what: 'unknown fields with fieldValidation=Strict', method: 'POST', path: CM, query: { fieldValidation: 'Strict' }, body: { metadata: { name: '{name}' }, foo: 'x', bar: 1 }, status: 400, reason: 'BadRequest', message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo", unknown field "bar"' },
  { what: 'unknown fields with fieldValidation=Ignore', method: 'POST', path: CM, query: { fieldValidation: 'Ignore', dryRun: 'All' }, body: { metadata: { name: '{name}' }, foo: 'x' }, status: 201, fields: { foo: undefined } },
  { what: 'an unknown fieldValidation', method: 'POST', path: CM, query: { fieldValidation: 'Bogus' }, body: { metadata: { name: '{name}' } }, status: 422, reason: 'Invalid', message: 'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"' },
  { what: 'a merge patch that leaves a number in data', method: 'PATCH', path: `${CM}/a`, contentType: 'application/merge-patch+json', body: { data: { a: 1 } }, status: 422, reason: 'Invalid' },
  // a strategic merge patch's result goes through the unstructured converter: the patch itself is quoted in Go's notation, with the converter's words
  { what: 'a strategic merge patch that leaves bad base64 in a Secret', method: 'PATCH', path: '/api/v1/namespaces/{ns}/secrets/s', query: DRY, contentType: 'application/strategic-merge-patch+json', body: { data: { x: 'not base64!', z: null }, metadata: { labels: { c: 'd', e: '' }, annotations: { 'k/x': 'v w' }, finalizers: ['a/b', 'c'] }, n: 1.5, m: 1e21, k: 100000000, big: 12345678901234567890n, small: -0.000001 }, status: 422, reason: 'Invalid', message: ' "" is invalid: patch: Invalid value: "map[big:1.2345678901234567e+19 data:map[x:not base64! z:<nil>] k:100000000 m:1e+21 metadata:map[annotations:map[k/x:v w] finalizers:[a/b c] labels:map[c:d e:]] n:1.5 small:-1e-06]": error decoding from json: illegal base64 data at input byte 3' },
  { what: 'a strategic merge patch that leaves an integer in data', method: 'PATCH', path: `${CM}/a`, query: DRY, contentType: 'application/strategic-merge-patch+json', body: { data: { a: 1 } }, status: 422, reason: 'Invalid', message: ' "" is invalid: patch: Invalid value: "map[data:map[a:1]]": cannot convert int64 to string' },
  { what: 'a strategic merge patch that leaves fractions in data', method: 'PATCH', path: `${CM}/a`, query: DRY, contentType: 'application/strategic-merge-patch+json', body: { data: { a: 1.5e-7, c: 123456.789, d: 1000000.5 } }, status: 422, reason: 'Invalid', message: ' "" is invalid: patch: Invalid value: "map[data:map[a:1.5e-07 c:123456.789 d:1.0000005e+06]]": unrecognized type: string' },
  { what: 'a strategic merge patch that leaves a string for data', method: 'PATCH', path: `${CM}/a`, query: DRY, contentType: 'application/strategic-merge-patch+json', body: { data: 'x' }, status: 422, reason: 'Invalid', message: ' "" is invalid: patch: Invalid value: "map[data:x]": cannot restore map from string' },
  { what: 'a strategic merge patch that leaves a fraction for replicas', method: 'PATCH', path: '/apis/apps/v1/namespaces/{ns}/deployments/d', query: DRY, contentType: 'application/strategic-merge-patch+json', body: { spec: { replicas: 1.5 } }, status: 422, reason: 'Invalid', message: ' "" is invalid: patch: Invalid value: "map[spec:map[replicas:1.5]]": cannot convert float64 to int32' },
  { what: 'a strategic merge patch that leaves a string for replicas', method: 'PATCH', path: '/apis/apps/v1/namespaces/{ns}/deployments/d', query: DRY, contentType: 'application/strategic-merge-patch+json', body: { spec: { replicas: '3' } }, status: 422, reason: 'Invalid', message: ' "" is invalid: patch: Invalid value: "map[spec:map[replicas:3]]": unrecognized type: int32' },
  { what: 'a strategic merge patch that leaves an integer past int32 for replicas (the converter wraps it)', method: 'PATCH', path: '/apis/apps/v1/namespaces/{ns}/deployments/d', query: DRY, contentType: 'application/strategic-merge-patch+json', body: { spec: { replicas: 4294967298 } }, status: 200, fields: { 'spec.replicas': 2 } },
  { what: 'a strategic merge patch that leaves an integer past int64 for replicas (a float64 to the converter: 0)', method: 'PATCH', path: '/apis/apps/v1/namespaces/{ns}/deployments/d', query: DRY, contentType: 'application/strategic-merge-patch+json', body: { spec: { replicas: 18446744073709551618n } }, status: 200, fields: { 'spec.replicas': 0 } },
  { what: 'a merge patch that leaves an integer past int32 for replicas', method: 'PATCH', path: '/apis/apps/v1/namespaces/{ns}/deployments/d', query: DRY, contentType: 'application/merge-patch+json', body: { spec: { replicas: 4294967298 } }, status: 422, reason: 'Invalid' },
  { what: 'a merge patch with an unknown field (dropped, with a warning)', method: 'PATCH', path: `${CM}/a`, query: DRY, contentType: 'application/merge-patch+json', body: { foo: 1 }, status: 200, fields: { foo: undefined }, warning: '299 - "unknown field \\"foo\\""' },
  { what: 'an apply with an unknown field', method: 'PATCH', path: `${CM}/a`, query: { fieldManager: 'm' }, contentType: 'application/apply-patch+yaml', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, foo: 1 }, status: 500, message: 'failed to create typed patch object (/a; /v1, Kind=ConfigMap): .foo: field not declared in schema' },
];

function at(obj: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((cur, k) => (typeof cur === 'object' && cur !== null ? (cur as Record<string, unknown>)[k] : undefined), obj);
}

describe.each(BACKENDS)('wire forms of built-in kinds ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it.each(CASES)('$what: $status', async (c) => {
    const ns = h().namespace;
    const name = h().name('w');
    if (c.path.includes('/configmaps/a')) {
      await raw(h(), 'POST', CM.replace('{ns}', ns), { body: { metadata: { name: 'a' }, data: { a: '1' } } });
    }
    if (c.path.includes('/secrets/s')) {
      await raw(h(), 'POST', `/api/v1/namespaces/${ns}/secrets`, { body: { metadata: { name: 's', labels: { a: 'b' } }, data: { y: 'YQ==' } } });
    }
    if (c.path.includes('/deployments/d')) {
      await raw(h(), 'POST', `/apis/apps/v1/namespaces/${ns}/deployments`, { body: { metadata: { name: 'd' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } } } });
    }
    const fill = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v).replaceAll('{name}', name).replaceAll('{ns}', ns)));
    // the body as text: it may hold a bigint (an integer past 2^53, written exactly)
    const fillBody = (v: unknown): string | undefined => (v === undefined ? undefined : stringifyJson(v).replaceAll('{name}', name).replaceAll('{ns}', ns));
    const res = await raw(h(), c.method, c.path.replace('{ns}', ns), {
      ...(c.query ? { query: c.query } : {}),
      body: fillBody(c.body),
      ...(c.contentType ? { contentType: c.contentType } : {}),
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 400)).toBe(c.status);
    if (c.status >= 400) {
      expect(res.body['kind']).toBe('Status');
      expect(res.body['reason']).toBe(c.reason);
      if (c.message) expect(res.body['message']).toBe(fill(c.message));
    }
    for (const [path, value] of Object.entries(c.fields ?? {})) expect(at(res.body, path), path).toEqual(fill(value));
    expect(res.warning).toBe(c.warning);
  });
});
