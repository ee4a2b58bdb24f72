/**
 * The types an operator author has to name are exported from the package
 * roots (not only from `/internal`): what the client's writes, reads and
 * `status()` return, what the manager's `controllers()` and `onReconcile`
 * give, the handler and source shapes a custom watch is written with, the
 * options objects public functions take. Each is imported from its root,
 * as a user would, and checked against the signature that uses it.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { ConfigMap } from '@kubeloop/scheme';
import type { KubeObject, ObjectList } from '@kubeloop/scheme';
import { jsonPatch, loadKubeConfig, mergeFrom, metadataOnly, mutableCopy, parseFieldSelector, parseLabelSelector, retryOnConflict } from '@kubeloop/client';
import type {
  AnyClient,
  AnyKubeObject,
  AuthConfig,
  CachedClient,
  CachedReader,
  Client,
  ClientOptions,
  ExecConfig,
  FieldRequirement,
  ImpersonationConfig,
  JsonPatchOperation,
  LabelRequirement,
  ListFor,
  LoadKubeConfigOptions,
  MergeFromOptions,
  MetadataRef,
  Mutable,
  ObjectFor,
  Patch,
  PatchType,
  Query,
  ReadYourWritesOptions,
  ReadYourWritesOutcome,
  ReadYourWritesRead,
  RequestInfo,
  RestConfig,
  RetryFn,
  Selector,
  Stored,
  SubResourceClient,
  TLSConfig,
  Transport,
  TransportOptions,
  TransportRequest,
  TransportResponse,
  Unstructured,
  WatchEvent,
  WatchEventType,
} from '@kubeloop/client';
import { createLogger, createOrUpdate, kindSource, Result } from '@kubeloop/manager';
import type {
  AdmissionClass,
  AdmissionOperation,
  BuilderWatchOptions,
  ClusterOptions,
  ControllerBuilder,
  ControllerStatus,
  EventHandler,
  EventRecorder,
  EventRecorderTuning,
  EventType,
  HealthCheck,
  LeadershipEnd,
  LeadershipGate,
  LeadershipState,
  LoggerConfig,
  Manager,
  ManagerOptions,
  OperationResult,
  OwnWrites,
  ReconcileReport,
  ReconcilerClass,
  ReconcilerLike,
  RegisteredWebhook,
  RequeueOptions,
  Runnable,
  RunnableFn,
  SecureMetricsOptions,
  Source,
  SourceContext,
  StartingObject,
  WebhookBuilder,
  WebhookRegistration,
} from '@kubeloop/manager';
import type { FakeApiServer, RequestAttributes, RequestRecord } from '@kubeloop/testing';
// The CLI package is not a dependency of the repository root: its root module by path.
import type { FileReport, GeneratedFile, GenerateTypesResult, Json } from '../packages/cli/src/index.js';

declare const client: Client;
declare const cached: CachedClient;
declare const manager: Manager;
declare const cm: ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' };

describe('the client root names what its calls take and return', () => {
  it('writes return Stored<T>; status() a SubResourceClient', () => {
    expectTypeOf(client.create(cm)).resolves.toEqualTypeOf<Stored<typeof cm>>();
    expectTypeOf(client.patch(cm, mergeFrom(cm, cm))).resolves.toEqualTypeOf<Stored<typeof cm>>();
    expectTypeOf(client.status()).toEqualTypeOf<SubResourceClient>();
    expectTypeOf(client.status().patch(cm, jsonPatch([]))).resolves.toEqualTypeOf<Stored<typeof cm>>();
    expectTypeOf(cached).toMatchTypeOf<CachedReader>();
    expectTypeOf(client).toMatchTypeOf<AnyClient>();
    expectTypeOf(cm).toMatchTypeOf<AnyKubeObject>();
  });

  it('reads are ObjectFor / ListFor of the kind given: Unstructured for a bare ref, metadata for a MetadataRef', () => {
    const ref = { apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' } as const;
    expectTypeOf(client.get(ref, { name: 'x' })).resolves.toEqualTypeOf<ObjectFor<typeof ref>>();
    expectTypeOf<ObjectFor<typeof ref>>().toEqualTypeOf<Unstructured>();
    expectTypeOf(client.list(ConfigMap)).resolves.toEqualTypeOf<ListFor<typeof ConfigMap>>();
    expectTypeOf(metadataOnly(ConfigMap)).toEqualTypeOf<MetadataRef>();
    expectTypeOf(mutableCopy(cm)).toEqualTypeOf<Mutable<typeof cm>>();
  });

  it('patches, selectors, retries and watch events', () => {
    expectTypeOf(jsonPatch).parameter(0).toEqualTypeOf<readonly JsonPatchOperation[]>();
    expectTypeOf(mergeFrom).parameter(2).toEqualTypeOf<MergeFromOptions | undefined>();
    expectTypeOf<Patch['type']>().toEqualTypeOf<PatchType>();
    expectTypeOf(parseLabelSelector).parameter(0).toEqualTypeOf<Selector | undefined>();
    expectTypeOf(parseLabelSelector).returns.toEqualTypeOf<LabelRequirement[]>();
    expectTypeOf(parseFieldSelector).returns.toEqualTypeOf<FieldRequirement[]>();
    expectTypeOf(retryOnConflict<number>).parameter(0).toEqualTypeOf<RetryFn<number>>();
    expectTypeOf<WatchEvent<ConfigMap>['type']>().toEqualTypeOf<WatchEventType>();
  });

  it('kubeconfigs and the transport', () => {
    expectTypeOf(loadKubeConfig).parameter(0).toEqualTypeOf<string | LoadKubeConfigOptions | undefined>();
    expectTypeOf<RestConfig['tls']>().toEqualTypeOf<TLSConfig | undefined>();
    expectTypeOf<RestConfig['auth']>().toEqualTypeOf<AuthConfig | undefined>();
    expectTypeOf<AuthConfig['exec']>().toEqualTypeOf<ExecConfig | undefined>();
    expectTypeOf<RestConfig['impersonate']>().toEqualTypeOf<ImpersonationConfig | undefined>();
    expectTypeOf<Transport['request']>().parameter(0).toEqualTypeOf<TransportRequest>();
    expectTypeOf<Transport['request']>().returns.resolves.toEqualTypeOf<TransportResponse>();
    expectTypeOf<TransportRequest['query']>().toEqualTypeOf<Query | undefined>();
    expectTypeOf<NonNullable<TransportOptions['onRequest']>>().parameter(0).toEqualTypeOf<RequestInfo>();
    expectTypeOf<ClientOptions['readYourWrites']>().toEqualTypeOf<false | ReadYourWritesOptions | undefined>();
    expectTypeOf<NonNullable<ReadYourWritesOptions['onRead']>>().parameter(0).toEqualTypeOf<ReadYourWritesRead>();
    expectTypeOf<ReadYourWritesRead['outcome']>().toEqualTypeOf<ReadYourWritesOutcome>();
  });
});

describe('the manager root names what its calls take and return', () => {
  it('controllers() and onReconcile', () => {
    expectTypeOf(manager.controllers()).toEqualTypeOf<readonly ControllerStatus[]>();
    expectTypeOf(manager.onReconcile).parameter(0).parameter(0).toEqualTypeOf<ReconcileReport>();
  });

  it('handlers, sources and the builder', () => {
    expectTypeOf(kindSource).parameter(1).toEqualTypeOf<EventHandler>();
    expectTypeOf<Source['start']>().parameter(0).toEqualTypeOf<SourceContext>();
    expectTypeOf<NonNullable<SourceContext['ownWrites']>['writes']>().toEqualTypeOf<OwnWrites>();
    expectTypeOf<ControllerBuilder['for']>().parameter(1).toEqualTypeOf<BuilderWatchOptions | undefined>();
    expectTypeOf<ControllerBuilder['complete']>().parameter(0).toEqualTypeOf<ReconcilerLike>();
    expectTypeOf(Result.requeue).parameter(0).toEqualTypeOf<RequeueOptions | undefined>();
    expectTypeOf(manager.register).parameter(0).toEqualTypeOf<ReconcilerClass>();
  });

  it('runnables, leadership, probes, webhooks', () => {
    expectTypeOf(manager.add).parameter(0).toEqualTypeOf<Runnable | RunnableFn>();
    expectTypeOf<LeadershipGate['run']>().returns.resolves.toEqualTypeOf<LeadershipEnd>();
    expectTypeOf<LeadershipState>().toMatchTypeOf<string>();
    expectTypeOf(manager.addHealthzCheck).parameter(1).toEqualTypeOf<HealthCheck>();
    expectTypeOf<ManagerOptions['secureMetrics']>().toEqualTypeOf<SecureMetricsOptions | undefined>();
    expectTypeOf<ClusterOptions['eventRecorder']>().toEqualTypeOf<EventRecorderTuning | undefined>();
    expectTypeOf<EventRecorder['event']>().parameter(1).toEqualTypeOf<EventType>();
    expectTypeOf(manager.webhook(ConfigMap)).toEqualTypeOf<WebhookBuilder<ConfigMap>>();
    expectTypeOf<RegisteredWebhook>().toBeObject();
    expectTypeOf<AdmissionOperation>().toMatchTypeOf<string>();
    expectTypeOf<AdmissionClass>().toBeConstructibleWith();
    expectTypeOf<WebhookRegistration>().toBeObject();
  });

  it('helpers and logging', () => {
    expectTypeOf(createOrUpdate<ConfigMap>).returns.resolves.toEqualTypeOf<OperationResult>();
    expectTypeOf<StartingObject<ConfigMap>>().toBeObject();
    expectTypeOf(createLogger).parameter(0).toEqualTypeOf<LoggerConfig | undefined>();
  });
});

describe('the testing and cli roots', () => {
  it('the fake API server\'s request records, the generators\' results', () => {
    expectTypeOf<RequestRecord>().toMatchTypeOf<RequestAttributes>();
    expectTypeOf<FakeApiServer>().toBeObject();
    expectTypeOf<GenerateTypesResult>().toMatchTypeOf<FileReport>();
    expectTypeOf<GeneratedFile['text']>().toEqualTypeOf<string>();
    expectTypeOf<Json>().toEqualTypeOf<Record<string, unknown>>();
    expectTypeOf<ObjectList<KubeObject>>().toBeObject();
  });
});
