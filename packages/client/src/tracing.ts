/**
 * The tracing hook: a process-wide slot through which kubeloop's packages
 * tell a tracer about requests they send (the transport) and work they do
 * (a webhook request served, a reconcile, a leadership change). Nothing
 * here knows OpenTelemetry: the manager installs an implementation, loaded
 * only when tracing is on (docs/tracing.md). While the slot is empty, the
 * cost of the hook is one property read per request.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Attribute values a span can carry. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean | readonly string[] | undefined>>;

/** The span of one outgoing API request, across its retries. */
export interface RequestSpan {
  /** Add the W3C trace context of this request (`traceparent`, `tracestate`) to its headers. */
  inject(headers: Record<string, string | string[]>): void;
  /** The request is over: its last status (none when no answer came), how many times it was retried, the error it failed with. */
  end(outcome: { readonly status?: number; readonly retries: number; readonly error?: unknown }): void;
}

/** A span started with {@link KubeloopTracer.inSpan}, open while its function runs. */
export interface SpanHandle {
  /** The trace ID, 32 hex digits (for log lines). */
  readonly traceId: string;
  /** The span ID, 16 hex digits (for log lines). */
  readonly spanId: string;
  /** Whether the span is recorded (sampled); an unsampled span's attributes go nowhere. */
  readonly recording: boolean;
  setAttributes(attributes: SpanAttributes): void;
  /** Mark the span failed with `error` (status ERROR, an exception event). */
  fail(error: unknown): void;
}

/** Options of {@link KubeloopTracer.inSpan}. */
export interface InSpanOptions {
  readonly attributes?: SpanAttributes;
  /** `server` for a request served (a webhook), `internal` otherwise. Default: `internal`. */
  readonly kind?: 'server' | 'internal';
  /**
   * Headers of the request being served: a W3C `traceparent` there makes the
   * span its child (the API server's trace continues). Default: none (a child
   * of the current span, or a new trace).
   */
  readonly carrier?: IncomingHttpHeaders;
  /** Start a new trace even inside a span (a leadership change is not part of what runs when it happens). Default: false. */
  readonly root?: boolean;
}

/** Describes an outgoing request for {@link KubeloopTracer.request}. */
export interface TracedRequest {
  readonly method: string;
  /** The API path, without the query. */
  readonly path: string;
  /** `watch=true` and the like: how a GET reads. */
  readonly watch: boolean;
  readonly host: string;
}

/**
 * What kubeloop's packages call when tracing is on. The manager installs
 * one backed by the OpenTelemetry SDK ({@link setTracer}); a test or another
 * framework may install its own.
 */
export interface KubeloopTracer {
  /** A request is about to be sent; its span (a child of the current one), or undefined to trace nothing. */
  request(request: TracedRequest): RequestSpan | undefined;
  /** Run `fn` inside a new span, current for everything `fn` starts (its requests' spans are its children); ends when `fn` settles, failed if it throws. */
  inSpan<T>(name: string, options: InSpanOptions, fn: (span: SpanHandle) => Promise<T>): Promise<T>;
  /** Run `fn` with no current span: for background work (an informer's list and watch loop) that must not join the trace of whatever started it. */
  detached<T>(fn: () => T): T;
}

const KEY = Symbol.for('@kubeloop/client/tracer');
const slot = globalThis as Record<symbol, KubeloopTracer | undefined>;

/**
 * Install `tracer` process-wide (undefined removes it). One slot per process,
 * even with two copies of this package in node_modules.
 * @internal
 */
export function setTracer(tracer: KubeloopTracer | undefined): void {
  slot[KEY] = tracer;
}

/**
 * The tracer installed, if any: undefined while tracing is off.
 * @internal
 */
export function currentTracer(): KubeloopTracer | undefined {
  return slot[KEY];
}

/**
 * Run `fn` inside a span when a tracer is installed, else just run it (with
 * no span handle): the one call sites use, so that tracing off costs one
 * property read.
 * @internal
 */
export function traced<T>(name: string, options: InSpanOptions, fn: (span: SpanHandle | undefined) => Promise<T>): Promise<T> {
  const tracer = slot[KEY];
  return tracer ? tracer.inSpan(name, options, fn) : fn(undefined);
}

/**
 * Run `fn` outside any span: for work that outlives what started it (an
 * informer a reconcile's first read started, an event writer), whose
 * requests would otherwise join that reconcile's trace for good.
 * @internal
 */
export function untraced<T>(fn: () => T): T {
  const tracer = slot[KEY];
  return tracer ? tracer.detached(fn) : fn();
}
