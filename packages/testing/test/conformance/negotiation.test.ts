/**
 * Conformance: how a read's Accept header is negotiated (JSON, YAML,
 * metadata-only and Table forms in meta.k8s.io v1 and v1beta1, the 406s in
 * the words of the built-in and the custom-resource handlers, a form that
 * does not fit the answer) and how query booleans are read (Go's reading:
 * `false` in any case and `0` are false, anything else true; a pointer
 * option such as `orphanDependents` or `force` counts as given whatever its
 * value). Found by the differential fuzzer's widened generators.
 */
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, useBackend } from './backends.js';
import { raw } from './support.js';

const CM = '/api/v1/namespaces/{ns}/configmaps';
const WD = '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets';
const POM = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const POML = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const ONLY = 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf';
const NOT_ACCEPTABLE = '406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf';

interface Case {
  readonly what: string;
  readonly path: string;
  readonly accept: string;
  readonly status: number;
  /** The answer's media type. */
  readonly type: string;
  /** The answer's kind and apiVersion (a success) or its message (a failure). */
  readonly kind?: string;
  readonly apiVersion?: string;
  readonly message?: string;
}

const CASES: Case[] = [
  { what: 'a list as metadata', path: CM, accept: POML, status: 200, type: 'application/json', kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1' },
  { what: 'an object as metadata in v1beta1', path: `${CM}/a`, accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1', status: 200, type: 'application/json', kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1beta1' },
  { what: 'a list as one object\'s metadata (built-in)', path: CM, accept: POM, status: 406, type: 'application/json', message: 'you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)' },
  { what: 'a list as one object\'s metadata (custom resource)', path: WD, accept: POM, status: 406, type: 'application/json', message: 'you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)' },
  { what: 'an object as a list\'s metadata (built-in)', path: `${CM}/a`, accept: POML, status: 406, type: 'application/json', message: 'you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)' },
  { what: 'an object as a list\'s metadata (custom resource: the handler\'s 500)', path: `${WD}/w`, accept: POML, status: 500, type: 'application/json', message: 'content is not a list' },
  { what: 'a missing object as a list\'s metadata (404 first)', path: `${WD}/missing`, accept: POML, status: 404, type: 'application/json', message: 'widgets.conformance.kubeloop.dev "missing" not found' },
  { what: 'metadata of another group', path: `${CM}/a`, accept: 'application/json;as=PartialObjectMetadata;g=example.com;v=v1', status: 406, type: 'application/json', message: ONLY },
  { what: 'a Table of an unknown version', path: CM, accept: 'application/json;as=Table;g=meta.k8s.io;v=v2', status: 406, type: 'application/json', message: ONLY },
  { what: 'an unknown form', path: `${WD}/missing`, accept: 'application/json;as=Foo;g=meta.k8s.io;v=v1', status: 406, type: 'application/json', message: ONLY },
  { what: 'an unknown form, then JSON', path: `${CM}/a`, accept: 'application/json;as=Foo;g=meta.k8s.io;v=v1, application/json', status: 200, type: 'application/json', kind: 'ConfigMap', apiVersion: 'v1' },
  { what: 'text/plain of a built-in object', path: `${CM}/a`, accept: 'text/plain', status: 406, type: 'application/json', message: NOT_ACCEPTABLE },
  { what: 'text/plain of a built-in list (watch streams offered too)', path: CM, accept: 'text/plain', status: 406, type: 'application/json', message: `${NOT_ACCEPTABLE}, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch` },
  { what: 'text/plain of a custom resource', path: `${WD}/w`, accept: 'text/plain', status: 406, type: 'application/json', message: ONLY },
  { what: 'YAML', path: `${CM}/a`, accept: 'application/yaml', status: 200, type: 'application/yaml', kind: 'ConfigMap', apiVersion: 'v1' },
  { what: 'YAML preferred by q', path: WD, accept: 'application/json;q=0.5, application/yaml', status: 200, type: 'application/yaml', kind: 'WidgetList', apiVersion: 'conformance.kubeloop.dev/v1' },
  { what: 'a YAML 404', path: `${WD}/missing`, accept: 'application/yaml', status: 404, type: 'application/yaml', message: 'widgets.conformance.kubeloop.dev "missing" not found' },
];

/** Go's reading of a boolean query value, and whether a pointer option is given. */
const BOOLEANS = ['true', 'True', 'TRUE', '1', 't', 'yes', 'no', '', 'false', 'False', 'FALSE', '0'] as const;
const goTrue = (v: string): boolean => v !== '0' && v.toLowerCase() !== 'false';

describe.each(BACKENDS)('content negotiation and query booleans ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  beforeAll(async () => {
    await h().client().create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: h().namespace }, data: { x: '1' } });
    await h().client().create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', metadata: { name: 'w', namespace: h().namespace } });
  });

  it.each(CASES)('$what: $status $type', async (c) => {
    const res = await h().client().transport.request({ method: 'GET', path: c.path.replace('{ns}', h().namespace), accept: c.accept });
    const type = String(res.headers['content-type'] ?? '').split(';')[0];
    const body = (type === 'application/yaml' ? parseYaml(res.body) : JSON.parse(res.body)) as Record<string, unknown>;
    expect({ status: res.status, type }).toEqual({ status: c.status, type: c.type });
    if (c.kind) expect({ kind: body['kind'], apiVersion: body['apiVersion'] }).toEqual({ kind: c.kind, apiVersion: c.apiVersion });
    if (c.message) expect(body['message']).toBe(c.message);
  });

  it.each(BOOLEANS)('orphanDependents=%j beside a propagationPolicy is refused whatever its value (a pointer, given)', async (v) => {
    const res = await raw(h(), 'DELETE', `/api/v1/namespaces/${h().namespace}/configmaps/missing`, { query: { orphanDependents: v, propagationPolicy: 'Orphan' } });
    expect(res.status).toBe(422);
    expect(res.body['message']).toBe('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set');
  });

  it.each(['true', 'false', 'yes', '0'])('force=%j on a merge patch is refused before the object is read', async (v) => {
    const res = await raw(h(), 'PATCH', `/api/v1/namespaces/${h().namespace}/configmaps/missing`, { query: { force: v }, body: { data: { y: '1' } }, contentType: 'application/merge-patch+json' });
    expect(res.status).toBe(422);
    expect(res.body['message']).toBe('PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch');
  });

  it.each(['True', 'yes', 'no', 'False', '0'])('an apply with force=%j conflicts or not as Go reads it', async (v) => {
    const name = h().name('force');
    const path = `/api/v1/namespaces/${h().namespace}/configmaps/${name}`;
    const apply = (manager: string, force?: string): ReturnType<typeof raw> =>
      raw(h(), 'PATCH', path, { query: { fieldManager: manager, ...(force === undefined ? {} : { force }) }, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { x: manager } }, contentType: 'application/apply-patch+yaml' });
    expect((await apply('alpha')).status).toBe(201);
    expect((await apply('beta', v)).status).toBe(goTrue(v) ? 200 : 409);
  });

  it.each(['True', 'yes', 'False'])('a watch with sendInitialEvents=true and allowWatchBookmarks=%j ends its initial events with a bookmark as Go reads it', async (v) => {
    const res = await h().client().transport.stream({
      method: 'GET',
      path: `/api/v1/namespaces/${h().namespace}/configmaps`,
      query: { watch: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: v, fieldSelector: 'metadata.name=a', timeoutSeconds: '2' },
    });
    let text = '';
    for await (const chunk of res) text += String(chunk);
    const types = text.split('\n').filter((l) => l.trim() !== '').map((l) => (JSON.parse(l) as { type: string }).type);
    if (!goTrue(v)) expect(types).toEqual(['ADDED']);
    else {
      // the initial events end with a bookmark; a server may add the watch's periodic one before the 2 s are up
      // when other writes moved the resourceVersion meanwhile (files side by side), never another kind of event
      expect(types.slice(0, 2)).toEqual(['ADDED', 'BOOKMARK']);
      expect(types.slice(2).filter((t) => t !== 'BOOKMARK')).toEqual([]);
    }
  });

  it('a watch asked for by watch=True (Go reads any true) streams events', async () => {
    const res = await h().client().transport.stream({ method: 'GET', path: `/api/v1/namespaces/${h().namespace}/configmaps`, query: { watch: 'True', resourceVersion: '0', fieldSelector: 'metadata.name=a', timeoutSeconds: '1' } });
    let text = '';
    for await (const chunk of res) text += String(chunk);
    expect(text.split('\n').filter((l) => l.trim() !== '').map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(['ADDED']);
  });
});
