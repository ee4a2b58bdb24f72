/**
 * The differential fuzzer's requests: what fast-check generates (a sequence
 * of requests over a few kinds and names, so that they collide), how a step
 * becomes a raw request on one backend (some steps read the object first,
 * as a client would), and how answers are normalised before the fake's are
 * compared with kube-apiserver's.
 */
import fc from 'fast-check';
import { canonical } from '../../src/internal/json.js';

export type Json = Record<string, unknown>;

export interface KindInfo {
  readonly name: 'ConfigMap' | 'Secret' | 'Widget' | 'Deployment';
  readonly apiVersion: string;
  /** The collection path, `{ns}` for the namespace. */
  readonly path: string;
  readonly builtin: boolean;
  readonly status: boolean;
}

export const KINDS: readonly KindInfo[] = [
  { name: 'ConfigMap', apiVersion: 'v1', path: '/api/v1/namespaces/{ns}/configmaps', builtin: true, status: false },
  { name: 'Secret', apiVersion: 'v1', path: '/api/v1/namespaces/{ns}/secrets', builtin: true, status: false },
  { name: 'Widget', apiVersion: 'conformance.kubeloop.dev/v1', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets', builtin: false, status: true },
  // a built-in workload: what the server defaults (replicas, strategy, the pod template) and strategic merge by container name
  { name: 'Deployment', apiVersion: 'apps/v1', path: '/apis/apps/v1/namespaces/{ns}/deployments', builtin: true, status: true },
];

const NAMES = ['a', 'b', 'c'] as const;
const LABEL_KEYS = ['app', 'tier'] as const;
const LABEL_VALUES = ['x', 'y', ''] as const;
const FINALIZERS = ['example.com/hold', 'hold'] as const;
const MANAGERS = ['alpha', 'beta'] as const;

/**
 * A DeleteOptions body. kube-apiserver reads delete options from the body
 * alone when there is one (the query's `dryRun=All` beside it is not read),
 * so bodies are generated with and without `dryRun`, beside queries with and
 * without it. Preconditions name the step's object: `current` is its uid or
 * resourceVersion read just before the delete, `wrong` / `stale` are not.
 */
export interface DeleteBody {
  readonly typed?: boolean;
  readonly dryRun?: readonly ['All'];
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  /** The deprecated switch the server still reads (true is Orphan); refused beside a propagationPolicy. */
  readonly orphanDependents?: boolean;
  readonly gracePeriodSeconds?: 0 | 30;
  readonly preconditions?: { readonly uid?: 'current' | 'wrong'; readonly resourceVersion?: 'current' | 'stale' };
}

/** A step of a sequence: data only, so fast-check can print and shrink it. */
export type Step =
  | { readonly op: 'create'; readonly kind: number; readonly name: string; readonly body: Json; readonly query: Record<string, string>; readonly duplicate?: DuplicateKey }
  | { readonly op: 'get'; readonly kind: number; readonly name: string; readonly accept?: string; readonly query?: Record<string, string> }
  | { readonly op: 'update'; readonly kind: number; readonly name: string; readonly change: Json; readonly rv: 'current' | 'stale' | 'none'; readonly reorder: boolean; readonly query: Record<string, string> }
  | { readonly op: 'patch'; readonly kind: number; readonly name: string; readonly type: 'merge' | 'json' | 'strategic'; readonly body: unknown; readonly query: Record<string, string>; readonly subresource?: 'status'; readonly duplicate?: boolean }
  | { readonly op: 'apply'; readonly kind: number; readonly name: string; readonly manager: string; readonly force: boolean | string; readonly body: Json; readonly query: Record<string, string>; readonly subresource?: 'status' | 'scale' }
  | { readonly op: 'delete'; readonly kind: number; readonly name: string; readonly body: DeleteBody | undefined; readonly query: Record<string, string> }
  | { readonly op: 'deletecollection'; readonly kind: number; readonly name: string; readonly body: DeleteBody | undefined; readonly query: Record<string, string> }
  | { readonly op: 'list'; readonly kind: number; readonly query: Record<string, string>; readonly pages: boolean; readonly accept?: string }
  | { readonly op: 'watch'; readonly kind: number; readonly query: Record<string, string> }
  | { readonly op: 'scale'; readonly kind: number; readonly name: string; readonly replicas: number | string | undefined; readonly query: Record<string, string> }
  | { readonly op: 'perkind'; readonly kind: number; readonly fact: number; readonly how: 'put' | 'post' | 'generateName'; readonly nameLength: number; readonly query: Record<string, string> };

/** Where a create's body repeats a key (the JSON text then has it twice): at the top, in metadata, or in a map of data. */
export type DuplicateKey = 'top' | 'metadata' | 'data';

const name = fc.constantFrom(...NAMES);
/**
 * Now and then a value the server refuses, at the edges of its rule (found by hand first: each rule's words and
 * whether each problem is an error of its own): `common` most of the time, one of `rare` about one time in `1 + odds`.
 */
const sometimes = <T>(common: fc.Arbitrary<T>, rare: readonly T[], odds = 12): fc.Arbitrary<T> => fc.oneof({ weight: odds, arbitrary: common }, { weight: 1, arbitrary: fc.constantFrom(...rare) });
/** Keys of labels, annotations and finalizers that break a part of the qualified-name rule: slashes, the prefix, the name's length, emptiness. */
const BAD_KEYS = ['a/b/c', '', 'A_/x', '-x', `example.com/${'a'.repeat(64)}`, '/x'] as const;
const labelKey = sometimes<string>(fc.constantFrom(...LABEL_KEYS), BAD_KEYS, 20);
/** Now and then two bad keys or values in one map: the server lists them in Go's random map order, which `normalise` compares as a set. */
const labels = sometimes<Record<string, string>>(fc.dictionary(labelKey, sometimes<string>(fc.constantFrom(...LABEL_VALUES), [`-${'a'.repeat(70)}`, 'a b'], 20), { maxKeys: 2 }), [{ '-x': 'a', 'a/b/c': 'b' }, { app: `-${'a'.repeat(70)}`, tier: 'a b' }], 30);
const labelsOrNull = fc.dictionary(fc.constantFrom(...LABEL_KEYS), fc.option(fc.constantFrom(...LABEL_VALUES), { nil: null }), { maxKeys: 2 });
/**
 * Owner references a write may carry: two owners (fixed uids), as a
 * controller or not, blocking deletion or not; two managers applying the
 * same owner differently conflict on the server.
 */
const ownerReference = fc
  .record({ owner: sometimes<string>(fc.constantFrom('owner', 'other'), ['no-uid'], 20), controller: fc.constantFrom<boolean | undefined>(true, false, undefined), blockOwnerDeletion: fc.constantFrom<boolean | undefined>(true, undefined) })
  .map(({ owner, controller, blockOwnerDeletion }): Json => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: owner,
    uid: owner === 'owner' ? '11111111-1111-4111-8111-111111111111' : owner === 'other' ? '22222222-2222-4222-8222-222222222222' : '',
    ...(controller === undefined ? {} : { controller }),
    ...(blockOwnerDeletion === undefined ? {} : { blockOwnerDeletion }),
  }));
