/**
 * The Grafana dashboard the scaffold ships (packages/create-kubeloop/templates/config/grafana/
 * kubeloop-operator.json), checked the way Grafana would use it: the example operator runs on a
 * control plane of its own (`--envtest`, with its webhooks and leader election), a real Prometheus
 * (Debian package `prometheus`; scripts/test.sh installs it) scrapes its /metrics every second, and
 * every query of every panel, with the dashboard's variables set to "All", must return series
 * from Prometheus's HTTP API; so must the variables' own `label_values` queries. The dashboard must
 * also show every controller-runtime, workqueue and kubeloop metric family the operator serves, and
 * name only metrics docs/metrics.md documents. The operator runs with tracing on (the OpenTelemetry
 * variables, exporting to a real Jaeger) and Prometheus keeps exemplars: every query the dashboard
 * asks exemplars for must return some, each naming (trace_id) a trace of a reconcile Jaeger holds.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/net.js';
import { startJaeger } from './support/jaeger.js';
import type { Jaeger } from './support/jaeger.js';

const root = join(import.meta.dirname, '..');
const DASHBOARD = join(root, 'packages', 'create-kubeloop', 'templates', 'config', 'grafana', 'kubeloop-operator.json');
const MINUTE = 60_000;
/** The job name Prometheus gives the operator's series, as a ServiceMonitor gives its Service's name. */
const JOB = 'harddisk-operator';

interface Target {
  readonly expr: string;
  readonly refId: string;
  readonly exemplar?: boolean;
}
interface Panel {
  readonly type: string;
  readonly title: string;
  readonly targets?: readonly Target[];
}
interface Variable {
  readonly name: string;
  readonly type: string;
  readonly allValue?: string;
  readonly definition?: string;
}
interface Dashboard {
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly Variable[] };
}

/**
 * Families the operator serves that no panel shows: they have no series until the first occurrence,
 * so a panel would stay empty (docs/metrics.md says to alert on them instead).
 */
const NOT_SHOWN: Readonly<Record<string, string>> = {
  kubeloop_client_warnings_total: 'no series until the API server answers with a Warning header',
  kubeloop_webhook_failures_total: 'no series until a webhook request fails',
  kubeloop_informer_shard_server_filtered: 'no series unless an informer is sharded by a field the API server can filter (the operator here is not sharded); /readyz?verbose says it too',
};

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;

/** Where Prometheus is: KUBELOOP_PROMETHEUS, or `prometheus` on PATH; undefined when neither runs. */
function prometheusBinary(): string | undefined {
  const candidate = process.env['KUBELOOP_PROMETHEUS'] ?? 'prometheus';
  return spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0 ? candidate : undefined;
}
const prometheus = prometheusBinary();

/** A panel query as Grafana sends it with every variable on "All" (their allValue) and a 2-minute rate window. */
function asSent(expr: string): string {
  let out = expr.replaceAll('$__rate_interval', '2m');
  for (const v of dashboard.templating.list) if (v.allValue !== undefined) out = out.replaceAll(`$${v.name}`, v.allValue);
  if (/\$\w/.test(out)) throw new Error(`a variable the test does not know is left in ${out}`);
  return out;
}

