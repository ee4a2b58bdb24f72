/**
 * kubeloop's tracer on the OpenTelemetry JS SDK: imported only by
 * `startTracing` (a dynamic import) once tracing is on, so a manager with
 * tracing off never loads a line of OpenTelemetry. Spans: one per API
 * request (a child of whatever span is current), one per served webhook
 * request (continuing the API server's `traceparent`), one per reconcile,
 * one per leadership change; W3C trace context on every request sent.
 */
import { context, createContextKey, isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, Context, Link, Span, Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Sampler } from '@opentelemetry/sdk-trace';
import type { KubeloopTracer, InSpanOptions, RequestSpan, SpanAttributes, SpanHandle, TracedRequest } from '@kubeloop/client/internal';
import type { TracingConfig } from './config.js';

const SCOPE = '@kubeloop/manager';

/** A running tracer and how to stop it. */
export interface OtelTracing {
  readonly tracer: KubeloopTracer;
  /** Send what is buffered. */
  flush(): Promise<void>;
  /** Send what is buffered and stop (only what this module set up: a provider the process registered itself is left alone). */
  shutdown(): Promise<void>;
}

function sampler(choice: TracingConfig['sampler']): Sampler {
  const root = choice.ratio >= 1 ? new AlwaysOnSampler() : choice.ratio <= 0 ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(choice.ratio);
  return choice.parentBased ? new ParentBasedSampler({ root }) : root;
}

function clean(attributes: SpanAttributes | undefined): Attributes {
  const out: Attributes = {};
  if (!attributes) return out;
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = typeof v === 'object' ? [...v] : v;
  return out;
}

/**
 * What an API path asks for: resource, namespace, name, subresource, group
 * and version (`/apis/apps/v1/namespaces/ns/deployments/d/status`), and the
 * verb as the API server's audit log names it.
 */
export function describeRequest(method: string, path: string, watch: boolean): { readonly name: string; readonly attributes: Attributes } {
  const parts = path.split('/').filter((p) => p !== '');
  let rest: string[];
  let group = '';
  let version = '';
  if (parts[0] === 'api' && parts.length >= 2) {
    version = parts[1]!;
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1]!;
    version = parts[2]!;
    rest = parts.slice(3);
  } else {
    return { name: method, attributes: { 'http.request.method': method, 'url.path': path } };
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  let verb: string;
  switch (method) {
    case 'GET': verb = watch ? 'watch' : name === undefined ? 'list' : 'get'; break;
    case 'POST': verb = 'create'; break;
    case 'PUT': verb = 'update'; break;
    case 'PATCH': verb = 'patch'; break;
    case 'DELETE': verb = name === undefined ? 'deletecollection' : 'delete'; break;
    default: verb = method.toLowerCase();
  }
  const out: Attributes = { 'http.request.method': method, 'url.path': path, 'k8s.verb': verb, 'k8s.api.version': group ? `${group}/${version}` : version };
  if (resource !== undefined) out['k8s.resource'] = resource;
  if (namespace !== undefined) out['k8s.namespace.name'] = namespace;
  if (name !== undefined) out['k8s.object.name'] = name;
  if (subresource !== undefined) out['k8s.subresource'] = subresource;
  return { name: `${verb} ${resource ?? ''}${subresource === undefined ? '' : `/${subresource}`}`.trim(), attributes: out };
}

/**
 * A one-line description of a thrown value. (Not the manager's describeError: this module is
 * loaded apart, and a bundler would split what it shares with the rest into a chunk of its own.)
 */
function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return 'unknown error';
  }
}