const ownerReferences = fc.uniqueArray(ownerReference, { selector: (o) => o['name'], minLength: 1, maxLength: 2 });
const metadata = (n: string): fc.Arbitrary<Json> =>
  fc.record(
    {
      labels,
      annotations: fc.dictionary(sometimes<string>(fc.constantFrom('note', 'example.com/x'), BAD_KEYS, 20), fc.constantFrom('1', 'two'), { maxKeys: 2 }),
      finalizers: sometimes<string[]>(fc.subarray([...FINALIZERS], { maxLength: 1 }), [['a/b/c'], [`example.com/${'a'.repeat(64)}`]], 20),
      ownerReferences: fc.option(ownerReferences, { nil: undefined, freq: 3 }).map((o) => o),
    },
    { requiredKeys: [] },
  ).map(({ ownerReferences: owners, ...m }) => ({ name: n, ...m, ...(owners ? { ownerReferences: owners } : {}) }));

/**
 * Boolean query values as Go reads them (apimachinery's
 * `Convert_Slice_string_To_bool`: "false" in any case and "0" are false,
 * anything else true), the common spellings and the odd ones.
 */
const goBool = fc.constantFrom('true', 'True', 'TRUE', '1', 't', 'yes', 'false', 'False', 'FALSE', '0', 'f', 'no');

/**
 * Accept headers a client may send on a read: metadata-only and Table
 * forms (right and wrong group, version, list or object form), forms the
 * server refuses (406), YAML, and lists of alternatives.
 */
export const ACCEPTS = [
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1',
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1',
  'application/json;as=PartialObjectMetadata;g=example.com;v=v1',
  'application/json;as=Table;g=meta.k8s.io;v=v1',
  'application/json;as=Table;g=meta.k8s.io;v=v2',
  'application/json;as=Foo;g=meta.k8s.io;v=v1',
  'application/json;as=Foo;g=meta.k8s.io;v=v1, application/json',
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1',
  'application/yaml',
  'text/plain',
  'application/json;q=0.5, application/yaml',
  '*/*',
] as const;
/**
 * Documented limit (docs/testing-fake.md, "Tables"): a built-in kind's
 * Table has the Name and Age columns only, so built-in kinds are not asked
 * for a v1 Table (a refused Table version still is).
 */
const acceptFor = (builtin: boolean): fc.Arbitrary<string> => fc.constantFrom(...ACCEPTS.filter((a) => !builtin || a !== 'application/json;as=Table;g=meta.k8s.io;v=v1'));

const dataValue = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('1', 'two', '') }, { weight: 1, arbitrary: fc.constantFrom<unknown>(3, null) });
const base64Value = fc.oneof({ weight: 5, arbitrary: fc.constantFrom('YQ==', 'dHdv', '') }, { weight: 1, arbitrary: fc.constantFrom('YQ', 'not base64!') });
const data = sometimes<Record<string, unknown>>(fc.dictionary(sometimes<string>(fc.constantFrom('x', 'y', 'z'), ['a/b', '..x', '.'], 20), dataValue, { maxKeys: 3 }), [{ 'a/b': '1', '..x': 'two', x: '' }], 30);
const spec = fc.record(
  {
    size: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 1, arbitrary: fc.constant<unknown>('big') }),
    color: fc.constantFrom('red', 'blue'),
    replicas: fc.integer({ min: 0, max: 3 }),
    tags: fc.subarray(['t1', 't2', 't3']),
    ports: fc.uniqueArray(fc.record({ name: fc.constantFrom('http', 'grpc'), port: fc.integer({ min: 1, max: 3 }), note: fc.constantFrom('pruned') }, { requiredKeys: ['name', 'port'] }), { selector: (p) => p.name, maxLength: 2 }),
    extra: fc.constantFrom('kept'),
  },
  { requiredKeys: [] },
);

const containerArb = fc.record(
  {
    name: fc.constantFrom('c', 'd'),
    image: fc.constantFrom('nginx', 'nginx:1.25', 'redis:latest'),
    ports: fc.constantFrom<unknown>([{ containerPort: 80 }], [{ containerPort: 80, protocol: 'TCP', name: 'http' }]),
    // an env variable given twice and a fractional byte quantity: the strategy's warnings (both containers may define
    // port 80 and the name http: warned about too); the repeated key is owned alone by an update, refused by an apply
    env: fc.constantFrom<unknown>([{ name: 'A', value: '1' }], [{ name: 'A', value: '1' }, { name: 'A', value: '2' }]),
    resources: fc.constantFrom<unknown>({ limits: { cpu: '0.5' } }, { requests: { memory: '1024Mi' } }, { requests: { memory: '1.5' } }),
  },
  { requiredKeys: ['name', 'image'] },
);
/** A valid Deployment spec (the fake does not validate built-in kinds' specs: docs/testing-fake.md), defaults left to the server. */
const deploymentSpec = fc
  .record(
    {
      replicas: fc.integer({ min: 0, max: 3 }),
      containers: fc.uniqueArray(containerArb, { selector: (c) => c.name, minLength: 1, maxLength: 2 }),
      strategy: fc.constantFrom<unknown>({ type: 'RollingUpdate' }, { rollingUpdate: { maxSurge: 1 } }),
      paused: fc.boolean(),
    },
    { requiredKeys: ['containers'] },
  )
  .map(({ containers, ...rest }) => ({
    ...rest,
    selector: { matchLabels: { app: 'p' } },
    template: { metadata: { labels: { app: 'p' } }, spec: { containers } },
  }));

