/**
 * Whether tracing is on, and how, from the manager's `tracing` option and
 * the OpenTelemetry environment variables users already set. Nothing here
 * loads OpenTelemetry: when this says "off", no OpenTelemetry module is
 * ever imported (docs/tracing.md, "Cost").
 */
import { ManagerError } from '../errors.js';

/**
 * Tracing options ({@link ManagerOptions.tracing}). Every field falls back
 * to the standard OpenTelemetry environment variable, then to a default.
 *
 * @example
 * ```ts
 * const tracing: TracingOptions = { endpoint: 'http://otel-collector.observability:4318/v1/traces', sampleRatio: 0.01 };
 * ```
 */
export interface TracingOptions {
  /**
   * Where spans go: an OTLP/HTTP (protobuf) traces URL. Default:
   * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`
   * with `/v1/traces` appended, else `http://localhost:4318/v1/traces`
   * (headers, TLS and timeout from the other `OTEL_EXPORTER_OTLP_*`
   * variables, as the OpenTelemetry SDK reads them).
   */
  readonly endpoint?: string;
  /**
   * Share of new traces recorded, 0 to 1; a span whose parent (the API
   * server's `traceparent`, say) was sampled is always recorded, one whose
   * parent was not never is. Default: from `OTEL_TRACES_SAMPLER` and
   * `OTEL_TRACES_SAMPLER_ARG` (`parentbased_traceidratio`, `always_on`...),
   * else 1 (`parentbased_always_on`, the OpenTelemetry default).
   */
  readonly sampleRatio?: number;
  /** The `service.name` of every span. Default: `OTEL_SERVICE_NAME`, else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else `kubeloop-operator`. */
  readonly serviceName?: string;
  /** How long spans wait to be sent in a batch, ms. Default: `OTEL_BSP_SCHEDULE_DELAY`, else 5 000. */
  readonly exportDelayMs?: number;
  /**
   * Link reconciles across controllers through the objects they write
   * (docs/tracing.md, "Across controllers"): a create, update or merge patch
   * made inside a reconcile records the reconcile's trace context on the
   * object, in the annotation `kubeloop.dev/traceparent` (55 bytes of value,
   * a field more in each such write); a reconcile triggered by the add or
   * update of an object whose annotation changed links to that trace.
   * Server-side apply, JSON patches and subresources record nothing. Every
   * controller of the chain needs it on (and trigger attribution, on by
   * default). Default: false.
   */
  readonly linkWrites?: boolean;
}

/** What sampler to build: a ratio of new traces, parent-based or not. */
export interface SamplerChoice {
  readonly ratio: number;
  readonly parentBased: boolean;
}

