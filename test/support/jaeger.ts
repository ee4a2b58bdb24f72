/**
 * A real trace backend for tracing tests: Jaeger (v2, the all-in-one
 * `cmd/jaeger`, an OpenTelemetry Collector distribution) built from the Go
 * module proxy as helm is (test/support/helm.ts) and cached by version
 * under ~/.cache/kubeloop/jaeger/<version>/jaeger; `KUBELOOP_JAEGER` names
 * one to use instead. Started on loopback ports of its own with in-memory
 * storage: OTLP over gRPC (what kube-apiserver sends) and HTTP (what
 * kubeloop sends), and the query API the tests read traces from.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './net.ts';
import { cachedTool, runTool } from './tool-cache.ts';

/** The Jaeger release the tests build (an approved release of `github.com/jaegertracing/jaeger`). */
export const JAEGER_VERSION = 'v1.75.0';

/**
 * The path of a Jaeger binary: `KUBELOOP_JAEGER`, else the cached build of
 * {@link JAEGER_VERSION}, else one built now in a wrapper module (`go get
 * -tool github.com/jaegertracing/jaeger/cmd/jaeger@<version>`, then `go
 * build`), moved into the cache when done so a killed build leaves nothing
 * half-written. A cold build takes many minutes on two cores.
 */
export async function jaegerBinary(): Promise<string> {
  const given = process.env['KUBELOOP_JAEGER'];
  if (given) return given;
  return cachedTool('jaeger', JAEGER_VERSION, 'jaeger', async (work) => {
    const go = process.env['KUBELOOP_GO'] ?? 'go';
    const env = { ...process.env, GOFLAGS: '-buildvcs=false' };
    const steps: (readonly string[])[] = [
      ['mod', 'init', 'kubeloop.local/jaeger-build'],
      ['get', '-tool', `github.com/jaegertracing/jaeger/cmd/jaeger@${JAEGER_VERSION}`],
      ['build', '-trimpath', '-o', 'jaeger', 'github.com/jaegertracing/jaeger/cmd/jaeger'],
    ];
    for (const step of steps) {
      const done = await runTool(go, step, { cwd: work, env });
      if (done.code !== 0) throw new Error(`go ${step.join(' ')} exited ${done.code}:\n${done.output.slice(-4000)}`);
    }
  });
}

/** A span as Jaeger's query API returns it. */
export interface JaegerSpan {
  readonly traceID: string;
  readonly spanID: string;
  readonly operationName: string;
  readonly references?: readonly { readonly refType: string; readonly traceID: string; readonly spanID: string }[];
  readonly tags: readonly { readonly key: string; readonly value: unknown }[];
  readonly processID: string;
  readonly startTime: number;
  readonly duration: number;
}

/** A trace as Jaeger's query API returns it. */
export interface JaegerTrace {
  readonly traceID: string;
  readonly spans: readonly JaegerSpan[];
  readonly processes: Readonly<Record<string, { readonly serviceName: string }>>;
}

/** A running Jaeger. */
export interface Jaeger extends AsyncDisposable {
  /** host:port of the OTLP gRPC receiver (kube-apiserver's `endpoint`). */
  readonly otlpGrpc: string;
  /** The OTLP/HTTP traces URL (`http://127.0.0.1:<port>/v1/traces`). */
  readonly otlpHttpTraces: string;
  /** The OTLP/HTTP base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it. */
  readonly otlpHttp: string;
  /** The query API's base URL. */
  readonly queryUrl: string;
  /** The traces of `service` (most recent first, at most `limit`). */
  traces(service: string, limit?: number): Promise<JaegerTrace[]>;
  /** One trace by ID, or undefined. */
  trace(traceId: string): Promise<JaegerTrace | undefined>;
  /** The services Jaeger has seen spans of. */
  services(): Promise<string[]>;
  stop(): Promise<void>;
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** The value of a span's tag, or undefined. */
export function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

/** The span's parent span ID (a CHILD_OF reference), or undefined for a root. */
export function parentOf(span: JaegerSpan): string | undefined {
  return span.references?.find((r) => r.refType === 'CHILD_OF')?.spanID;
}

/**
 * Start Jaeger on free loopback ports (or the OTLP/HTTP and query ports
 * given) with in-memory storage; resolves once its query API answers. Stop it with `stop()` (or `await using`).
 *
 * @example
 * ```ts
 * await using jaeger = await startJaeger();
 * const traces = await jaeger.traces('harddisk-operator');
 * ```
 */
export async function startJaeger(ports: { readonly otlpHttp?: number; readonly query?: number } = {}): Promise<Jaeger> {
  const binary = await jaegerBinary();
  // Free ports are chosen before Jaeger binds them; another process on a
  // busy machine can take one in between. Try again with fresh ports then
  // (fixed ports a doc's commands name are not chosen again: a clash there is the caller's).
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreshPorts(binary, ports);
    } catch (err) {
      if (attempt >= 4 || !(err instanceof PortTakenError)) throw err;
    }
  }
}

class PortTakenError extends Error {}

async function startOnFreshPorts(binary: string, ports: { readonly otlpHttp?: number; readonly query?: number }): Promise<Jaeger> {
  // Free ports, or the ones a doc's commands name (4318 for OTLP/HTTP, 16686 for the query API, Jaeger's defaults).
  const [grpc, http, query, queryGrpc, health] = [await freePort(), ports.otlpHttp ?? (await freePort()), ports.query ?? (await freePort()), await freePort(), await freePort()];
  const dir = await mkdtemp(join(tmpdir(), 'jaeger-'));
  const config = join(dir, 'config.yaml');
  await writeFile(config, `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:${health}
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${query}
    grpc:
      endpoint: 127.0.0.1:${queryGrpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${grpc}
      http:
        endpoint: 127.0.0.1:${http}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`);
  const child: ChildProcess = spawn(binary, ['--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-8000)));
  child.stderr?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-8000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  const queryUrl = `http://127.0.0.1:${query}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (gone) {
      await rm(dir, { recursive: true, force: true });
      const message = `jaeger exited before it was ready:\n${output}`;
      throw output.includes('address already in use') ? new PortTakenError(message) : new Error(message);
    }
    const ok = await fetch(`${queryUrl}/api/services`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`jaeger was not ready within 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const stop = async (): Promise<void> => {
    if (!gone) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  return {
    otlpGrpc: `127.0.0.1:${grpc}`,
    otlpHttp: `http://127.0.0.1:${http}`,
    otlpHttpTraces: `http://127.0.0.1:${http}/v1/traces`,
    queryUrl,
    async traces(service, limit = 1000) {
      const body = (await getJson(`${queryUrl}/api/traces?service=${encodeURIComponent(service)}&limit=${limit}&lookback=1h`)) as { data: JaegerTrace[] | null };
      return body.data ?? [];
    },
    async trace(traceId) {
      const res = await fetch(`${queryUrl}/api/traces/${traceId}`);
      if (res.status === 404) return undefined;
      if (!res.ok) throw new Error(`GET trace ${traceId}: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { data: JaegerTrace[] }).data[0];
    },
    async services() {
      return ((await getJson(`${queryUrl}/api/services`)) as { data: string[] | null }).data ?? [];
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