/** The body of a create or apply of `kind` named `n` (what a user might send, mistakes included). */
function body(kind: number, n: string): fc.Arbitrary<Json> {
  const k = KINDS[kind]!;
  const head = { apiVersion: k.apiVersion, kind: k.name };
  const unknown = fc.option(fc.constant({ unknownField: 1 }), { nil: undefined, freq: 6 }).map((u) => u ?? {});
  switch (k.name) {
    case 'ConfigMap':
      return fc.tuple(metadata(n), data, unknown).map(([m, d, u]) => ({ ...head, metadata: m, data: d, ...u }));
    case 'Secret':
      return fc
        .tuple(metadata(n), fc.dictionary(fc.constantFrom('x', 'y'), base64Value, { maxKeys: 2 }), fc.option(fc.dictionary(fc.constantFrom('y', 'z'), fc.constantFrom('s', '')), { nil: undefined }), fc.option(fc.constantFrom('Opaque', 'example.com/t'), { nil: undefined }), unknown)
        .map(([m, d, sd, type, u]) => ({ ...head, metadata: m, data: d, ...(sd ? { stringData: sd } : {}), ...(type ? { type } : {}), ...u }));
    case 'Deployment':
      return fc.tuple(metadata(n), deploymentSpec, unknown).map(([m, sp, u]) => ({ ...head, metadata: m, spec: sp, ...u }));
    case 'Widget':
      return fc.tuple(metadata(n), spec, fc.option(fc.record({ phase: fc.constantFrom('Ready') }), { nil: undefined })).map(([m, s, st]) => ({ ...head, metadata: m, spec: s, ...(st ? { status: st } : {}) }));
  }
}

/**
 * resourceVersions a list or watch asks for: none, "any" (`0`), the one the
 * sequence's namespace was created at (`<start>`), or the newest (`<current>`,
 * read from a list just before); each backend fills in its own.
 */
const RVS = ['', '0', '<start>', '<current>'] as const;

const writeQuery = fc.record({ dryRun: fc.constantFrom('All'), fieldValidation: fc.constantFrom('Strict', 'Ignore', 'Warn') }, { requiredKeys: [] });
/** A non-apply patch's query: `force` is an apply option the server refuses elsewhere. */
const patchQuery = fc.tuple(writeQuery, fc.option(goBool, { nil: undefined, freq: 4 })).map(([q, force]) => (force === undefined ? q : { ...q, force }));
const dryRunQuery = fc.record({ dryRun: fc.constantFrom('All') }, { requiredKeys: [] });
const kindIndex = fc.integer({ min: 0, max: KINDS.length - 1 });
/** A DeleteOptions body or none (then the options are read from the query). */
const deleteBody: fc.Arbitrary<DeleteBody | undefined> = fc.option(
  fc.record(
    {
      typed: fc.boolean(),
      dryRun: fc.constant(['All'] as const),
      propagationPolicy: fc.constantFrom('Orphan', 'Background', 'Foreground'),
      orphanDependents: fc.boolean(),
      gracePeriodSeconds: fc.constantFrom(0, 30),
      preconditions: fc.record({ uid: fc.constantFrom('current', 'wrong'), resourceVersion: fc.constantFrom('current', 'stale') }, { requiredKeys: [] }),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined, freq: 3 },
);

function mergeBody(kind: number): fc.Arbitrary<Json> {
  const k = KINDS[kind]!;
  // Now and then the server-owned deletion fields too: an update may not change a grace period, and a deletion time it gives is not taken.
  const rarely = <T>(values: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.oneof({ arbitrary: fc.constant(undefined), weight: 5 }, { arbitrary: values, weight: 1 });
  const meta = fc
    .record({
      labels: fc.option(labelsOrNull, { nil: undefined }),
      finalizers: fc.option(fc.constantFrom<unknown>(null, [FINALIZERS[0]]), { nil: undefined }),
      deletionGracePeriodSeconds: rarely(fc.constantFrom<unknown>(null, 0, 7)),
      deletionTimestamp: rarely(fc.constantFrom<unknown>(null, '2001-01-01T00:00:00Z')),
    })
    .map((m): Json => Object.fromEntries(Object.entries(m).filter(([, v]) => v !== undefined)));
  const content =
    k.name === 'Deployment'
      ? fc.record({ spec: fc.record({ replicas: fc.integer({ min: 0, max: 3 }), paused: fc.constantFrom<unknown>(true, null), template: fc.record({ spec: fc.record({ containers: fc.constantFrom<unknown>([{ name: 'c', image: 'nginx:2' }], [{ name: 'e', image: 'busybox' }]) }) }) }, { requiredKeys: [] }) }, { requiredKeys: [] })
      : k.name === 'Widget'
      ? fc.record({ spec: fc.record({ size: fc.integer({ min: 0, max: 3 }), color: fc.constantFrom<unknown>('green', null), tags: fc.constantFrom<unknown>(['t9'], null) }, { requiredKeys: [] }) }, { requiredKeys: [] })
      : fc.record({ data: fc.dictionary(fc.constantFrom('x', 'y'), k.name === 'Secret' ? fc.option(base64Value, { nil: null }) : fc.option(dataValue, { nil: null }), { maxKeys: 2 }) }, { requiredKeys: [] });
  return fc.tuple(fc.record({ metadata: meta }, { requiredKeys: [] }), content).map(([a, b]) => ({ ...a, ...b }));
}

const jsonPatch = (kind: number): fc.Arbitrary<unknown[]> => {
  const k = KINDS[kind]!;
  const paths = k.name === 'Deployment' ? ['/spec/replicas', '/spec/template/spec/containers/0/image', '/spec/paused', '/metadata/labels/app'] : k.name === 'Widget' ? ['/spec/size', '/spec/color', '/spec/tags/0', '/spec/tags/-', '/metadata/labels/app'] : ['/data/x', '/data/y', '/metadata/labels/app', '/metadata/labels'];
  const op = fc.oneof(
    { weight: 10, arbitrary: fc.record({ op: fc.constantFrom('add', 'replace', 'remove', 'test'), path: fc.constantFrom(...paths), value: fc.constantFrom<unknown>('1', 2, 'dHdv', {}) }) },
    // now and then an operation without its value (the value null to the server), or one that changes, removes or
    // nulls the kind or apiVersion (decoded by what it names, or refused by a custom resource's validator)
    { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('add', 'replace', 'test'), path: fc.constantFrom(...paths, '/metadata/name') }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('replace', 'remove'), path: fc.constantFrom('/kind', '/apiVersion'), value: fc.constantFrom<unknown>(k.name, 'Secret', 'Pod', 'Other', 'v1', 'apps/v1', 'x/v9', null) }) },
  );
  return fc.array(op, { minLength: 1, maxLength: 2 }).map((ops) => ops.map((o) => (o.op === 'remove' ? { op: o.op, path: o.path } : o)));
};