/** Tracing as resolved: `undefined` when off. */
export interface TracingConfig {
  /** undefined: the OTLP exporter's own default from the `OTEL_EXPORTER_OTLP_*` variables. */
  readonly endpoint: string | undefined;
  readonly sampler: SamplerChoice;
  readonly serviceName: string | undefined;
  readonly exportDelayMs: number;
  /** An OpenTelemetry SDK the process registered itself (`node --import ...`): used as it is, nothing else set up. */
  readonly useRegistered: boolean;
  /** Writes inside a reconcile record its trace context; reconciles link to the writes that triggered them. */
  readonly linkWrites: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The key under which `@opentelemetry/api` 1.x keeps what was registered globally: read without loading it. */
const OTEL_API_GLOBAL = Symbol.for('opentelemetry.js.api.1');

/** Whether the process already registered an OpenTelemetry tracer provider (an SDK started with `--import`). */
export function registeredTracerProvider(): boolean {
  const globals = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[OTEL_API_GLOBAL];
  return globals?.trace !== undefined;
}

function envSet(env: Env, name: string): boolean {
  const v = env[name];
  return v !== undefined && v.trim() !== '';
}

function samplerFromEnv(env: Env): SamplerChoice {
  const name = (env['OTEL_TRACES_SAMPLER'] ?? 'parentbased_always_on').trim().toLowerCase();
  const arg = env['OTEL_TRACES_SAMPLER_ARG'];
  const ratio = (): number => {
    if (arg === undefined || arg.trim() === '') return 1;
    const n = Number(arg);
    if (!Number.isFinite(n) || n < 0 || n > 1) throw new ManagerError('InvalidOptions', `OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 for ${name}, got ${JSON.stringify(arg)}`);
    return n;
  };
  switch (name) {
    case 'always_on': return { ratio: 1, parentBased: false };
    case 'always_off': return { ratio: 0, parentBased: false };
    case 'traceidratio': return { ratio: ratio(), parentBased: false };
    case 'parentbased_always_on': return { ratio: 1, parentBased: true };
    case 'parentbased_always_off': return { ratio: 0, parentBased: true };
    case 'parentbased_traceidratio': return { ratio: ratio(), parentBased: true };
    default:
      throw new ManagerError('InvalidOptions', `OTEL_TRACES_SAMPLER=${JSON.stringify(name)} is not supported: use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio`);
  }
}

function positive(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new ManagerError('InvalidOptions', `tracing.${name} must be a number >= 0, got ${String(value)}`);
  return value;
}

/**
 * Resolve the `tracing` option against the environment: off unless the
 * option asks for tracing, or the environment names an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or
 * `OTEL_TRACES_EXPORTER=otlp`, or the process registered an OpenTelemetry
 * SDK itself. `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` and
 * `tracing: false` turn it off whatever else is set. Bad values are
 * ManagerError `InvalidOptions`.
 */
export function resolveTracing(option: boolean | TracingOptions | undefined, env: Env = process.env): TracingConfig | undefined {
  if (option === false) return undefined;
  if (option !== undefined && option !== true && (typeof option !== 'object' || option === null)) {
    throw new ManagerError('InvalidOptions', `tracing must be true, false or an options object, got ${typeof option}`);
  }
  if (env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true') return undefined;
  const exporter = env['OTEL_TRACES_EXPORTER']?.trim().toLowerCase();
  if (exporter === 'none') return undefined;
  if (exporter !== undefined && exporter !== '' && exporter !== 'otlp') {
    throw new ManagerError('InvalidOptions', `OTEL_TRACES_EXPORTER=${JSON.stringify(exporter)} is not supported by kubeloop: use otlp (OTLP over HTTP with protobuf) or none`);
  }
  const registered = registeredTracerProvider();
  const wanted = option !== undefined || registered || exporter === 'otlp' || envSet(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') || envSet(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (!wanted) return undefined;
  const protocol = (env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ?? env['OTEL_EXPORTER_OTLP_PROTOCOL'])?.trim();
  if (!registered && protocol && protocol !== 'http/protobuf') {
    throw new ManagerError('InvalidOptions', `OTEL_EXPORTER_OTLP_PROTOCOL=${JSON.stringify(protocol)} is not supported by kubeloop: use http/protobuf (port 4318 of a collector)`);
  }
  const options: TracingOptions = typeof option === 'object' ? option : {};
  const ratio = positive('sampleRatio', options.sampleRatio);
  if (ratio !== undefined && ratio > 1) throw new ManagerError('InvalidOptions', `tracing.sampleRatio must be from 0 to 1, got ${ratio}`);
  if (options.endpoint !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(options.endpoint);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new ManagerError('InvalidOptions', `tracing.endpoint must be an http(s) URL such as http://otel-collector:4318/v1/traces, got ${JSON.stringify(options.endpoint)}`);
  }
  if (options.serviceName !== undefined && (typeof options.serviceName !== 'string' || options.serviceName === '')) throw new ManagerError('InvalidOptions', 'tracing.serviceName must be a non-empty string');
  if (options.linkWrites !== undefined && typeof options.linkWrites !== 'boolean') throw new ManagerError('InvalidOptions', `tracing.linkWrites must be true or false, got ${typeof options.linkWrites}`);
  const delayEnv = env['OTEL_BSP_SCHEDULE_DELAY'];
  const exportDelayMs = positive('exportDelayMs', options.exportDelayMs) ?? (delayEnv !== undefined && Number.isFinite(Number(delayEnv)) && Number(delayEnv) >= 0 ? Number(delayEnv) : 5_000);
  return {
    endpoint: options.endpoint,
    sampler: ratio !== undefined ? { ratio, parentBased: true } : samplerFromEnv(env),
    serviceName: options.serviceName,
    exportDelayMs,
    useRegistered: registered,
    linkWrites: options.linkWrites === true,
  };
}
