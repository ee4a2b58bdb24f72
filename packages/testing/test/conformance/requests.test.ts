/**
 * Conformance: requests the API server answers in its own particular way
 * (status code, reason and message), found by sending the same raw request
 * to both backends.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, useBackend } from './backends.js';
import { raw } from './support.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
interface Case {
  readonly what: string;
  readonly method: Method;
  /** `{ns}` is the test namespace; the object `a` exists in it. */
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly status: number;
  readonly reason?: string | undefined;
  /** The start of the message. */
  readonly message?: string;
  /** Text the `Warning` header must hold. */
  readonly warning?: string;
}

const CASES: Case[] = [
  { what: 'a create with a resourceVersion', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rvset', resourceVersion: '5' } }, status: 500, message: 'resourceVersion should not be set on objects to be created' },
  { what: 'a create without kind and apiVersion (the path names them)', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', body: { metadata: { name: 'nokind' } }, status: 201 },
  { what: 'an update without kind and apiVersion', method: 'PUT', path: '/api/v1/namespaces/{ns}/configmaps/a', body: { metadata: { name: 'a' }, data: { x: '2' } }, status: 200 },
  { what: 'an empty label value', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'empty-label', labels: { a: '' } } }, status: 201 },
  { what: 'a merge patch that renames', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: { metadata: { name: 'b' } }, contentType: 'application/merge-patch+json', status: 400, reason: 'BadRequest', message: 'the name of the object (b) does not match the name on the URL (a)' },
  { what: 'a merge patch of the uid', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: { metadata: { uid: '00000000-0000-0000-0000-000000000000' } }, contentType: 'application/merge-patch+json', status: 422, reason: 'Invalid', message: 'ConfigMap "a" is invalid: metadata.uid: Invalid value: "00000000-0000-0000-0000-000000000000": field is immutable' },
  { what: 'a merge patch of creationTimestamp (ignored)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: { metadata: { creationTimestamp: '2001-01-01T00:00:00Z' } }, contentType: 'application/merge-patch+json', status: 200 },
  { what: 'a JSON patch that is not a list', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: { op: 'add' }, contentType: 'application/json-patch+json', status: 400, reason: 'BadRequest', message: 'error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp' },
  { what: 'a JSON patch with an unknown op', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: [{ op: 'frobnicate', path: '/data/x' }], contentType: 'application/json-patch+json', status: 422, reason: 'Invalid', message: 'the server rejected our request due to an error in our request' },
  { what: 'limit=0 lists everything', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { limit: '0' }, status: 200 },
  { what: 'a watch from a malformed resourceVersion', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { watch: 'true', resourceVersion: 'abc', timeoutSeconds: '1' }, status: 500, message: 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax' },
  { what: 'a list from a malformed resourceVersion', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { resourceVersion: 'abc' }, status: 400, reason: 'BadRequest', message: 'invalid resource version: resourceVersion: Invalid value: "abc"' },
  { what: 'an apply of another kind', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { fieldManager: 'x' }, body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'a' } }, contentType: 'application/apply-patch+yaml', status: 400, reason: 'BadRequest', message: 'invalid object type: /v1, Kind=Secret' },
  { what: 'a forced apply that creates', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/forced', query: { fieldManager: 'x', force: 'true' }, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'forced' }, data: { y: '1' } }, contentType: 'application/apply-patch+yaml', status: 201 },
  { what: 'a status apply of a missing object', method: 'PATCH', path: '/apis/apps/v1/namespaces/{ns}/deployments/nope/status', query: { fieldManager: 'x' }, body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'nope' }, status: { replicas: 1 } }, contentType: 'application/apply-patch+yaml', status: 404, reason: 'NotFound', message: 'deployments.apps "nope" not found' },
  { what: 'GET of a namespace\'s status', method: 'GET', path: '/api/v1/namespaces/{ns}/status', status: 200 },
  { what: 'a cluster-scoped kind under a namespace path', method: 'GET', path: '/api/v1/namespaces/{ns}/nodes', status: 404, reason: 'NotFound' },
  { what: 'a create of a namespaced kind without a namespace', method: 'POST', path: '/api/v1/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'z' } }, status: 405, reason: 'MethodNotAllowed' },
  { what: 'an annotation key with a space', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ak', annotations: { 'bad key': 'x' } } }, status: 422, reason: 'Invalid', message: 'ConfigMap "ak" is invalid: metadata.annotations: Invalid value: "bad key"' },
  { what: 'a finalizer without a domain', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fin', finalizers: ['nodomain'] } }, status: 422, reason: 'Invalid', message: 'ConfigMap "fin" is invalid: metadata.finalizers[0]: Invalid value: "nodomain": name is neither a standard finalizer name nor is it fully qualified' },
  { what: 'a standard finalizer without a domain', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fin-std', finalizers: ['orphan'] } }, status: 201 },
  { what: 'an unknown dryRun value', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'Some' }, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dr' } }, status: 422, reason: 'Invalid', message: 'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"' },
  { what: 'PUT to a subresource a kind lacks', method: 'PUT', path: '/api/v1/namespaces/{ns}/configmaps/a/status', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } }, status: 404, reason: 'NotFound' },
  { what: 'an invalid generateName', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'Bad_' } }, status: 422, reason: 'Invalid' },
  { what: 'a name of 254 characters', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x'.repeat(254) } }, status: 422, reason: 'Invalid' },
  { what: 'a namespace name with a dot', method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a.b' } }, status: 422, reason: 'Invalid', message: 'Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots' },
  { what: 'deletecollection across all namespaces', method: 'DELETE', path: '/api/v1/configmaps', query: { labelSelector: 'none=here' }, status: 405, reason: 'MethodNotAllowed', message: 'the server does not allow this method on the requested resource' },
  { what: 'a propagation policy in the query string', method: 'DELETE', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { propagationPolicy: 'Bogus' }, status: 422, reason: 'Invalid', message: 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Bogus": supported values: "Foreground", "Background", "Orphan", "nil"' },
  { what: 'deletecollection answers the list of what it deleted', method: 'DELETE', path: '/api/v1/namespaces/{ns}/configmaps', query: { labelSelector: 'none=here' }, status: 200 },
  { what: 'a JSON patch replace of a map key the object lacks (adds it, as the server\'s json-patch v4 does)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: [{ op: 'replace', path: '/data/new', value: '1' }], contentType: 'application/json-patch+json', status: 200 },
  { what: 'a JSON patch replace under a map the object lacks', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: [{ op: 'replace', path: '/metadata/annotations/q', value: '1' }], contentType: 'application/json-patch+json', status: 422, reason: 'Invalid', message: 'the server rejected our request due to an error in our request' },
  { what: 'a JSON patch test of a missing key against null (passes)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: [{ op: 'test', path: '/data/missing', value: null }], contentType: 'application/json-patch+json', status: 200 },
  { what: 'a JSON patch test of a missing key against a value', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: [{ op: 'test', path: '/data/missing', value: 'x' }], contentType: 'application/json-patch+json', status: 422, reason: 'Invalid' },
  { what: 'a JSON patch path without a leading slash (its first segment is skipped)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', body: [{ op: 'add', path: 'data/q', value: '1' }], contentType: 'application/json-patch+json', status: 200, warning: 'unknown field \\"q\\"' },
  { what: 'a create of an existing custom resource with a domain-less finalizer (409, with the warning)', method: 'POST', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets', body: { apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', metadata: { name: 'w', finalizers: ['hold'] } }, status: 409, reason: 'AlreadyExists', warning: 'prefer a domain-qualified finalizer name' },
  // found by the widened differential fuzzer (issue 40)
  { what: 'a Job named past 63 characters (its name is a label of its template)', method: 'POST', path: '/apis/batch/v1/namespaces/{ns}/jobs', query: { dryRun: 'All' }, body: { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: `j${'o'.repeat(63)}` }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } } }, status: 422, reason: 'Invalid', message: `Job.batch "j${'o'.repeat(63)}" is invalid: spec.template.labels: Invalid value: "j${'o'.repeat(63)}": must be no more than 63 bytes` },
  { what: 'owner references are checked before finalizers', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ordered', finalizers: ['nodomain'], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o1', uid: '11111111-1111-4111-8111-111111111111', controller: true }, { apiVersion: 'v1', kind: 'ConfigMap', name: 'o2', uid: '22222222-2222-4222-8222-222222222222', controller: true }] } }, status: 422, reason: 'Invalid', message: 'ConfigMap "ordered" is invalid: [metadata.ownerReferences: Invalid value:' },
  // metadata and query options in kube-apiserver v1.37.2's words (each problem a field error of its own, lengths in bytes,
  // the regular expressions named, field selectors refused by the code that converts them, integers as Go's ParseInt reads them)
  { what: 'a label key with two slashes', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'lk', labels: { 'a/b/c': 'x' } } }, status: 422, reason: 'Invalid', message: 'ConfigMap "lk" is invalid: metadata.labels: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters' },
  { what: 'an empty label key (two problems, two errors)', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'lk', labels: { '': 'x' } } }, status: 422, reason: 'Invalid', message: 'ConfigMap "lk" is invalid: [metadata.labels: Invalid value: "": name part must be non-empty, metadata.labels: Invalid value: "": name part must consist of' },
  { what: 'a label value too long and malformed', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'lv', labels: { x: `-${'a'.repeat(70)}` } } }, status: 422, reason: 'Invalid', message: `ConfigMap "lv" is invalid: [metadata.labels: Invalid value: "-${'a'.repeat(70)}": must be no more than 63 bytes, metadata.labels: Invalid value: "-${'a'.repeat(70)}": a valid label must be an empty string` },
  { what: 'a label key whose prefix is not a subdomain', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'lp', labels: { 'A_/x': 'x' } } }, status: 422, reason: 'Invalid', message: `ConfigMap "lp" is invalid: metadata.labels: Invalid value: "A_/x": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')` },
  { what: 'an annotation key with a name part past 63 bytes', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'ak', annotations: { [`example.com/${'a'.repeat(64)}`]: 'x' } } }, status: 422, reason: 'Invalid', message: `ConfigMap "ak" is invalid: metadata.annotations: Invalid value: "example.com/${'a'.repeat(64)}": name part must be no more than 63 bytes` },
  { what: 'a malformed finalizer name (told at the list)', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'fn', finalizers: ['a/b/c'] } }, status: 422, reason: 'Invalid', message: 'ConfigMap "fn" is invalid: metadata.finalizers: Invalid value: "a/b/c": a valid label key must consist of' },
  { what: 'an owner reference with every field empty', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'oe', ownerReferences: [{ apiVersion: '', kind: '', name: '', uid: '' }] } }, status: 422, reason: 'Invalid', message: 'ConfigMap "oe" is invalid: [metadata.ownerReferences[0].apiVersion: Required value: must not be empty, metadata.ownerReferences[0].kind: Required value: must not be empty, metadata.ownerReferences[0].name: Required value: must not be empty, metadata.ownerReferences[0].uid: Required value: must not be empty]' },
  { what: 'a label selector cut short', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { labelSelector: 'a in (b' }, status: 400, reason: 'BadRequest', message: "unable to parse requirement: found '', expected: ',' or ')'" },
  { what: 'a label selector with a malformed key', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { labelSelector: '-a=x' }, status: 400, reason: 'BadRequest', message: 'unable to parse requirement: <nil>: Invalid value: "-a": name part must consist of' },
  { what: 'a field selector a ConfigMap does not have', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { fieldSelector: 'spec.x=1' }, status: 400, reason: 'BadRequest', message: '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"' },
  { what: 'a field selector a Job does not have', method: 'GET', path: '/apis/batch/v1/namespaces/{ns}/jobs', query: { fieldSelector: 'spec.x=1' }, status: 400, reason: 'BadRequest', message: 'field label "spec.x" not supported for Job' },
  { what: 'a field selector a Pod does not have', method: 'GET', path: '/api/v1/namespaces/{ns}/pods', query: { fieldSelector: 'spec.x=1' }, status: 400, reason: 'BadRequest', message: 'field label not supported: spec.x' },
  { what: 'status.replicas of apps/v1 ReplicaSets (not a field selector)', method: 'GET', path: '/apis/apps/v1/namespaces/{ns}/replicasets', query: { fieldSelector: 'status.replicas=1' }, status: 400, reason: 'BadRequest', message: '"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"' },
  { what: 'a list with a malformed timeoutSeconds', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { timeoutSeconds: 'x' }, status: 400, reason: 'BadRequest', message: 'strconv.ParseInt: parsing "x": invalid syntax' },
  { what: 'a watch with a fractional timeoutSeconds', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { watch: 'true', timeoutSeconds: '1.5' }, status: 400, reason: 'BadRequest', message: 'strconv.ParseInt: parsing "1.5": invalid syntax' },
  { what: 'a list with a limit past int64', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { limit: '99999999999999999999' }, status: 400, reason: 'BadRequest', message: 'strconv.ParseInt: parsing "99999999999999999999": value out of range' },
  { what: 'a list with a negative limit (no limit)', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { limit: '-5' }, status: 200 },
  { what: 'a delete with a malformed gracePeriodSeconds (before the object is looked for)', method: 'DELETE', path: '/api/v1/namespaces/{ns}/configmaps/nope', query: { gracePeriodSeconds: '1.5' }, status: 400, reason: 'BadRequest', message: 'strconv.ParseInt: parsing "1.5": invalid syntax' },
  { what: 'a delete-collection with a malformed limit', method: 'DELETE', path: '/api/v1/namespaces/{ns}/configmaps', query: { labelSelector: 'none=here', limit: 'x' }, status: 400, reason: 'BadRequest', message: 'strconv.ParseInt: parsing "x": invalid syntax' },
  { what: 'a ConfigMap key that is not a config key', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'ck' }, data: { 'a/b': '1' } }, status: 422, reason: 'Invalid', message: `ConfigMap "ck" is invalid: data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')` },
  { what: 'a ConfigMap key starting with ..', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'ck' }, binaryData: { '..x': 'YQ==' } }, status: 422, reason: 'Invalid', message: `ConfigMap "ck" is invalid: binaryData[..x]: Invalid value: "..x": must not start with '..'` },
  { what: 'a ConfigMap key past 253 characters', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'ck' }, data: { ['k'.repeat(254)]: '1' } }, status: 422, reason: 'Invalid', message: `ConfigMap "ck" is invalid: data[${'k'.repeat(254)}]: Invalid value: "${'k'.repeat(254)}": must be no more than 253 characters` },
  { what: 'a ConfigMap key in data and binaryData', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'ck' }, data: { a: '1' }, binaryData: { a: 'YQ==' } }, status: 422, reason: 'Invalid', message: 'ConfigMap "ck" is invalid: data[a]: Invalid value: "a": duplicate of key present in binaryData' },
  { what: 'a Secret key that is not a config key', method: 'POST', path: '/api/v1/namespaces/{ns}/secrets', query: { dryRun: 'All' }, body: { metadata: { name: 'sk' }, data: { '.': 'YQ==' } }, status: 422, reason: 'Invalid', message: `Secret "sk" is invalid: data[.]: Invalid value: ".": must not be '.'` },
  { what: 'a merge patch that is a string', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: '"s"', contentType: 'application/merge-patch+json', status: 400, reason: 'BadRequest', message: 'error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}' },
  { what: 'a merge patch that is null', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: 'null', contentType: 'application/merge-patch+json', status: 400, reason: 'BadRequest', message: 'Invalid JSON Patch' },
  { what: 'a strategic merge patch that is a list', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: '[1,2]', contentType: 'application/strategic-merge-patch+json', status: 400, reason: 'BadRequest', message: 'json: cannot unmarshal array into Go value of type map[string]interface {}' },
  { what: 'a strategic merge patch with an unknown $patch directive', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: { metadata: { $patch: 'bogus' } }, contentType: 'application/strategic-merge-patch+json', status: 500, message: 'unknown patch type: bogus in map: map[$patch:bogus]' },
  { what: 'a list with timeoutSeconds and limit both malformed (ListOptions field order: timeoutSeconds first)', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { limit: 'x', timeoutSeconds: '1.5' }, status: 400, reason: 'BadRequest', message: 'strconv.ParseInt: parsing "1.5": invalid syntax' },
  { what: 'a watch with resourceVersionMatch but no sendInitialEvents and a field selector the kind lacks (the options\' 422 first)', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { watch: 'true', fieldSelector: 'spec.x=1', resourceVersionMatch: 'NotOlderThan' }, status: 422, reason: 'Invalid', message: 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided' },
  { what: 'a list with a malformed label selector and a malformed limit (the integer first)', method: 'GET', path: '/api/v1/namespaces/{ns}/configmaps', query: { labelSelector: 'a in (b', limit: 'x' }, status: 400, reason: 'BadRequest', message: 'strconv.ParseInt: parsing "x": invalid syntax' },
  { what: 'a list of custom resources whose CRD has selectable fields, by a field it does not select', method: 'GET', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets', query: { fieldSelector: 'spec.x=1' }, status: 400, reason: 'BadRequest', message: 'field label not supported: spec.x' },
  { what: 'a label value of 40 two-byte characters (80 bytes: the bound counts bytes)', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'ub', labels: { x: 'é'.repeat(40) } } }, status: 422, reason: 'Invalid', message: `ConfigMap "ub" is invalid: [metadata.labels: Invalid value: "${'é'.repeat(40)}": must be no more than 63 bytes, metadata.labels: Invalid value: "${'é'.repeat(40)}": a valid label must be` },
  { what: 'a ConfigMap key of 130 two-byte characters (260 bytes)', method: 'POST', path: '/api/v1/namespaces/{ns}/configmaps', query: { dryRun: 'All' }, body: { metadata: { name: 'ub' }, data: { ['é'.repeat(130)]: '1' } }, status: 422, reason: 'Invalid', message: `ConfigMap "ub" is invalid: [data[${'é'.repeat(130)}]: Invalid value: "${'é'.repeat(130)}": must be no more than 253 characters, ` },
  // a JSON patch operation without its value, and patches that change, remove or null kind or apiVersion (measured on kube-apiserver v1.37.2)
  { what: 'a JSON patch add without a value (the value null: the labels removed)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: [{ op: 'add', path: '/metadata/labels' }], contentType: 'application/json-patch+json', status: 200 },
  { what: 'a JSON patch replace of the name without a value', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: [{ op: 'replace', path: '/metadata/name' }], contentType: 'application/json-patch+json', status: 400, reason: 'BadRequest', message: 'the name of the object (a based on URL) was undeterminable: name must be provided' },
  { what: 'a JSON patch removing a built-in object\'s kind (the URL\'s kind)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: [{ op: 'remove', path: '/kind' }], contentType: 'application/json-patch+json', status: 200 },
  { what: 'a JSON patch removing a built-in object\'s apiVersion', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: [{ op: 'remove', path: '/apiVersion' }], contentType: 'application/json-patch+json', status: 400, reason: 'BadRequest', message: 'the name of the object (a based on URL) was undeterminable: name must be provided', warning: '299 - "unknown field \\"data\\"", 299 - "unknown field \\"metadata\\""' },
  { what: 'the same with fieldValidation=Strict: the decoder\'s error, as the patch\'s 422 quoting the result', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All', fieldValidation: 'Strict' }, body: [{ op: 'remove', path: '/apiVersion' }], contentType: 'application/json-patch+json', status: 422, reason: 'Invalid', message: '": strict decoding error: unknown field "data", unknown field "metadata"' },
  { what: 'a strategic merge patch naming another kind (the URL\'s kind all the same)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: { kind: 'Secret' }, contentType: 'application/strategic-merge-patch+json', status: 200 },
  { what: 'a merge patch to a kind its version does not have', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: { kind: 'Other' }, contentType: 'application/merge-patch+json', status: 422, reason: 'Invalid', message: '": no kind "Other" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"' },
  { what: 'a merge patch to another apiVersion', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: { apiVersion: 'x/v9' }, contentType: 'application/merge-patch+json', status: 422, reason: 'Invalid', message: '": no kind "ConfigMap" is registered for version "x/v9"' },
  { what: 'a JSON patch to another kind of the version (decoded as it: its data not base64)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: [{ op: 'replace', path: '/kind', value: 'Secret' }], contentType: 'application/json-patch+json', status: 422, reason: 'Invalid', message: '": illegal base64 data at input byte 0' },
  { what: 'a merge patch to a Deployment (no conversion to a ConfigMap)', method: 'PATCH', path: '/api/v1/namespaces/{ns}/configmaps/a', query: { dryRun: 'All' }, body: { apiVersion: 'apps/v1', kind: 'Deployment', data: null }, contentType: 'application/merge-patch+json', status: 422, reason: 'Invalid', message: '": converting (v1.Deployment) to (core.ConfigMap): unknown conversion' },
  { what: 'a merge patch changing a custom resource\'s kind', method: 'PATCH', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets/w', query: { dryRun: 'All' }, body: { kind: 'Gadget' }, contentType: 'application/merge-patch+json', status: 422, reason: 'Invalid', message: 'Gadget.conformance.kubeloop.dev "w" is invalid: kind: Invalid value: "Gadget": must be Widget' },
  { what: 'a merge patch changing a custom resource\'s apiVersion', method: 'PATCH', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets/w', query: { dryRun: 'All' }, body: { apiVersion: 'x/v9' }, contentType: 'application/merge-patch+json', status: 422, reason: 'Invalid', message: 'Widget.x "w" is invalid: apiVersion: Invalid value: "x/v9": must be conformance.kubeloop.dev/v1' },
  { what: 'a JSON patch removing a custom resource\'s kind', method: 'PATCH', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets/w', query: { dryRun: 'All' }, body: [{ op: 'remove', path: '/kind' }], contentType: 'application/json-patch+json', status: 422, reason: 'Invalid', message: `": Object 'Kind' is missing in '{"apiVersion":"conformance.kubeloop.dev/v1","metadata":{"creationTimestamp":` },
  { what: 'a merge patch nulling a custom resource\'s apiVersion', method: 'PATCH', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets/w', query: { dryRun: 'All' }, body: { apiVersion: null }, contentType: 'application/merge-patch+json', status: 500, reason: 'InternalError', message: "Internal error occurred: Object 'apiVersion' is missing in 'object has no apiVersion field'" },
];

describe.each(BACKENDS)('raw requests ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  beforeAll(async () => {
    await h().client().create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: h().namespace }, data: { x: '1' } });
    await h().client().create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', metadata: { name: 'w', namespace: h().namespace } });
  });

  it.each(CASES)('$what: $status', async (c) => {
    const res = await raw(h(), c.method, c.path.replace('{ns}', h().namespace), {
      ...(c.query ? { query: c.query } : {}),
      ...(c.body === undefined ? {} : { body: c.body }),
      ...(c.contentType ? { contentType: c.contentType } : {}),
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(c.status);
    if (c.status >= 400) {
      expect(res.body['kind']).toBe('Status');
      expect(res.body['reason']).toBe(c.reason);
      if (c.message) expect(String(res.body['message'])).toContain(c.message);
    }
    if (c.warning) expect(res.warning).toContain(c.warning);
  });

  it('a built-in kind\'s identical errors are one cause (two labels with one bad value, a bad finalizer twice, also by apply); different ones are a cause each', async () => {
    const causes = async (metadata: Record<string, unknown>, apply = false): Promise<string[]> => {
      const path = `/api/v1/namespaces/${h().namespace}/configmaps`;
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata };
      const res = apply
        ? await raw(h(), 'PATCH', `${path}/${String(metadata['name'])}`, { query: { dryRun: 'All', fieldManager: 'm' }, body, contentType: 'application/apply-patch+yaml' })
        : await raw(h(), 'POST', path, { query: { dryRun: 'All' }, body });
      expect(res.status).toBe(422);
      return ((res.body['details'] as { causes?: { field: string; message: string }[] }).causes ?? []).map((c) => `${c.field}: ${c.message}`);
    };
    // each cause as `field: message`, as the server words it
    const badValue = /^metadata\.labels: Invalid value: "a b": a valid label must be an empty string/;
    const one = (list: string[], pattern: RegExp): void => {
      expect(list).toHaveLength(1);
      expect(list[0]).toMatch(pattern);
    };
    one(await causes({ name: 'd1', labels: { a: 'a b', b: 'a b' } }), badValue);
    one(await causes({ name: 'd2', labels: { a: 'a b', b: 'a b' } }, true), badValue);
    one(await causes({ name: 'd3', finalizers: ['a/b/c', 'a/b/c'] }), /^metadata\.finalizers: Invalid value: "a\/b\/c": a valid label key/);
    // a bad key beside them: two causes, in Go's random map order on the server
    const mixed = (await causes({ name: 'd4', labels: { '-x': '1', a: 'a b', b: 'a b' } })).sort();
    expect(mixed).toHaveLength(2);
    expect(mixed[0]).toMatch(/^metadata\.labels: Invalid value: "-x": name part must/);
    expect(mixed[1]).toMatch(badValue);
    expect(await causes({ name: 'd5', labels: { a: 'a b', b: 'c d' } })).toHaveLength(2);
  });

  it('a built-in kind\'s own finalizer-name check comes after the generic update rules (a new finalizer on an object being deleted)', async () => {
    const path = `/apis/apps/v1/namespaces/${h().namespace}/deployments`;
    const deployment = (finalizers: string[]) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'held', finalizers }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } } });
    expect((await raw(h(), 'POST', path, { body: deployment(['example.com/hold']) })).status).toBe(201);
    try {
      expect((await raw(h(), 'DELETE', `${path}/held`)).status).toBe(200);
      const res = await raw(h(), 'PATCH', `${path}/held`, { query: { dryRun: 'All', fieldManager: 'beta', force: 'true' }, body: deployment(['example.com/hold', 'hold']), contentType: 'application/apply-patch+yaml' });
      expect(res.status).toBe(422);
      const causes = ((res.body['details'] as { causes?: { field: string; message: string }[] }).causes ?? []).map((c) => `${c.field}: ${c.message}`);
      expect(causes).toHaveLength(2);
      expect(causes[0]).toMatch(/^metadata\.finalizers: Forbidden: no new finalizers can be added if the object is being deleted/);
      expect(causes[1]).toMatch(/^metadata\.finalizers\[1\]: Invalid value: "hold": name is neither a standard finalizer name/);
    } finally {
      await raw(h(), 'PATCH', `${path}/held`, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' });
    }
  });

  it('a custom resource\'s update lists a bad label, annotation or owner reference three times (ObjectMeta checked on create rules, then twice on update rules); its create, and a bad finalizer, once', async () => {
    const path = `/apis/conformance.kubeloop.dev/v1/namespaces/${h().namespace}/widgets`;
    const widget = (name: string, metadata: Record<string, unknown>) => ({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', metadata: { name, ...metadata } });
    /** Each cause as `field: message`; the message names each problem once (Go's aggregate drops repeats). */
    const causes = (res: Awaited<ReturnType<typeof raw>>, once: string): string[] => {
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(422);
      expect(String(res.body['message']).split(once)).toHaveLength(2);
      return ((res.body['details'] as { causes?: { field: string; message: string }[] }).causes ?? []).map((c) => `${c.field}: ${c.message}`);
    };
    const apply = (name: string, metadata: Record<string, unknown>) =>
      raw(h(), 'PATCH', `${path}/${name}`, { query: { fieldManager: 'm' }, body: widget(name, metadata), contentType: 'application/apply-patch+yaml' });
    const all = (list: string[], n: number, pattern: RegExp): void => {
      expect(list).toHaveLength(n);
      for (const c of list) expect(c).toMatch(pattern);
    };
    all(causes(await apply('w', { labels: { '-x': '1' } }), '"-x"'), 3, /^metadata\.labels: Invalid value: "-x": name part must/);
    all(causes(await raw(h(), 'PATCH', `${path}/w`, { body: { metadata: { annotations: { '-x': '1' } } }, contentType: 'application/merge-patch+json' }), '"-x"'), 3, /^metadata\.annotations: Invalid value: "-x": name part must/);
    all(causes(await apply('w', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: '' }] }), 'uid: Required value'), 3, /^metadata\.ownerReferences\[0\]\.uid: Required value/);
    all(causes(await apply('w', { finalizers: ['a/b/c'] }), '"a/b/c"'), 1, /^metadata\.finalizers: Invalid value: "a\/b\/c"/);
    // a create (here an apply of a new object) checks ObjectMeta once
    all(causes(await apply('w-new', { labels: { '-x': '1' } }), '"-x"'), 1, /^metadata\.labels: Invalid value: "-x": name part must/);
    // two labels with one bad value: the validator's declarative check lists it once (a create), the generic checks of an
    // update each label's (2 + 2 + 1; found by the differential fuzzer, random seed 1195077979)
    all(causes(await apply('w-new', { labels: { app: 'a b', tier: 'a b' } }), '"a b"'), 1, /^metadata\.labels: Invalid value: "a b": a valid label must/);
    all(causes(await apply('w', { labels: { app: 'a b', tier: 'a b' } }), '"a b"'), 5, /^metadata\.labels: Invalid value: "a b": a valid label must/);
  });
});