type DeleteStep = Extract<Step, { op: 'delete' | 'deletecollection' }>;

/** A delete of `kind` named `n`, with options in a body, the query, both or neither. */
function deleteStep(kind: number, n: string): fc.Arbitrary<DeleteStep> {
  return fc
    .tuple(deleteBody, fc.record({ dryRun: fc.constantFrom('All'), propagationPolicy: fc.constantFrom('Orphan', 'Foreground'), orphanDependents: fc.oneof(fc.constantFrom('true', 'false'), goBool), gracePeriodSeconds: sometimes(fc.constantFrom('0', '30'), ['1.5', 'x', '99999999999999999999']) }, { requiredKeys: [] }))
    .map(([b, query]): DeleteStep => ({ op: 'delete', kind, name: n, body: b, query }));
}

/** A delete-collection of `kind` by label, with options in a body (preconditions naming `n`), the query, both or neither. */
function deleteCollectionStep(kind: number, n: string): fc.Arbitrary<DeleteStep> {
  return fc
    .tuple(deleteBody, fc.record({ labelSelector: fc.constantFrom('app=x', 'tier', '!app'), dryRun: fc.constantFrom('All'), limit: sometimes(fc.constantFrom('1', '2'), ['x', '-1']) }, { requiredKeys: [] }))
    .map(([b, query]): DeleteStep => ({ op: 'deletecollection', kind, name: n, body: b, query }));
}

/**
 * A change of an object that exists, often one being deleted: a create
 * holding a finalizer, a delete half the time (which leaves it
 * terminating), then an update or a merge patch that may touch its
 * finalizers and the server-owned deletion fields. Updates generated alone
 * seldom find one of the few objects a sequence created.
 */
const createThenChange: fc.Arbitrary<Step[]> = kindIndex.chain((kind) =>
  fc.tuple(name, fc.boolean(), mergeBody(kind), fc.constantFrom('update' as const, 'patch' as const), writeQuery).chain(([n, deleted, change, how, query]) =>
    body(kind, n).map((b): Step[] => [
      { op: 'create', kind, name: n, body: { ...b, metadata: { ...(b['metadata'] as Json), finalizers: [FINALIZERS[0]] } }, query: {} },
      ...(deleted ? [{ op: 'delete', kind, name: n, body: undefined, query: {} } as const] : []),
      how === 'update' ? { op: 'update', kind, name: n, change, rv: 'current', reorder: false, query } : { op: 'patch', kind, name: n, type: 'merge', body: change, query },
    ]),
  ),
);