/** The metric names a PromQL expression reads (identifiers followed by a selector or range). */
function metricsOf(expr: string): string[] {
  return [...expr.matchAll(/\b([a-z_][a-z0-9_]*)\{/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, ''));
}

interface QueryResult {
  readonly status: string;
  readonly error?: string;
  readonly data?: { readonly result: readonly { readonly metric: Record<string, string>; readonly value: readonly [number, string] }[] };
}

describe.skipIf(!prometheus)(`the Grafana dashboard against a scraped operator${prometheus ? '' : ' (skipped: no prometheus binary; install the Debian package prometheus, as scripts/test.sh does, or set KUBELOOP_PROMETHEUS)'}`, () => {
  let work: string;
  let operator: ChildProcess | undefined;
  let server: ChildProcess | undefined;
  let promUrl: string;
  let metricsUrl: string;
  let jaeger: Jaeger | undefined;
  let logs = '';

  const query = async (expr: string): Promise<QueryResult> => {
    const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
    return (await res.json()) as QueryResult;
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'kubeloop-dashboard-'));
    const [metricsPort, probePort, promPort] = [await freePort(), await freePort(), await freePort()];
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    promUrl = `http://127.0.0.1:${promPort}`;
    writeFileSync(
      join(work, 'prometheus.yml'),
      ['global:', '  scrape_interval: 1s', '  evaluation_interval: 1s', 'scrape_configs:', `  - job_name: ${JOB}`, '    static_configs:', `      - targets: ['127.0.0.1:${metricsPort}']`, ''].join('\n'),
    );
    // Prometheus first, so the operator's start (its first reconciles, webhook calls, list) is scraped.
    const traces = await startJaeger();
    jaeger = traces;
    // Exemplar storage: Prometheus keeps the exemplars of what it scrapes in OpenMetrics (which it asks for first).
    server = spawn(prometheus!, ['--config.file', join(work, 'prometheus.yml'), '--storage.tsdb.path', join(work, 'data'), '--web.listen-address', `127.0.0.1:${promPort}`, '--enable-feature=exemplar-storage'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let promLogs = '';
    server.stdout!.on('data', (d: Buffer) => (promLogs = (promLogs + d.toString()).slice(-20_000)));
    server.stderr!.on('data', (d: Buffer) => (promLogs = (promLogs + d.toString()).slice(-20_000)));
    const deadline = Date.now() + 3 * MINUTE;
    while (!(await fetch(`${promUrl}/-/ready`).then((r) => r.ok, () => false))) {
      if (server.exitCode !== null) throw new Error(`prometheus exited ${server.exitCode}:\n${promLogs.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`prometheus was not ready within 3 minutes:\n${promLogs.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    operator = spawn('node', [join(root, 'examples', 'harddisk-operator', 'dist', 'main.js'), '--envtest', '--leader-elect', '--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-probe-bind-address', `127.0.0.1:${probePort}`], {
      cwd: join(root, 'examples', 'harddisk-operator'),
      // Tracing on, as docs/tracing.md turns it on: the reconcile-time histogram then carries exemplars.
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: traces.otlpHttp, OTEL_SERVICE_NAME: JOB, OTEL_BSP_SCHEDULE_DELAY: '200' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    operator.stdout!.on('data', (d: Buffer) => (logs = (logs + d.toString()).slice(-100_000)));
    operator.stderr!.on('data', (d: Buffer) => (logs = (logs + d.toString()).slice(-100_000)));
    // The sample reconciled (its ConfigMap bound), then at least five scrapes of the operator.
    while (!logs.split('\n').some((l) => l.includes('"msg":"sample-disk status"') && l.includes('"phase":"Bound"'))) {
      if (operator.exitCode !== null) throw new Error(`the operator exited ${operator.exitCode}:\n${logs.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`the operator did not reconcile its sample within 3 minutes:\n${logs.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    // Work while Prometheus watches: a histogram's or counter's series starts at its first
    // observation, so a rate (and a quantile) needs observations after that, in later scrapes.
    const kubeconfig = /"kubeconfig":"([^"]+)"/.exec(logs)?.[1];
    if (!kubeconfig) throw new Error(`the operator logged no kubeconfig:\n${logs.slice(-3000)}`);
    for (let i = 0; i < 5; i++) {
      const disk = { apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: `dashboard-disk-${i}`, namespace: 'default' }, spec: { size: `${i + 1}Gi`, storageClass: 'fast' } };
      const applied = spawnSync('kubectl', ['--kubeconfig', kubeconfig, 'apply', '--server-side', '-f', '-'], { input: JSON.stringify(disk), encoding: 'utf8' });
      if (applied.status !== 0) throw new Error(`kubectl apply ${disk.metadata.name}: ${applied.stderr}`);
      await new Promise((r) => setTimeout(r, 1_500));
    }
    // Two scrapes after the last write, and five in all.
    const lastWrite = Date.now() / 1000;
    for (;;) {
      const up = await query(`timestamp(up{job="${JOB}"} == 1) > ${lastWrite + 2} and count_over_time(up{job="${JOB}"}[2m]) >= 5`);
      if ((up.data?.result.length ?? 0) > 0) break;
      if (Date.now() > deadline) throw new Error(`prometheus did not scrape the operator twice after the last write within 3 minutes: ${JSON.stringify(up)}\n${promLogs.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }, 5 * MINUTE);

  afterAll(async () => {
    for (const child of [operator, server]) {
      if (!child || child.exitCode !== null || child.signalCode !== null) continue;
      const closed = new Promise((r) => child.once('close', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await closed;
      clearTimeout(timer);
    }
    await jaeger?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 2 * MINUTE);

  it('every query the dashboard shows exemplars of returns some, each the trace_id of a reconcile trace Jaeger holds', async () => {
    const targets = dashboard.panels.flatMap((p) => (p.targets ?? []).filter((t) => t.exemplar === true).map((t) => ({ panel: p.title, expr: asSent(t.expr) })));
    expect(targets.map((t) => t.panel)).toEqual(['Reconcile time (p50, p99)']);
    for (const { panel, expr } of targets) {
      const now = Date.now() / 1000;
      const res = (await (await fetch(`${promUrl}/api/v1/query_exemplars?query=${encodeURIComponent(expr)}&start=${now - 600}&end=${now}`)).json()) as { status: string; error?: string; data?: { seriesLabels: Record<string, string>; exemplars: { labels: Record<string, string>; value: string }[] }[] };
      expect(res.status, `${panel}: ${res.error ?? ''}`).toBe('success');
      const traceIds = (res.data ?? []).flatMap((s) => s.exemplars.map((e) => e.labels['trace_id']));
      expect(traceIds.length, `${panel}: no exemplars for ${expr}`).toBeGreaterThan(0);
      for (const id of traceIds) expect(id).toMatch(/^[0-9a-f]{32}$/);
      // The dot opens its trace: Jaeger holds it (spans are sent in batches: it may take a moment).
      const deadline = Date.now() + 2 * MINUTE;
      let found: string | undefined;
      while (found === undefined && Date.now() < deadline) {
        for (const id of traceIds) {
          const trace = await jaeger!.trace(id!);
          if (trace?.spans.some((sp) => sp.operationName === 'reconcile harddisk')) found = id;
        }
        if (found === undefined) await new Promise((r) => setTimeout(r, 500));
      }
      expect(found, `${panel}: none of ${traceIds.join(', ')} is a reconcile trace in Jaeger`).toBeDefined();
    }
  }, 3 * MINUTE);

  it('every panel query returns series with a value, the variables set to All', async () => {
    const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: asSent(t.expr) })));
    expect(queries.length).toBeGreaterThan(30);
    const empty: string[] = [];
    for (const { panel, expr } of queries) {
      const r = await query(expr);
      expect(r.status, `${panel}: ${expr}: ${r.error ?? ''}`).toBe('success');
      const result = r.data?.result ?? [];
      // A series whose value is NaN (a quantile of no observations) draws nothing: that is empty too.
      if (!result.some((s) => Number.isFinite(Number(s.value[1])))) empty.push(`${panel}: ${expr} -> ${JSON.stringify(result)}`);
    }
    expect(empty, `the operator's logs:\n${logs.slice(-2000)}`).toEqual([]);
  });

  it("the variables' label_values queries list the operator's job and controller", async () => {
    const values: Record<string, string[]> = {};
    for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) {
      const m = /^label_values\((.+),\s*(\w+)\)$/.exec(v.definition ?? '');
      expect(m, `${v.name}: ${v.definition}`).not.toBeNull();
      const res = (await (await fetch(`${promUrl}/api/v1/label/${m![2]}/values?match[]=${encodeURIComponent(asSent(m![1]!))}`)).json()) as { data: string[] };
      values[v.name] = res.data;
    }
    expect(values).toEqual({ job: [JOB], controller: ['harddisk'] });
  });

  it('shows every controller-runtime, workqueue and kubeloop metric the operator serves, and only documented ones', async () => {
    const shown = new Set(dashboard.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => metricsOf(t.expr))));
    const families = (await (await fetch(metricsUrl)).text()).split('\n').filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]!);
    const ours = families.filter((n) => /^(controller_runtime_|workqueue_|rest_client_|leader_election_|kubeloop_)/.test(n));
    expect(ours.length).toBeGreaterThan(30);
    expect(ours.filter((n) => !shown.has(n) && !(n in NOT_SHOWN))).toEqual([]);
    expect(Object.keys(NOT_SHOWN).filter((n) => shown.has(n) || !ours.includes(n))).toEqual([]);
    // Nothing shown that the operator does not serve (a renamed metric would leave an empty panel).
    expect([...shown].filter((n) => !families.includes(n))).toEqual([]);
    const documented = readFileSync(join(root, 'docs', 'metrics.md'), 'utf8');
    expect([...shown].filter((n) => ours.includes(n) && !documented.includes(`\`${n}\``))).toEqual([]);
  });
});
