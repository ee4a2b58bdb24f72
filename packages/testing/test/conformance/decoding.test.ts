/**
 * Conformance: duplicate keys in a JSON body, as kube-apiserver's decoder
 * reports them: a warning per repeated key by default (before the
 * unknown-field warnings), the decoder's 400 with `fieldValidation=Strict`
 * (repeats first, then unknown fields), nothing with `Ignore`; the last
 * value is the one kept. Creates and updates, built-in kinds and custom
 * resources (found by the differential fuzzer's widened generators); merge,
 * strategic merge and JSON patches, and applies in JSON and YAML (probed).
 * Then a custom resource's metadata of the wrong types, decoded into
 * ObjectMeta as the server does (found by the differential fuzzer, seed
 * 381842293: a label patched to a number).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, useBackend } from './backends.js';
import { raw } from './support.js';

interface Case {
  readonly what: string;
  readonly method: 'POST' | 'PUT' | 'PATCH';
  /** A patch's or an apply's content type (JSON otherwise). */
  readonly contentType?: string;
  /** `{ns}` is the test namespace; the ConfigMap `e` exists in it. */
  readonly path: string;
  readonly fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
  readonly body: string;
  readonly status: number;
  readonly message?: string;
  /** A part of the message (one that quotes the patched object, whose uid and times are the backend's). */
  readonly contains?: string;
  /** The whole Warning header (none when undefined). */
  readonly warning?: string;
}

const CM = '/api/v1/namespaces/{ns}/configmaps';
const WD = '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets';
const DP = '/apis/apps/v1/namespaces/{ns}/deployments';
const MERGE = 'application/merge-patch+json';
const STRATEGIC = 'application/strategic-merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';
const APPLY = 'application/apply-patch+yaml';
const w = (...texts: string[]): string => texts.map((t) => `299 - ${JSON.stringify(t)}`).join(', ');