export const step: fc.Arbitrary<Step> = kindIndex.chain((kind): fc.Arbitrary<Step> => {
  const k = KINDS[kind]!;
  const options: fc.Arbitrary<Step>[] = [
    fc
      .tuple(name, writeQuery, fc.option(fc.constantFrom<DuplicateKey>('top', 'metadata', 'data'), { nil: undefined, freq: 3 }))
      .chain(([n, query, duplicate]) => body(kind, n).map((b): Step => ({ op: 'create', kind, name: n, body: b, query, ...(duplicate ? { duplicate } : {}) }))),
    fc.tuple(name, fc.option(acceptFor(k.builtin), { nil: undefined, freq: 2 })).map(([n, a]): Step => ({ op: 'get', kind, name: n, ...(a ? { accept: a } : {}) })),
    fc.record({ n: name, change: mergeBody(kind), rv: fc.constantFrom('current' as const, 'current' as const, 'stale' as const, 'none' as const), reorder: fc.boolean(), query: writeQuery }).map(({ n, change, rv, reorder, query }): Step => ({ op: 'update', kind, name: n, change, rv, reorder, query })),
    // now and then with its first key given twice (a null first: the decoder keeps the last, the patch's own)
    fc
      .tuple(name, mergeBody(kind), patchQuery, fc.constantFrom<'merge' | 'strategic'>(...(k.builtin ? (['merge', 'strategic'] as const) : (['merge'] as const))), fc.boolean())
      .map(([n, b, query, type, twice]): Step => ({ op: 'patch', kind, name: n, type, body: b, query, ...(twice && Object.keys(b).length > 0 ? { duplicate: true } : {}) })),
    fc.tuple(name, jsonPatch(kind), patchQuery).map(([n, b, query]): Step => ({ op: 'patch', kind, name: n, type: 'json', body: b, query })),
    fc
      .tuple(name, fc.constantFrom(...MANAGERS), fc.oneof(fc.boolean(), goBool), fc.record({ dryRun: fc.constantFrom('All') }, { requiredKeys: [] }))
      .chain(([n, manager, force, query]) => body(kind, n).map((b): Step => ({ op: 'apply', kind, name: n, manager, force, body: b, query }))),
    name.chain((n) => deleteStep(kind, n)),
    name.chain((n) => deleteCollectionStep(kind, n)),
    fc
      .tuple(
        fc.record(
          {
            labelSelector: sometimes(fc.constantFrom('app=x', 'app in (x,y)', 'tier', 'app!=y'), ['a in (b', '-a=x', 'app<x/y', 'a/b/c=x', 'x=-y']),
            fieldSelector: sometimes(fc.constantFrom('metadata.name=a', 'metadata.name!=b'), ['spec.x=1', 'status.replicas=1', 'type=Opaque', 'status.phase=Running']),
            limit: sometimes(fc.constantFrom('1', '2'), ['-5', 'x', '1.5', '99999999999999999999']),
            timeoutSeconds: sometimes(fc.constantFrom('30'), ['x', '1.5'], 4),
            resourceVersion: fc.constantFrom(...RVS),
            resourceVersionMatch: fc.constantFrom('NotOlderThan', 'Exact'),
          },
          { requiredKeys: [] },
        ),
        fc.boolean(),
        fc.option(acceptFor(k.builtin), { nil: undefined, freq: 3 }),
      )
      .map(([query, pages, a]): Step => ({ op: 'list', kind, query, pages, ...(a ? { accept: a } : {}) })),
    fc
      .record(
        {
          sendInitialEvents: fc.oneof(fc.constantFrom('true', 'false'), goBool),
          resourceVersion: fc.constantFrom(...RVS),
          resourceVersionMatch: fc.constantFrom('NotOlderThan', 'NotOlderThan', 'Exact'),
          allowWatchBookmarks: fc.oneof(fc.constantFrom('true', 'true', 'false'), goBool),
          labelSelector: fc.constantFrom('app=x', 'app!=y'),
          fieldSelector: fc.constantFrom('metadata.name=a'),
        },
        { requiredKeys: [] },
      )
      .map((query): Step => ({ op: 'watch', kind, query })),
  ];
  if (k.status) {
    options.push(
      fc
        .tuple(
          name,
          k.name === 'Deployment'
            ? fc.record({ status: fc.record({ replicas: fc.integer({ min: 0, max: 2 }), conditions: fc.constantFrom<unknown>([{ type: 'Available', status: 'True' }]) }, { requiredKeys: [] }), metadata: fc.record({ labels, annotations: fc.constantFrom({ note: 's' }) }, { requiredKeys: [] }), spec: fc.record({ replicas: fc.constant(9) }) }, { requiredKeys: ['status'] })
            : fc.record({ status: fc.record({ phase: fc.constantFrom('Ready', 'Gone'), replicas: fc.integer({ min: 0, max: 2 }) }, { requiredKeys: [] }), metadata: fc.record({ labels }, { requiredKeys: [] }), spec: fc.record({ size: fc.constant(9) }) }, { requiredKeys: ['status'] }),
        )
        .chain(([n, b]) => dryRunQuery.map((query): Step => ({ op: 'patch', kind, name: n, type: 'merge', body: b, query, subresource: 'status' }))),
      fc
        .tuple(name, fc.option(fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant<number | string>(-1), fc.constant<number | string>('2')), { nil: undefined }), dryRunQuery)
        .map(([n, replicas, query]): Step => ({ op: 'scale', kind, name: n, replicas, query })),
      // server-side apply to the subresources: the Scale's replicas, the status, by two managers, forced or not
      fc
        .tuple(name, fc.constantFrom(...MANAGERS), fc.oneof(fc.boolean(), goBool), fc.integer({ min: 0, max: 3 }), dryRunQuery)
        .map(([n, manager, force, replicas, query]): Step => ({ op: 'apply', kind, name: n, manager, force, subresource: 'scale', query, body: { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: n }, spec: { replicas } } })),
      fc
        .tuple(name, fc.constantFrom(...MANAGERS), fc.boolean(), k.name === 'Deployment' ? fc.record({ replicas: fc.integer({ min: 1, max: 2 }), observedGeneration: fc.constant(1) }, { requiredKeys: [] }) : fc.record({ phase: fc.constantFrom('Ready', 'Gone'), replicas: fc.integer({ min: 0, max: 2 }) }, { requiredKeys: [] }), dryRunQuery)
        .map(([n, manager, force, status, query]): Step => ({ op: 'apply', kind, name: n, manager, force, subresource: 'status', query, body: { apiVersion: k.apiVersion, kind: k.name, metadata: { name: n }, status } })),
    );
  }
  return fc.oneof(...options);
});

/**
 * Kinds whose per-kind rules the server keeps in its strategies: which
 * allow a create by PUT (create-on-update), how long a name may be, how a
 * generateName is cut. Each body is valid for its kind (the fake does not
 * validate built-in specs: docs/testing-fake.md); `{ns}` is the namespace.
 */
export const FACTS: readonly { readonly kind: string; readonly path: string; readonly body: Json }[] = [
  { kind: 'Lease', path: '/apis/coordination.k8s.io/v1/namespaces/{ns}/leases', body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', spec: { holderIdentity: 'me' } } },
  { kind: 'Endpoints', path: '/api/v1/namespaces/{ns}/endpoints', body: { apiVersion: 'v1', kind: 'Endpoints' } },
  { kind: 'Event', path: '/api/v1/namespaces/{ns}/events', body: { apiVersion: 'v1', kind: 'Event', involvedObject: { kind: 'ConfigMap', namespace: '{ns}', name: 'a' }, reason: 'Made', message: 'made' } },
  { kind: 'LimitRange', path: '/api/v1/namespaces/{ns}/limitranges', body: { apiVersion: 'v1', kind: 'LimitRange', spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] } } },
  { kind: 'ConfigMap', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', data: { x: '1' } } },
  { kind: 'Service', path: '/api/v1/namespaces/{ns}/services', body: { apiVersion: 'v1', kind: 'Service', spec: { ports: [{ port: 80 }] } } },
  {
    kind: 'CronJob',
    path: '/apis/batch/v1/namespaces/{ns}/cronjobs',
    body: { apiVersion: 'batch/v1', kind: 'CronJob', spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'busybox' }] } } } } } },
  },
  {
    kind: 'StatefulSet',
    path: '/apis/apps/v1/namespaces/{ns}/statefulsets',
    body: { apiVersion: 'apps/v1', kind: 'StatefulSet', spec: { selector: { matchLabels: { app: 'p' } }, template: { metadata: { labels: { app: 'p' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } } },
  },
  {
    kind: 'Deployment',
    path: '/apis/apps/v1/namespaces/{ns}/deployments',
    body: { apiVersion: 'apps/v1', kind: 'Deployment', spec: { selector: { matchLabels: { app: 'p' } }, template: { metadata: { labels: { app: 'p' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } } },
  },
  { kind: 'Job', path: '/apis/batch/v1/namespaces/{ns}/jobs', body: { apiVersion: 'batch/v1', kind: 'Job', spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } } } },
  { kind: 'Widget', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets', body: { apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', spec: { size: 1 } } },
];