/** Mark `span` failed with `error`: status ERROR with its message, and an exception event. */
function failSpan(span: Span, error: unknown): void {
  const message = describeError(error);
  span.recordException(error instanceof Error ? error : message);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

class OtelRequestSpan implements RequestSpan {
  private ended = false;
  constructor(private readonly span: Span, private readonly ctx: Context) {}

  inject(headers: Record<string, string | string[]>): void {
    propagation.inject(this.ctx, headers);
  }

  end(outcome: { readonly status?: number; readonly retries: number; readonly error?: unknown }): void {
    if (this.ended) return;
    this.ended = true;
    const { span } = this;
    if (outcome.status !== undefined) span.setAttribute('http.response.status_code', outcome.status);
    if (outcome.retries > 0) span.setAttribute('kubeloop.request.retries', outcome.retries);
    if (outcome.error !== undefined) {
      failSpan(span, outcome.error);
    } else if (outcome.status !== undefined && outcome.status >= 400) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${outcome.status}` });
    }
    span.end();
  }
}

function handle(span: Span): SpanHandle {
  const sc = span.spanContext();
  return {
    traceId: sc.traceId,
    spanId: sc.spanId,
    recording: span.isRecording(),
    setAttributes: (attributes) => void span.setAttributes(clean(attributes)),
    fail: (error) => failSpan(span, error),
  };
}

/** Set in the context of a span whose writes record its trace context (a reconcile's, with linkWrites on). */
const STAMPS_WRITES = createContextKey('kubeloop stamps writes');

/** The spans `traceparents` name, sampled ones only (an unsampled span was never exported: a link to it leads nowhere). */
function linksTo(traceparents: readonly string[] | undefined): Link[] | undefined {
  if (traceparents === undefined || traceparents.length === 0) return undefined;
  const links: Link[] = [];
  for (const tp of traceparents) {
    // Checked by parseTraceparent when read from the object: 00-<32 hex>-<16 hex>-<2 hex>.
    const traceFlags = Number.parseInt(tp.slice(53, 55), 16);
    if ((traceFlags & 1) === 0) continue;
    links.push({ context: { traceId: tp.slice(3, 35), spanId: tp.slice(36, 52), traceFlags, isRemote: true } });
  }
  return links.length > 0 ? links : undefined;
}

/** The current span's context as a version-00 `traceparent`, inside a span that stamps writes. */
function currentTraceparent(): string | undefined {
  const active = context.active();
  if (active.getValue(STAMPS_WRITES) !== true) return undefined;
  const sc = trace.getSpanContext(active);
  if (sc === undefined || !isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

class OtelTracer implements KubeloopTracer {
  readonly linksObjects: boolean;
  readonly writeTraceparent?: () => string | undefined;

  constructor(private readonly tracer: Tracer, linkWrites: boolean) {
    this.linksObjects = linkWrites;
    if (linkWrites) this.writeTraceparent = currentTraceparent;
  }

  request(request: TracedRequest): RequestSpan | undefined {
    const parent = context.active();
    const { name, attributes } = describeRequest(request.method, request.path, request.watch);
    attributes['server.address'] = request.host;
    const span = this.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
    return new OtelRequestSpan(span, trace.setSpan(parent, span));
  }

  detached<T>(fn: () => T): T {
    return context.with(ROOT_CONTEXT, fn);
  }

  async inSpan<T>(name: string, options: InSpanOptions, fn: (span: SpanHandle) => Promise<T>): Promise<T> {
    const parent = options.root ? ROOT_CONTEXT : options.carrier ? propagation.extract(ROOT_CONTEXT, options.carrier) : context.active();
    const links = this.linksObjects ? linksTo(options.links) : undefined;
    const span = this.tracer.startSpan(name, { kind: options.kind === 'server' ? SpanKind.SERVER : SpanKind.INTERNAL, attributes: clean(options.attributes), ...(links ? { links } : {}) }, parent);
    const h = handle(span);
    let inner = trace.setSpan(parent, span);
    if (options.stampWrites === true && this.linksObjects) inner = inner.setValue(STAMPS_WRITES, true);
    try {
      return await context.with(inner, () => fn(h));
    } catch (error) {
      h.fail(error);
      throw error;
    } finally {
      span.end();
    }
  }
}

/**
 * Start tracing as `config` says. With a provider the process registered
 * itself, its tracer is used and nothing is registered; otherwise an SDK
 * tracer provider exporting OTLP/HTTP (protobuf) in batches, registered as
 * the process's global one (so spans a reconciler starts with
 * `@opentelemetry/api` are children of the reconcile span), with an
 * AsyncLocalStorage context manager and the W3C trace-context propagator.
 */
export function startOtelTracing(config: TracingConfig): OtelTracing {
  if (config.useRegistered) {
    const tracer = new OtelTracer(trace.getTracer(SCOPE), config.linkWrites);
    return { tracer, flush: () => Promise.resolve(), shutdown: () => Promise.resolve() };
  }
  let resource = resourceFromAttributes({ 'service.name': 'kubeloop-operator' }).merge(detectResources({ detectors: [envDetector] }));
  if (config.serviceName !== undefined) resource = resource.merge(resourceFromAttributes({ 'service.name': config.serviceName }));
  const exporter = new OTLPTraceExporter(config.endpoint === undefined ? {} : { url: config.endpoint });
  const provider = new TracerProvider({
    resource,
    sampler: sampler(config.sampler),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: config.exportDelayMs })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const tracer = new OtelTracer(provider.getTracer(SCOPE), config.linkWrites);
  return {
    tracer,
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}
