/**
 * Conformance: duplicate keys in a JSON body, as kube-apiserver's decoder
 * reports them: a warning per repeated key by default (before the
 * unknown-field warnings), the decoder's 400 with `fieldValidation=Strict`
 * (repeats first, then unknown fields), nothing with `Ignore`; the last
 * value is the one kept. Creates and updates, built-in kinds and custom
 * resources. Found by the differential fuzzer's widened generators.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, useBackend } from './backends.js';
import { raw } from './support.js';

interface Case {
  readonly what: string;
  readonly method: 'POST' | 'PUT';
  /** `{ns}` is the test namespace; the ConfigMap `e` exists in it. */
  readonly path: string;
  readonly fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
  readonly body: string;
  readonly status: number;
  readonly message?: string;
  /** The whole Warning header (none when undefined). */
  readonly warning?: string;
}

const CM = '/api/v1/namespaces/{ns}/configmaps';
const WD = '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets';
const DP = '/apis/apps/v1/namespaces/{ns}/deployments';
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
];

describe.each(BACKENDS)('duplicate keys in JSON bodies ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  beforeAll(async () => {
    await h().client().create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'e', namespace: h().namespace } });
  });

  it.each(CASES)('$what: $status', async (c) => {
    const res = await raw(h(), c.method, c.path.replace('{ns}', h().namespace), { query: { dryRun: 'All', ...(c.fieldValidation ? { fieldValidation: c.fieldValidation } : {}) }, body: c.body });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(c.status);
    if (c.message) expect(res.body['message']).toBe(c.message);
    expect(res.warning).toBe(c.warning);
  });

  it('the last of two values is the one kept', async () => {
    const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/configmaps`, { query: { dryRun: 'All', fieldValidation: 'Ignore' }, body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"last"},"data":{"x":"1","x":"2"}}' });
    expect(res.body['data']).toEqual({ x: '2' });
  });
});