/** Name lengths around the per-kind limits (CronJob 52, label-like names 63, generateName's cut at 58, subdomains 253). */
const NAME_LENGTHS = [1, 52, 53, 58, 63, 64, 253, 254] as const;

/** A name (or generateName prefix) of `length` characters: `n` then `a`s (the server's random suffixes never hold an `a`). */
export function longName(length: number): string {
  return `n${'a'.repeat(Math.max(0, length - 1))}`;
}

/** A per-kind step: a create by PUT of a name that may not exist, a POST, or a POST with a generateName; names at the per-kind limits. */
const perKindStep: fc.Arbitrary<Step> = fc
  .record({ fact: fc.integer({ min: 0, max: FACTS.length - 1 }), how: fc.constantFrom('put' as const, 'put' as const, 'post' as const, 'generateName' as const), nameLength: fc.constantFrom(...NAME_LENGTHS, 1, 1), query: dryRunQuery })
  .map(({ fact, how, nameLength, query }): Step => ({ op: 'perkind', kind: 0, fact, how, nameLength, query }));

/**
 * A delete that finds something: a create of the object (or, for a
 * delete-collection, of its name, labelled for the selector half the time)
 * just before. Deletes generated alone seldom hit one of the few objects a
 * sequence created.
 */
const createThenDelete: fc.Arbitrary<Step[]> = kindIndex.chain((kind) =>
  fc.tuple(name, fc.constantFrom('delete' as const, 'deletecollection' as const), fc.boolean()).chain(([n, op, labelled]) =>
    fc.tuple(body(kind, n), op === 'delete' ? deleteStep(kind, n) : deleteCollectionStep(kind, n)).map(([b, d]): Step[] => {
      const made: Json = labelled ? { ...b, metadata: { ...(b['metadata'] as Json), labels: { app: 'x', tier: 'y' } } } : b;
      return [{ op: 'create', kind, name: n, body: made, query: {} }, d];
    }),
  ),
);

/** A sequence of steps: mostly single requests, some a create followed by a delete or a change of the same object. */
export const sequence: fc.Arbitrary<Step[]> = fc
  .array(fc.oneof({ weight: 6, arbitrary: step.map((s) => [s]) }, { weight: 2, arbitrary: createThenDelete }, { weight: 1, arbitrary: createThenChange }, { weight: 1, arbitrary: perKindStep.map((s) => [s]) }), { minLength: 3, maxLength: 12 })
  .map((groups) => groups.flat());

/** A raw request. */
export interface RawRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body?: string;
  readonly contentType?: string;
  readonly accept?: string;
}

export interface RawAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly warning: string | undefined;
  /** The media type answered (without parameters), compared when the request chose one. */
  readonly contentType?: string;
}

/** The JSON text of a create's body with a key repeated (`duplicate`): the repeat comes first, so the last, kept by a lenient decoder, is the real one. */
export function withDuplicateKey(kind: string, text: string, duplicate: DuplicateKey): string {
  if (duplicate === 'top') return `{"metadata":{"name":"dup"},${text.slice(1)}`;
  if (duplicate === 'metadata') return text.replace('"metadata":{', '"metadata":{"name":"dup",');
  const [field, entry] = kind === 'ConfigMap' ? ['data', '"x":"dup"'] : kind === 'Secret' ? ['data', '"x":"ZHVw"'] : kind === 'Deployment' ? ['spec', '"paused":true'] : ['spec', '"color":"dup"'];
  const at = text.indexOf(`"${field}":{`);
  if (at < 0) return `{"${field}":{${entry}},${text.slice(1)}`;
  const open = at + field.length + 4;
  return `${text.slice(0, open)}${entry}${text[open] === '}' ? '' : ','}${text.slice(open)}`;
}

const CONTENT_TYPES = { merge: 'application/merge-patch+json', json: 'application/json-patch+json', strategic: 'application/strategic-merge-patch+json' } as const;

/** The same object with every map's keys in reverse order. */
export function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reversed(v)]));
}

function mergeInto(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Json = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Json) } : {};
  for (const [k, v] of Object.entries(patch as Json)) {
    if (v === null) delete out[k];
    else out[k] = mergeInto(out[k], v);
  }
  return out;
}

/**
 * The raw requests of a step on one backend; `read` fetches the current
 * object (for an update, which sends the object read back, changed).
 */
