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
  /**
   * W3C `traceparent` values (checked with {@link parseTraceparent}) the span
   * links to: the writes that caused it (a reconcile triggered by an object
   * another reconcile wrote). Links, not parents: the span stays in a trace
   * of its own. Default: none.
   */
  readonly links?: readonly string[] | undefined;
  /**
   * Writes made inside the span record its trace context on the written
   * object ({@link TRACEPARENT_ANNOTATION}) when the tracer does that
   * (`tracing.linkWrites`): a reconcile's span. Default: false.
   */
  readonly stampWrites?: boolean;
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
  /**
   * Whether kind sources read {@link TRACEPARENT_ANNOTATION} from the objects
   * of their events, so a reconcile links to the write that triggered it
   * (`tracing.linkWrites`). Default: false.
   */
  readonly linksObjects?: boolean;
  /**
   * The `traceparent` a write made now records on its object: the current
   * span's, inside a span started with `stampWrites` (a reconcile's), else
   * undefined. Absent when writes record nothing (`tracing.linkWrites` off).
   */
  readonly writeTraceparent?: () => string | undefined;
}

/**
 * The annotation a write made inside a reconcile records its W3C trace
 * context in, with `tracing.linkWrites` on (docs/tracing.md, "Across
 * controllers"): `00-<trace ID>-<span ID>-<flags>`, 55 characters.
 *
 * @example
 * ```ts
 * const written: string | undefined = configMap.metadata?.annotations?.[TRACEPARENT_ANNOTATION]; // '00-4bf9…-00f0…-01'
 * ```
 */
export const TRACEPARENT_ANNOTATION = 'kubeloop.dev/traceparent';

/** The length of a version-00 `traceparent`: `00-` 32 hex `-` 16 hex `-` 2 hex. */
const TRACEPARENT_LENGTH = 55;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * `value` when it is a W3C `traceparent` of version 00 as the
 * recommendation writes it (lowercase hex, 55 characters, trace and span IDs
 * not all zeros), else undefined. What a cluster object carries is untrusted:
 * anything else, of any type and length, is ignored, and nothing longer
 * than 55 characters is scanned.
 *
 * @example
 * ```ts
 * parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'); // the same string
 * parseTraceparent('00-00000000000000000000000000000000-00f067aa0ba902b7-01'); // undefined
 * ```
 */
export function parseTraceparent(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length !== TRACEPARENT_LENGTH) return undefined;
  const m = TRACEPARENT.exec(value);
  if (m === null || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined;
  return value;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A copy of `obj` (create, update) whose annotations record `traceparent`;
 * `obj` itself when its metadata is not an object (the API server refuses
 * that anyway). Shallow: only the metadata and annotations are new.
 * @internal
 */
export function stampObject<T>(obj: T, traceparent: string): T {
  const meta = (obj as { metadata?: unknown }).metadata;
  if (meta !== undefined && !isRecord(meta)) return obj;
  const annotations = meta?.['annotations'];
  if (annotations !== undefined && annotations !== null && !isRecord(annotations)) return obj;
  return { ...obj, metadata: { ...meta, annotations: { ...annotations, [TRACEPARENT_ANNOTATION]: traceparent } } };
}

/**
 * The body of a merge or strategic merge patch (JSON text) that also
 * records `traceparent` in the annotations, or undefined to send the patch
 * as it is: a patch that changes nothing (`{}`, or only the resourceVersion
 * of an optimistic lock) stays a no-op, and one that removes all annotations
 * (`"annotations": null`) or the metadata is left alone.
 * @internal
 */
export function stampPatchBody(data: string, traceparent: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (!isRecord(body)) return undefined;
  const meta = body['metadata'];
  if (meta !== undefined && !isRecord(meta)) return undefined;
  const changes = Object.keys(body).filter((k) => k !== 'metadata').length + (meta === undefined ? 0 : Object.keys(meta).filter((k) => k !== 'resourceVersion').length);
  if (changes === 0) return undefined;
  const annotations = meta?.['annotations'];
  if (annotations !== undefined && !isRecord(annotations)) return undefined;
  body['metadata'] = { ...meta, annotations: { ...annotations, [TRACEPARENT_ANNOTATION]: traceparent } };
  return JSON.stringify(body);
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