const CASES: Case[] = [
  { what: 'Strict: repeats in metadata and data', method: 'POST', path: CM, fieldValidation: 'Strict', body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"a"},"data":{"x":"1","x":"2"}}', status: 400, message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.name", duplicate field "data.x"' },
  { what: 'Strict: a repeat, then an unknown field', method: 'POST', path: CM, fieldValidation: 'Strict', body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"1","x":"2"},"bogus":1}', status: 400, message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.x", unknown field "bogus"' },
  { what: 'Warn: warnings, repeats first', method: 'POST', path: CM, fieldValidation: 'Warn', body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"x":"1","x":"2"},"bogus":1}', status: 201, warning: w('duplicate field "data.x"', 'unknown field "bogus"') },
  { what: 'Ignore: nothing said', method: 'POST', path: CM, fieldValidation: 'Ignore', body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"x":"1","x":"2"}}', status: 201 },
  { what: 'by default: a warning for a repeated object', method: 'POST', path: CM, body: '{"metadata":{"name":"zz"},"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}', status: 201, warning: w('duplicate field "metadata"') },
  { what: 'Strict, custom resource: a repeated spec field', method: 'POST', path: WD, fieldValidation: 'Strict', body: '{"apiVersion":"conformance.kubeloop.dev/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"color":"x","color":"y"}}', status: 400, message: 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: duplicate field "spec.color"' },
  { what: 'Strict, custom resource: repeats in a list item, then its unknown field', method: 'POST', path: WD, fieldValidation: 'Strict', body: '{"apiVersion":"conformance.kubeloop.dev/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"color":"x","color":"y","ports":[{"name":"a","note":1,"name":"a"}]}}', status: 400, message: 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: duplicate field "spec.color", duplicate field "spec.ports[0].name", unknown field "spec.ports[0].note"' },
  { what: 'Warn, custom resource: the repeat before the unknown field', method: 'POST', path: WD, fieldValidation: 'Warn', body: '{"apiVersion":"conformance.kubeloop.dev/v1","kind":"Widget","metadata":{"name":"b"},"spec":{"color":"x","ports":[{"name":"a","note":1,"name":"a"}]}}', status: 201, warning: w('duplicate field "spec.ports[0].name"', 'unknown field "spec.ports[0].note"') },
  { what: 'Strict, custom resource: a repeated metadata', method: 'POST', path: WD, fieldValidation: 'Strict', body: '{"metadata":{"name":"zz"},"apiVersion":"conformance.kubeloop.dev/v1","kind":"Widget","metadata":{"name":"d"}}', status: 400, message: 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: duplicate field "metadata"' },
  { what: 'Strict, Deployment: repeats deep in the template', method: 'POST', path: DP, fieldValidation: 'Strict', body: '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"paused":true,"paused":false,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i","image":"j"}]}}}}', status: 400, message: 'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "spec.paused", duplicate field "spec.template.spec.containers[0].image"' },
  { what: 'Strict before AlreadyExists', method: 'POST', path: CM, fieldValidation: 'Strict', body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e"},"data":{"x":"1","x":"2"}}', status: 400, message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.x"' },
  { what: 'an update, Strict', method: 'PUT', path: `${CM}/e`, fieldValidation: 'Strict', body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e"},"data":{"x":"1","x":"2"}}', status: 400, message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.x"' },
  { what: 'an update, Warn', method: 'PUT', path: `${CM}/e`, fieldValidation: 'Warn', body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e"},"data":{"x":"1","x":"2"}}', status: 200, warning: w('duplicate field "data.x"') },
  // patches and applies (measured on kube-apiserver v1.37.2): a merge, strategic merge or JSON patch's repeat is the
  // decoder's warning, or with Strict the patch's 422 once the patched object decodes; an apply body (JSON or YAML, both
  // read as YAML) is told in go-yaml's words, its line, and is the 400 of a strict decoding
  { what: 'a merge patch, by default', method: 'PATCH', path: `${CM}/e`, contentType: MERGE, body: '{"data":{"x":"1","x":"2"}}', status: 200, warning: w('duplicate field "data.x"') },
  { what: 'a merge patch repeating an object, Warn', method: 'PATCH', path: `${CM}/e`, contentType: MERGE, fieldValidation: 'Warn', body: '{"data":{"x":"1"},"data":{"y":"2"}}', status: 200, warning: w('duplicate field "data"') },
  { what: 'a strategic merge patch, by default', method: 'PATCH', path: `${CM}/e`, contentType: STRATEGIC, body: '{"data":{"x":"1","x":"2"}}', status: 200, warning: w('duplicate field "data.x"') },
  { what: 'a JSON patch, by default', method: 'PATCH', path: `${CM}/e`, contentType: JSON_PATCH, body: '[{"op":"add","path":"/data/y","value":"1","value":"2"}]', status: 200, warning: w('json patch duplicate field "[0].value"') },
  { what: 'a merge patch\'s repeat, warned also when the write then fails', method: 'PATCH', path: `${CM}/e`, contentType: MERGE, body: '{"metadata":null,"metadata":{"deletionGracePeriodSeconds":7}}', status: 422, message: 'ConfigMap "e" is invalid: metadata.deletionGracePeriodSeconds: Invalid value: 7: field is immutable', warning: w('duplicate field "metadata"') },
  { what: 'a merge patch, Ignore', method: 'PATCH', path: `${CM}/e`, contentType: MERGE, fieldValidation: 'Ignore', body: '{"data":{"x":"1","x":"2"}}', status: 200 },
  { what: 'a merge patch, Strict', method: 'PATCH', path: `${CM}/e`, contentType: MERGE, fieldValidation: 'Strict', body: '{"data":{"x":"1","x":"2"}}', status: 422, contains: '"data\\":{\\"x\\":\\"2\\"}' },
  { what: 'a merge patch, Strict (the error)', method: 'PATCH', path: `${CM}/e`, contentType: MERGE, fieldValidation: 'Strict', body: '{"data":{"x":"1","x":"2"}}', status: 422, contains: '": strict decoding error: duplicate field "data.x"' },
  { what: 'a strategic merge patch, Strict', method: 'PATCH', path: `${CM}/e`, contentType: STRATEGIC, fieldValidation: 'Strict', body: '{"data":{"x":"1","x":"2"}}', status: 422, message: ' "" is invalid: patch: Invalid value: "map[data:map[x:2]]": strict decoding error: duplicate field "data.x"' },
  { what: 'a JSON patch, Strict', method: 'PATCH', path: `${CM}/e`, contentType: JSON_PATCH, fieldValidation: 'Strict', body: '[{"op":"add","path":"/data/y","value":"1","value":"2"}]', status: 422, contains: '": strict decoding error: json patch duplicate field "[0].value"' },
  { what: 'a merge patch of a custom resource, Strict', method: 'PATCH', path: `${WD}/e`, contentType: MERGE, fieldValidation: 'Strict', body: '{"spec":{"color":"x","color":"y"}}', status: 422, contains: '\\"spec\\":{\\"color\\":\\"y\\"}}": strict decoding error: duplicate field "spec.color"' },
  { what: 'an apply in YAML, by default', method: 'PATCH', path: `${CM}/e`, contentType: APPLY, body: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\ndata:\n  x: "1"\n  x: "2"\n', status: 200, warning: w('line 7: key "x" already set in map') },
  { what: 'an apply in JSON, by default', method: 'PATCH', path: `${CM}/e`, contentType: APPLY, body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e"},"data":{"x":"1","x":"2"}}', status: 200, warning: w('line 1: key "x" already set in map') },
  { what: 'an apply in YAML, Ignore', method: 'PATCH', path: `${CM}/e`, contentType: APPLY, fieldValidation: 'Ignore', body: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\ndata:\n  x: "1"\n  x: "2"\n', status: 200 },
  { what: 'an apply in YAML, Strict (go-yaml reads `y` as true)', method: 'PATCH', path: `${CM}/e`, contentType: APPLY, fieldValidation: 'Strict', body: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\n  labels:\n    a: b\n    a: c\ndata:\n  y: "1"\n  y: "2"\n', status: 400, message: 'error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key "a" already set in map\n  line 10: key true already set in map' },
  { what: 'an apply of a custom resource in YAML, by default', method: 'PATCH', path: `${WD}/e`, contentType: APPLY, body: 'apiVersion: conformance.kubeloop.dev/v1\nkind: Widget\nmetadata:\n  name: e\nspec:\n  color: x\n  color: "y"\n', status: 200, warning: w('line 7: key "color" already set in map') },
];

describe.each(BACKENDS)('duplicate keys in JSON bodies ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  beforeAll(async () => {
    await h().client().create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'e', namespace: h().namespace }, data: { x: '0' } });
    await h().client().create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', metadata: { name: 'e', namespace: h().namespace } });
  });

  it.each(CASES)('$what: $status', async (c) => {
    const query = { dryRun: 'All', ...(c.fieldValidation ? { fieldValidation: c.fieldValidation } : {}), ...(c.contentType === APPLY ? { fieldManager: 'dup', force: 'true' } : {}) };
    const res = await raw(h(), c.method, c.path.replace('{ns}', h().namespace), { query, body: c.body, ...(c.contentType ? { contentType: c.contentType } : {}) });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(c.status);
    if (c.message) expect(res.body['message']).toBe(c.message);
    if (c.contains) expect(String(res.body['message'])).toContain(c.contains);
    expect(res.warning).toBe(c.warning);
  });

  it('the last of two values is the one kept', async () => {
    const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/configmaps`, { query: { dryRun: 'All', fieldValidation: 'Ignore' }, body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"last"},"data":{"x":"1","x":"2"}}' });
    expect(res.body['data']).toEqual({ x: '2' });
  });
});

const WIDGET = '"apiVersion":"conformance.kubeloop.dev/v1","kind":"Widget"';
const OWNER = '{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":5}';

/**
 * A custom resource's metadata of the wrong types (measured on kube-apiserver v1.37.2): a create or an update is the
 * decoder's 400, a patch its 422 quoting the patched object (keys sorted, managed fields included) with the first bad
 * value in that order, an apply the typed converter's 500.
 */
const META_CASES: Case[] = [
  { what: 'a create with a label that is a number', method: 'POST', path: WD, body: `{${WIDGET},"metadata":{"name":"m","labels":{"app":2}}}`, status: 400, message: 'Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string' },
  { what: 'a create with finalizers that are numbers', method: 'POST', path: WD, body: `{${WIDGET},"metadata":{"name":"m","finalizers":[1]}}`, status: 400, message: 'Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta.finalizers of type string' },
  { what: 'an update with labels that are a list', method: 'PUT', path: `${WD}/e`, body: `{${WIDGET},"metadata":{"name":"e","labels":["a"]}}`, status: 400, message: 'Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal array into Go struct field ObjectMeta.labels of type map[string]string' },
  { what: 'a JSON patch setting a label to a number', method: 'PATCH', path: `${WD}/e`, contentType: JSON_PATCH, body: '[{"op":"add","path":"/metadata/labels","value":{"app":2}}]', status: 422, contains: '\\"labels\\":{\\"app\\":2},\\"managedFields\\":[' },
  { what: 'a JSON patch setting a label to a number (the error)', method: 'PATCH', path: `${WD}/e`, contentType: JSON_PATCH, body: '[{"op":"add","path":"/metadata/labels","value":{"app":2}}]', status: 422, contains: '": json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string' },
  { what: 'a merge patch: the first bad value in sorted order (annotations before labels)', method: 'PATCH', path: `${WD}/e`, contentType: MERGE, body: '{"metadata":{"labels":{"app":2},"annotations":{"x":true}}}', status: 422, contains: '": json: cannot unmarshal bool into Go struct field ObjectMeta.annotations of type string' },
  { what: 'a merge patch: finalizers a string', method: 'PATCH', path: `${WD}/e`, contentType: MERGE, body: '{"metadata":{"finalizers":"x"}}', status: 422, contains: '": json: cannot unmarshal string into Go struct field ObjectMeta.finalizers of type []string' },
  { what: 'a merge patch: generation a string', method: 'PATCH', path: `${WD}/e`, contentType: MERGE, body: '{"metadata":{"generation":"x"}}', status: 422, contains: '": json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64' },
  { what: 'a merge patch: the name a number', method: 'PATCH', path: `${WD}/e`, contentType: MERGE, body: '{"metadata":{"name":5}}', status: 422, contains: '": json: cannot unmarshal number into Go struct field ObjectMeta.name of type string' },
  { what: 'a merge patch: an owner\'s uid a number', method: 'PATCH', path: `${WD}/e`, contentType: MERGE, body: `{"metadata":{"ownerReferences":[${OWNER}]}}`, status: 422, contains: '": json: cannot unmarshal number into Go struct field OwnerReference.ownerReferences.uid of type types.UID' },
  { what: 'a ConfigMap\'s owner uid a number (the same Go type)', method: 'PATCH', path: `${CM}/e`, contentType: MERGE, body: `{"metadata":{"ownerReferences":[${OWNER}]}}`, status: 422, contains: '": json: cannot unmarshal number into Go struct field OwnerReference.metadata.ownerReferences.uid of type types.UID' },
  { what: 'a merge patch of a custom resource, Strict: the result quoted with its managed fields', method: 'PATCH', path: `${WD}/e`, contentType: MERGE, fieldValidation: 'Strict', body: '{"spec":{"color":"x","color":"y"}}', status: 422, contains: '\\"managedFields\\":[{' },
  { what: 'an apply with a label that is a number', method: 'PATCH', path: `${WD}/e`, contentType: APPLY, body: `{${WIDGET},"metadata":{"name":"e","labels":{"app":2}}}`, status: 500, message: 'failed to create typed patch object (/e; conformance.kubeloop.dev/v1, Kind=Widget): .metadata.labels.app: expected string, got &value.valueUnstructured{Value:2}' },
  { what: 'an apply with finalizers a string', method: 'PATCH', path: `${WD}/e`, contentType: APPLY, body: `{${WIDGET},"metadata":{"name":"e","finalizers":"x"}}`, status: 500, message: 'failed to create typed patch object (/e; conformance.kubeloop.dev/v1, Kind=Widget): .metadata.finalizers: expected list, got &{x}' },
];

describe.each(BACKENDS)('a custom resource\'s metadata decoded into ObjectMeta ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  beforeAll(async () => {
    await h().client().create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'e', namespace: h().namespace } });
    await h().client().create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', metadata: { name: 'e', namespace: h().namespace, labels: { tier: 'x' } } });
  });

  it.each(META_CASES)('$what: $status', async (c) => {
    const query = { dryRun: 'All', ...(c.fieldValidation ? { fieldValidation: c.fieldValidation } : {}), ...(c.contentType === APPLY ? { fieldManager: 'meta' } : {}) };
    let body = c.body;
    if (c.method === 'PUT') {
      const current = await raw(h(), 'GET', c.path.replace('{ns}', h().namespace));
      body = body.replace('"name":"e"', `"name":"e","resourceVersion":${JSON.stringify((current.body['metadata'] as { resourceVersion: string }).resourceVersion)}`);
    }
    const res = await raw(h(), c.method, c.path.replace('{ns}', h().namespace), { query, body, ...(c.contentType ? { contentType: c.contentType } : {}) });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(c.status);
    if (c.message) expect(res.body['message']).toBe(c.message);
    if (c.contains) expect(String(res.body['message'])).toContain(c.contains);
  });
});