export async function toRequest(s: Step, namespace: string, read: (path: string) => Promise<RawAnswer>, startRv: string): Promise<RawRequest> {
  const k = KINDS[s.kind]!;
  const collection = k.path.replace('{ns}', namespace);
  const fill = (v: unknown): string => JSON.stringify(v);
  /** The query with `<start>` and `<current>` filled in. */
  const resolve = async (query: Record<string, string>): Promise<Record<string, string>> => {
    const rv = query['resourceVersion'];
    if (rv === '<start>') return { ...query, resourceVersion: startRv };
    if (rv === '<current>') {
      const list = await read(collection);
      return { ...query, resourceVersion: String((list.body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion) };
    }
    return query;
  };
  /** A DeleteOptions body with its preconditions filled in from the object at `path` as it is now. */
  const deleteOptions = async ({ typed, preconditions, ...options }: DeleteBody, path: string): Promise<Json> => {
    const out: Json = { ...(typed ? { apiVersion: 'meta.k8s.io/v1', kind: 'DeleteOptions' } : {}), ...options };
    if (!preconditions) return out;
    const current = preconditions.uid === 'current' || preconditions.resourceVersion === 'current' ? await read(path) : undefined;
    const meta = current?.status === 200 ? ((current.body as Json)['metadata'] as Json) : {};
    const pre: Json = {};
    if (preconditions.uid) pre['uid'] = preconditions.uid === 'current' && typeof meta['uid'] === 'string' ? meta['uid'] : '00000000-0000-0000-0000-000000000000';
    if (preconditions.resourceVersion) pre['resourceVersion'] = preconditions.resourceVersion === 'current' && typeof meta['resourceVersion'] === 'string' ? meta['resourceVersion'] : '1';
    return { ...out, preconditions: pre };
  };
  switch (s.op) {
    case 'create':
      return { method: 'POST', path: collection, query: s.query, body: s.duplicate ? withDuplicateKey(k.name, fill(s.body), s.duplicate) : fill(s.body) };
    case 'get':
      return { method: 'GET', path: `${collection}/${s.name}`, ...(s.accept ? { accept: s.accept } : {}) };
    case 'update': {
      const current = await read(`${collection}/${s.name}`);
      const base: Json = current.status === 200 && typeof current.body === 'object' && current.body !== null ? (current.body as Json) : { apiVersion: k.apiVersion, kind: k.name, metadata: { name: s.name } };
      let next = mergeInto(base, s.change) as Json;
      const meta = { ...((next['metadata'] as Json | undefined) ?? {}) };
      if (s.rv === 'stale') meta['resourceVersion'] = '1';
      if (s.rv === 'none') delete meta['resourceVersion'];
      next = { ...next, metadata: meta };
      if (s.reorder) next = reversed(next) as Json;
      return { method: 'PUT', path: `${collection}/${s.name}`, query: s.query, body: fill(next) };
    }
    case 'patch': {
      const text = fill(s.body);
      const body = s.duplicate && typeof s.body === 'object' && s.body !== null ? `{${JSON.stringify(Object.keys(s.body)[0])}:null,${text.slice(1)}` : text;
      return { method: 'PATCH', path: `${collection}/${s.name}${s.subresource ? `/${s.subresource}` : ''}`, query: s.query, body, contentType: CONTENT_TYPES[s.type] };
    }
    case 'apply': {
      const force = typeof s.force === 'string' ? { force: s.force } : s.force ? { force: 'true' } : {};
      return { method: 'PATCH', path: `${collection}/${s.name}${s.subresource ? `/${s.subresource}` : ''}`, query: { ...s.query, fieldManager: s.manager, ...force }, body: fill(s.body), contentType: 'application/apply-patch+yaml' };
    }
    case 'delete':
      return { method: 'DELETE', path: `${collection}/${s.name}`, query: s.query, ...(s.body ? { body: fill(await deleteOptions(s.body, `${collection}/${s.name}`)) } : {}) };
    case 'deletecollection':
      return { method: 'DELETE', path: collection, query: s.query, ...(s.body ? { body: fill(await deleteOptions(s.body, `${collection}/${s.name}`)) } : {}) };
    case 'list':
      return { method: 'GET', path: collection, query: await resolve(s.query), ...(s.accept ? { accept: s.accept } : {}) };
    case 'watch':
      return { method: 'GET', path: collection, query: { ...(await resolve(s.query)), watch: 'true' } };
    case 'scale':
      return s.replicas === undefined
        ? { method: 'GET', path: `${collection}/${s.name}/scale` }
        : { method: 'PATCH', path: `${collection}/${s.name}/scale`, query: s.query, body: fill({ spec: { replicas: s.replicas } }), contentType: CONTENT_TYPES.merge };
    case 'perkind': {
      const f = FACTS[s.fact]!;
      const path = f.path.replace('{ns}', namespace);
      const body = JSON.parse(JSON.stringify(f.body).replaceAll('{ns}', namespace)) as Json;
      const n = longName(s.nameLength);
      if (s.how === 'generateName') return { method: 'POST', path, query: s.query, body: fill({ ...body, metadata: { generateName: n } }) };
      if (s.how === 'post') return { method: 'POST', path, query: s.query, body: fill({ ...body, metadata: { name: n } }) };
      return { method: 'PUT', path: `${path}/${n}`, query: s.query, body: fill({ ...body, metadata: { name: n } }) };
    }
  }
}

const UID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
/** A name made from a generateName of `longName`'s form: the prefix, then the server's five random characters (never an `a`). */
const CLUSTER_IP = /10\.0\.0\.\d{1,3}/g;
const GENERATED = /\b(na*)[bcdfghjklmnpqrstvwxz2456789]{5}\b/g;

/** An object with what legitimately differs between two servers replaced: uids, resourceVersions, times, the namespace's name. */
function normaliseObject(obj: unknown, rvChanged: boolean | undefined, deleteCollection = false): unknown {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return obj;
  const o = { ...(obj as Json) };
  if (typeof o['metadata'] === 'object' && o['metadata'] !== null) {
    const m = { ...(o['metadata'] as Json) };
    for (const f of ['uid', 'creationTimestamp', 'deletionTimestamp'] as const) if (m[f] !== undefined) m[f] = `<${f}>`;
    delete m['resourceVersion'];
    if (rvChanged !== undefined) m['resourceVersionChanged'] = rvChanged;
    // times dropped, and the entries in the server's order without them: it sorts by operation, then time in whole seconds,
    // then manager, so two Updates in one second or in two (a CRD's creation and kube-apiserver's status write a few
    // milliseconds later) come in either order from one run to the next
    if (Array.isArray(m['managedFields'])) {
      const key = (e: Json): string => JSON.stringify([e['operation'], e['manager'], e['apiVersion'], e['subresource']]);
      m['managedFields'] = (m['managedFields'] as Json[]).map(({ time: _t, ...rest }) => rest).sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    }
    // a token's text is each server's own; an empty one (a custom resource's last page) is compared as it is
    if (typeof m['continue'] === 'string' && m['continue'] !== '') m['continue'] = '<continue>';
    // documented limit (docs/testing-fake.md, "continue tokens"): kube-apiserver may end an empty page, or a delete-collection's answer, with a continue token
    if (Array.isArray(o['items']) && (o['items'].length === 0 || deleteCollection)) delete m['continue'];
    o['metadata'] = m;
  }
  if (Array.isArray(o['items'])) o['items'] = (o['items'] as unknown[]).map((i) => normaliseObject(i, undefined));
  // a Table's Age column counts seconds since creation, which two servers reach at different times
  if (o['kind'] === 'Table' && Array.isArray(o['rows'])) o['rows'] = (o['rows'] as Json[]).map((r) => ({ ...r, cells: Array.isArray(r['cells']) ? (r['cells'] as unknown[]).map((c) => (typeof c === 'string' && /^\d+(s|m|h|d)/.test(c) ? '<age>' : c)) : r['cells'], object: normaliseObject(r['object'], undefined) }));
  // documented limit (docs/testing-fake.md, "the initial-events-end bookmark"): the server's bookmark object carries the kind's Go zero value; compared by its metadata
  const bookmark = (e: Json): unknown => (e['type'] === 'BOOKMARK' && typeof e['object'] === 'object' && e['object'] !== null ? { ...(e['object'] as Json), spec: undefined, status: undefined } : e['object']);
  if (Array.isArray(o['events'])) o['events'] = (o['events'] as Json[]).map((e) => ({ type: e['type'], object: normaliseObject(bookmark(e), undefined) }));
  if (o['kind'] === 'Status' && typeof o['details'] === 'object' && o['details'] !== null) {
    const d = { ...(o['details'] as Json) };
    if (d['uid'] !== undefined) d['uid'] = '<uid>';
    o['details'] = d;
  }
  return o;
}

/** A comparable form of an answer. */
export function normalise(a: RawAnswer, namespace: string, rvChanged: boolean | undefined, deleteCollection = false): string {
  let text = JSON.stringify({ status: a.status, warning: a.warning, ...(a.contentType === undefined ? {} : { contentType: a.contentType }), body: normaliseObject(a.body, rvChanged, deleteCollection) });
  // a Service's cluster IP is drawn at random from the range on both
  text = text.replaceAll(namespace, '<ns>').replace(UID, '<uid>').replace(GENERATED, '$1<random>').replace(CLUSTER_IP, '<cluster-ip>');
  const parsed = JSON.parse(text) as { body: Json };
  const message = parsed.body['message'];
  if (typeof message === 'string') {
    let m = message.replace(/\d{2,}/g, '<n>');
    // documented limit (docs/testing-fake.md, "an apply with several schema problems"): which problems kube-apiserver lists varies
    // (the single-problem messages are held to the server's in conformance/wire.test.ts)
    if (m.startsWith('failed to create typed patch object')) m = m.replace(/\): [\s\S]*$/, '): <problems>');
    parsed.body['message'] = m;
  }
  // the causes' messages as the message (which repeats them): numbers in them are resourceVersions and times too
  const details = parsed.body['details'];
  if (typeof details === 'object' && details !== null && Array.isArray((details as Json)['causes'])) {
    for (const cause of (details as Json)['causes'] as Json[]) if (typeof cause['message'] === 'string') cause['message'] = cause['message'].replace(/\d{2,}/g, '<n>');
    // an apply's conflicts with several managers: structured-merge-diff lists the managers in Go's random map order
    // (ConflictsFromManagers), so the causes are compared as a set (the message sorts them; found by random seed 1195077979)
    if (parsed.body['reason'] === 'Conflict') ((details as Json)['causes'] as Json[]).sort((x, y) => (canonical(x) < canonical(y) ? -1 : canonical(x) > canonical(y) ? 1 : 0));
    else sortMapCauses(parsed.body);
  }
  return canonical(parsed);
}

/** The map a cause's field is an entry of (`data[a/b]` → `data`), or the field itself (`metadata.labels`); a list index stays (`spec.ports[1]`). */
function mapOf(cause: Json): string {
  return (typeof cause['field'] === 'string' ? cause['field'] : '').replace(/\[(?!\d+\])[^\]]*\]$/, '');
}

/**
 * Several causes in one map, compared as a set (documented in
 * docs/testing-fake.md, "two bad values where the server meets them in an
 * order the fake does not keep"): kube-apiserver validates a map's entries
 * (a ConfigMap's `data`, an object's labels or annotations) in Go's random
 * map order, so it lists their errors in any order from one request to the
 * next. Each run of consecutive causes of one map is sorted, and the
 * message's list rebuilt in that order when it is the causes' list; causes of
 * different fields keep their order, which is the server's validation order.
 */
export function sortMapCauses(body: Json): void {
  const details = body['details'] as Json;
  const causes = details['causes'] as Json[];
  if (causes.length < 2) return;
  // as the message has them: its numbers were replaced above, the field's with them
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  const text = (c: Json): string => `${str(c['field']).replace(/\d{2,}/g, '<n>')}: ${str(c['message'])}`;
  const listed = causes.map(text).join(', ');
  const sorted: Json[] = [];
  for (let i = 0; i < causes.length; ) {
    let j = i + 1;
    while (j < causes.length && mapOf(causes[j]!) === mapOf(causes[i]!)) j++;
    sorted.push(...causes.slice(i, j).sort((x, y) => (text(x) < text(y) ? -1 : text(x) > text(y) ? 1 : 0)));
    i = j;
  }
  details['causes'] = sorted;
  const message = body['message'];
  if (typeof message === 'string' && message.endsWith(`[${listed}]`)) body['message'] = `${message.slice(0, message.length - listed.length - 2)}[${sorted.map(text).join(', ')}]`;
}

/** A watch event in comparable form. */
export function normaliseEvent(e: { type: string; object: unknown }, namespace: string): string {
  return canonical(JSON.parse(JSON.stringify({ type: e.type, object: normaliseObject(e.object, undefined) }).replaceAll(namespace, '<ns>').replace(UID, '<uid>').replace(GENERATED, '$1<random>')));
}
