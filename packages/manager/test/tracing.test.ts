/**
 * Tracing (docs/tracing.md) with real parts: a manager on the shared
 * kube-apiserver exports OTLP to a real Jaeger; Jaeger's query API shows a
 * reconcile span with the controller, object, reconcile ID and result, its
 * API requests as children (verb, resource, status code), a failed request
 * marked as such, the read-your-writes read that went live, and the
 * reconcile's log lines carry the span's trace and span IDs. When the
 * environment asks for nothing, tracing is off; bad settings are
 * ManagerError InvalidOptions saying what to write.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlreadyExists, isNotFound, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap, Secret } from '@kubeloop/scheme';
import { createShardRing } from '@kubeloop/leaderelection';
import { createLogger, isManagerError, ringLeadership, TRACEPARENT_ANNOTATION } from '../src/index.js';
import type { Trigger } from '../src/index.js';
import { resolveTracing } from '../src/tracing/config.js';
import { parseTraceparent } from '@kubeloop/client/internal';
import { uniqueName } from '../../../test/support/env.js';
import { parentOf, startJaeger, tag } from '../../../test/support/jaeger.js';
import type { Jaeger, JaegerSpan, JaegerTrace } from '../../../test/support/jaeger.js';
import { eventually, metric, newNamespace, run, synced, testClient, testManager } from './support.js';

describe('whether tracing is on', () => {
  it('is off when neither the option nor the environment asks for it, and off whatever else is set with OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none or tracing: false', () => {
    expect(resolveTracing(undefined, {})).toBeUndefined();
    expect(resolveTracing(undefined, { OTEL_SERVICE_NAME: 'x' })).toBeUndefined();
    expect(resolveTracing(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(resolveTracing(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(resolveTracing(false, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBeUndefined();
  });

  it('is on with the standard variables, sampling as OTEL_TRACES_SAMPLER says (parent-based, all by default)', () => {
    expect(resolveTracing(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })?.sampler).toEqual({ ratio: 1, parentBased: true });
    expect(resolveTracing(undefined, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBeDefined();
    expect(resolveTracing(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' })?.sampler).toEqual({ ratio: 0.01, parentBased: true });
    expect(resolveTracing({ sampleRatio: 0.5 }, {})?.sampler).toEqual({ ratio: 0.5, parentBased: true });
    expect(resolveTracing(true, { OTEL_BSP_SCHEDULE_DELAY: '250' })?.exportDelayMs).toBe(250);
  });

  it('refuses what it cannot do with ManagerError InvalidOptions saying what to write', () => {
    const reason = (f: () => unknown): string => {
      try {
        f();
      } catch (err) {
        return isManagerError(err) ? `${err.reason}: ${err.message}` : String(err);
      }
      return 'no error';
    };
    expect(reason(() => resolveTracing(undefined, { OTEL_TRACES_EXPORTER: 'zipkin' }))).toMatch(/^InvalidOptions: .*use otlp/);
    expect(reason(() => resolveTracing(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }))).toMatch(/^InvalidOptions: .*http\/protobuf/);
    expect(reason(() => resolveTracing(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'lots' }))).toMatch(/^InvalidOptions: .*from 0 to 1/);
    expect(reason(() => resolveTracing(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' }))).toMatch(/^InvalidOptions: .*parentbased_traceidratio/);
    expect(reason(() => resolveTracing({ endpoint: 'collector:4318' }, {}))).toMatch(/^InvalidOptions: .*http\(s\) URL/);
    expect(reason(() => resolveTracing({ sampleRatio: 2 }, {}))).toMatch(/^InvalidOptions: .*from 0 to 1/);
    expect(reason(() => testManager('default', { tracing: 'yes' as unknown as boolean }))).toMatch(/^InvalidOptions: .*tracing/);
  });
});

describe('spans in a real Jaeger', () => {
  let client: Client;
  let ns: string;
  let jaeger: Jaeger;
  beforeAll(async () => {
    client = testClient();
    ns = await newNamespace(client, 'tracing');
    jaeger = await startJaeger();
  }, 1_800_000); // a cold build of Jaeger takes many minutes
  afterAll(async () => {
    client.transport.close();
    await jaeger?.stop();
  });

  const spansOf = (t: JaegerTrace, name: string): JaegerSpan[] => t.spans.filter((s) => s.operationName === name);

  it('a reconcile is one trace: its span names controller, object, reconcile ID and result; its API requests are its children with verb, resource and status; its log lines carry its IDs', async () => {
    const service = uniqueName('tracing-test');
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'info', destination: new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), cb()) }) });
    const manager = testManager(ns, { logger, uncached: [Secret], tracing: { endpoint: jaeger.otlpHttpTraces, serviceName: service, exportDelayMs: 100 } });
    const reconciled = new Set<string>();
    manager.addController({ name: 'tracing-cm', for: ConfigMap }, async (req, ctx) => {
      // A live read of a missing Secret (a 404), then a write, then a read of what was written.
      try {
        await manager.client.get(Secret, { namespace: req.namespace ?? ns, name: `${req.name}-secret` });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      await manager.client.patch(ConfigMap, req, mergePatch({ metadata: { annotations: { 'tracing.test/seen': 'yes' } } }));
      await manager.client.get(ConfigMap, req);
      ctx.log.info({ step: 'patched' }, 'reconciled a ConfigMap');
      reconciled.add(ctx.reconcileID);
    });
    const running = run(manager);
    try {
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'traced', namespace: ns }, data: { a: '1' } });
      await eventually(() => reconciled.size, (n) => n >= 1, 'a reconcile of the ConfigMap', 60_000);
      // Writes record no trace context unless tracing.linkWrites asks for it.
      const written = await client.get(ConfigMap, { namespace: ns, name: 'traced' });
      expect(written.metadata?.annotations?.['tracing.test/seen']).toBe('yes');
      expect(written.metadata?.annotations?.[TRACEPARENT_ANNOTATION]).toBeUndefined();
    } finally {
      await running.stop(); // flushes the spans
    }
    const logged = lines.find((l) => l['msg'] === 'reconciled a ConfigMap');
    expect(logged).toBeDefined();
    const traceId = logged!['trace_id'] as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const trace = await eventually(() => jaeger.trace(traceId), (t) => t !== undefined && t.spans.length >= 4, `trace ${traceId} in Jaeger`, 60_000);
    const [reconcile] = spansOf(trace!, 'reconcile tracing-cm');
    expect(reconcile).toBeDefined();
    expect(trace!.processes[reconcile!.processID]?.serviceName).toBe(service);
    expect(reconcile!.spanID).toBe(logged!['span_id']);
    expect(parentOf(reconcile!)).toBeUndefined();
    expect(tag(reconcile!, 'kubeloop.controller')).toBe('tracing-cm');
    expect(tag(reconcile!, 'k8s.namespace.name')).toBe(ns);
    expect(tag(reconcile!, 'kubeloop.object.name')).toBe('traced');
    expect(tag(reconcile!, 'kubeloop.reconcile.id')).toBe(logged!['reconcileID']);
    expect(tag(reconcile!, 'kubeloop.reconcile.result')).toBe('success');
    expect(tag(reconcile!, 'kubeloop.reconcile.requeue')).toBe(false);

    const children = trace!.spans.filter((s) => parentOf(s) === reconcile!.spanID);
    const secretGet = children.find((s) => s.operationName === 'get secrets');
    expect(secretGet).toBeDefined();
    expect(tag(secretGet!, 'http.response.status_code')).toBe(404);
    expect(tag(secretGet!, 'k8s.object.name')).toBe('traced-secret');
    expect(tag(secretGet!, 'error')).toBe(true);
    const patch = children.find((s) => s.operationName === 'patch configmaps');
    expect(patch).toBeDefined();
    expect(tag(patch!, 'k8s.verb')).toBe('patch');
    expect(tag(patch!, 'k8s.namespace.name')).toBe(ns);
    expect(tag(patch!, 'http.response.status_code')).toBe(200);
    // The read after the write waited for the cache (read-your-writes): a span of its own, saying where the answer came from.
    const ryw = children.find((s) => s.operationName === 'read-your-writes get ConfigMap');
    expect(ryw).toBeDefined();
    expect(['cache', 'live', 'written']).toContain(tag(ryw!, 'kubeloop.read.source'));
  });

  it('a shard ring member taking its buckets and the leadership they carry: each change a trace of its own', async () => {
    const service = uniqueName('tracing-ring');
    const ringName = uniqueName('ring');
    const ring = createShardRing({ client, namespace: ns, name: ringName, identity: 'member-0', buckets: 4 });
    const manager = testManager(ns, { leadership: ringLeadership(ring), tracing: { endpoint: jaeger.otlpHttpTraces, serviceName: service, exportDelayMs: 100 } });
    const running = run(manager);
    try {
      await eventually(() => manager.isLeader(), (l) => l, 'member-0 to lead (it holds every bucket, the leader bucket among them)', 60_000);
    } finally {
      await running.stop(); // stops the buckets: a second change
    }
    const spans = (await eventually(() => jaeger.traces(service), (ts) => ts.flatMap((t) => t.spans).filter((s) => s.operationName === 'shard ring change').length >= 2 && ts.some((t) => t.spans.some((s) => s.operationName === 'leadership started')), 'the ring changes and the leadership in Jaeger', 60_000)).flatMap((t) => t.spans);
    const changes = spans.filter((s) => s.operationName === 'shard ring change');
    for (const change of changes) {
      expect(parentOf(change)).toBeUndefined();
      expect(tag(change, 'kubeloop.ring')).toBe(ringName);
      expect(tag(change, 'kubeloop.ring.member')).toBe('member-0');
    }
    // Jaeger shows a string-array attribute as its JSON.
    expect(changes.map((s) => JSON.parse(tag(s, 'kubeloop.ring.started') as string) as string[]).some((b) => b.length === 4)).toBe(true);
    expect(changes.map((s) => JSON.parse(tag(s, 'kubeloop.ring.stopped') as string) as string[]).some((b) => b.length === 4)).toBe(true);
    const leading = spans.find((s) => s.operationName === 'leadership started')!;
    expect(parentOf(leading)).toBeUndefined();
    expect(String(tag(leading, 'kubeloop.leadership'))).toContain(ringName);
  });

  it('across controllers with linkWrites: the ConfigMap a reconcile writes records its trace context, and the reconcile of that ConfigMap by another controller links to it (a link, not a parent); a malformed annotation is ignored', async () => {
    const service = uniqueName('tracing-links');
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'info', destination: new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), cb()) }) });
    const manager = testManager(ns, { logger, tracing: { endpoint: jaeger.otlpHttpTraces, serviceName: service, exportDelayMs: 100, linkWrites: true } });
    // A: a Secret's reconcile creates a ConfigMap, then changes it with a merge patch.
    manager.addController({ name: 'links-writer', for: Secret }, async (req, ctx) => {
      if (!req.name.startsWith('source')) return;
      const name = `${req.name}-derived`;
      try {
        await manager.client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { from: req.name } });
        ctx.log.info({ cm: name, op: 'create' }, 'wrote the derived ConfigMap');
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        await manager.client.patch(ConfigMap, { namespace: ns, name }, mergePatch({ data: { again: String(Date.now()) } }));
        ctx.log.info({ cm: name, op: 'patch' }, 'wrote the derived ConfigMap');
      }
    });
    // B: reconciles ConfigMaps, writes nothing.
    const seen: { name: string; triggers: readonly Trigger[]; reconcileID: string; traceId?: unknown; spanId?: unknown }[] = [];
    manager.addController({ name: 'links-reader', for: ConfigMap }, (req, ctx) => {
      ctx.log.info({ cm: req.name }, 'read a ConfigMap');
      seen.push({ name: req.name, triggers: ctx.triggers, reconcileID: ctx.reconcileID });
      return Promise.resolve();
    });
    const malformed: Record<string, string> = {
      'bad-garbage': 'garbage',
      'bad-long': `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01${'-x'.repeat(50_000)}`,
      'bad-zero-trace': `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`,
      'bad-upper': `00-${'A'.repeat(32)}-${'b'.repeat(16)}-01`,
      'bad-version': `ff-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
    };
    const running = run(manager);
    let annotation: string | undefined;
    let patchedAnnotation: string | undefined;
    try {
      await synced(manager); // so every object below comes as an add event, not in a first list
      await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'source', namespace: ns }, stringData: { k: 'v' } });
      for (const [name, value] of Object.entries(malformed)) await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, annotations: { [TRACEPARENT_ANNOTATION]: value } } });
      await eventually(() => seen.filter((s) => s.name === 'source-derived' && s.triggers.some((t) => t.traceparent !== undefined)).length, (n) => n >= 1, 'B to reconcile the derived ConfigMap, triggered by its creation', 60_000);
      annotation = (await client.get(ConfigMap, { namespace: ns, name: 'source-derived' })).metadata?.annotations?.[TRACEPARENT_ANNOTATION];
      // A second write of A (a merge patch, after a change of the Secret) records its own reconcile's context.
      await client.patch(Secret, { namespace: ns, name: 'source' }, mergePatch({ stringData: { k: 'v2' } }));
      await eventually(() => lines.filter((l) => l['msg'] === 'wrote the derived ConfigMap' && l['op'] === 'patch').length, (n) => n >= 1, 'A to patch the derived ConfigMap', 60_000);
      patchedAnnotation = await eventually(async () => (await client.get(ConfigMap, { namespace: ns, name: 'source-derived' })).metadata?.annotations?.[TRACEPARENT_ANNOTATION], (a) => a !== annotation, 'the patch to record a new trace context', 60_000);
      await eventually(() => seen.filter((s) => s.triggers.some((t) => t.traceparent === patchedAnnotation)).length, (n) => n >= 1, 'B to reconcile the patched ConfigMap', 60_000);
      await eventually(() => Object.keys(malformed).every((name) => seen.some((s) => s.name === name)), (ok) => ok, 'B to reconcile the ConfigMaps with malformed annotations', 60_000);
    } finally {
      await running.stop(); // flushes the spans
    }
    for (const r of seen) {
      const logged = lines.find((l) => l['msg'] === 'read a ConfigMap' && l['reconcileID'] === r.reconcileID);
      r.traceId = logged?.['trace_id'];
      r.spanId = logged?.['span_id'];
    }
    // A's create recorded A's reconcile: 00-<its trace ID>-<its span ID>-01.
    const created = lines.find((l) => l['msg'] === 'wrote the derived ConfigMap' && l['op'] === 'create')!;
    expect(created).toBeDefined();
    expect(annotation).toBe(`00-${String(created['trace_id'])}-${String(created['span_id'])}-01`);
    const patched = lines.findLast((l) => l['msg'] === 'wrote the derived ConfigMap' && l['op'] === 'patch')!;
    expect(patchedAnnotation).toBe(`00-${String(patched['trace_id'])}-${String(patched['span_id'])}-01`);

    // B's reconcile: a trace of its own, whose span links to A's reconcile span.
    for (const [writer, value] of [[created, annotation], [patched, patchedAnnotation]] as const) {
      const reconcile = seen.find((s) => s.name === 'source-derived' && s.triggers.some((t) => t.traceparent === value))!;
      expect(reconcile.triggers.find((t) => t.traceparent === value)?.event).toBe(writer === created ? 'add' : 'update');
      const traceId = reconcile.traceId as string;
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(traceId).not.toBe(writer['trace_id']);
      const trace = await eventually(() => jaeger.trace(traceId), (t) => t?.spans.some((s) => s.spanID === reconcile.spanId) === true, `B's trace ${traceId} in Jaeger`, 60_000);
      const span = trace!.spans.find((s) => s.spanID === reconcile.spanId)!;
      expect(span.operationName).toBe('reconcile links-reader');
      expect(parentOf(span)).toBeUndefined();
      expect(span.references?.filter((r) => r.refType !== 'CHILD_OF').map((r) => ({ traceID: r.traceID, spanID: r.spanID }))).toEqual([{ traceID: writer['trace_id'], spanID: writer['span_id'] }]);
      // And A's trace, which Jaeger holds, has the span linked to.
      const aTrace = await eventually(() => jaeger.trace(writer['trace_id'] as string), (t) => t?.spans.some((s) => s.spanID === writer['span_id']) === true, "A's trace in Jaeger", 60_000);
      expect(aTrace!.spans.find((s) => s.spanID === writer['span_id'])?.operationName).toBe('reconcile links-writer');
    }

    // Malformed values: no trigger carries them, no span links anywhere, and B went on reconciling.
    for (const name of Object.keys(malformed)) {
      const reconciles = seen.filter((s) => s.name === name);
      expect(reconciles.length).toBeGreaterThanOrEqual(1);
      for (const r of reconciles) {
        expect(r.triggers.every((t) => t.traceparent === undefined)).toBe(true);
        const trace = await eventually(() => jaeger.trace(r.traceId as string), (t) => t?.spans.some((s) => s.spanID === r.spanId) === true, `the reconcile of ${name} in Jaeger`, 60_000);
        expect(trace!.spans.find((s) => s.spanID === r.spanId)?.references ?? []).toEqual([]);
      }
    }
  });

  it('with linkWrites, a reconciler that merge-patches its object every time without comparing does not wake itself forever: the reconcile woken by its own echo records nothing, so its patch stays a no-op', async () => {
    const service = uniqueName('tracing-blind');
    const manager = testManager(ns, { tracing: { endpoint: jaeger.otlpHttpTraces, serviceName: service, exportDelayMs: 100, linkWrites: true } });
    let reconciles = 0;
    manager.addController({ name: 'links-blind', for: ConfigMap }, async (req) => {
      if (req.name !== 'blind') return;
      reconciles++;
      await manager.client.patch(ConfigMap, { namespace: ns, name: 'blind' }, mergePatch({ data: { desired: 'state' } }));
    });
    const running = run(manager);
    try {
      await synced(manager);
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'blind', namespace: ns } });
      // The first reconcile's patch changes the data (and records its trace context); the second, woken by that echo, changes nothing.
      await eventually(() => reconciles, (n) => n >= 2, 'the reconcile and the one its echo wakes', 60_000);
      const after = await client.get(ConfigMap, { namespace: ns, name: 'blind' });
      expect(parseTraceparent(after.metadata?.annotations?.[TRACEPARENT_ANNOTATION])).toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      // A loop would be hundreds by now, and reported as self-triggering.
      expect(reconciles).toBeLessThanOrEqual(3);
      expect((await client.get(ConfigMap, { namespace: ns, name: 'blind' })).metadata?.resourceVersion).toBe(after.metadata?.resourceVersion);
      const selfTriggered = (await manager.registry.getSingleMetric('kubeloop_reconcile_self_triggered_total')!.get()).values.find((v) => v.labels['controller'] === 'links-blind');
      expect(selfTriggered?.value ?? 0).toBe(0);
    } finally {
      await running.stop();
    }
  });

  it('exemplars: a scraper asking for OpenMetrics gets the trace ID of a reconcile on the reconcile-time bucket it fell in, a trace Jaeger holds; one that does not, and any scraper while tracing is off, gets the Prometheus text format as before', async () => {
    const service = uniqueName('tracing-exemplars');
    const OM = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
    const samples = (text: string): Set<string> => new Set(text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)![0]));
    const manager = testManager(ns, { metricsBindAddress: '127.0.0.1:0', tracing: { endpoint: jaeger.otlpHttpTraces, serviceName: service, exportDelayMs: 100 } });
    let reconciled = 0;
    manager.addController({ name: 'tracing-exemplars', for: ConfigMap }, async (req) => {
      if (req.name !== 'exemplary') return;
      // A bucket of its own: the other ConfigMaps' reconciles are no-ops, and under load one taking tens of
      // milliseconds would take a 30 ms reconcile's place as its bucket's exemplar (prom-client keeps the last).
      // At least 400 ms by the clock the reconcile is timed with: a timer alone can fire early by that clock, since
      // libuv starts it from the loop's cached time (under load a CI run measured such a reconcile under 0.4 s).
      const start = performance.now();
      while (performance.now() - start < 400) await new Promise((resolve) => setTimeout(resolve, 400 - (performance.now() - start) + 1));
      reconciled++;
    });
    const off = testManager(ns, { metricsBindAddress: '127.0.0.1:0', tracing: false });
    off.addController({ name: 'tracing-exemplars-off', for: ConfigMap }, () => Promise.resolve());
    const running = run(manager);
    const runningOff = run(off);
    let om: Response;
    let omText: string;
    let plain: Response;
    let plainText: string;
    let offAsked: Response;
    let offText: string;
    try {
      await synced(manager);
      await synced(off);
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'exemplary', namespace: ns } });
      await eventually(() => reconciled, (n) => n >= 1, 'the reconcile', 60_000);
      // The reconcile's time is observed once the reconciler has returned, a moment after `reconciled` counts it: scrape until it is there.
      const slowExemplar = (text: string): boolean => /^controller_runtime_reconcile_time_seconds_bucket\{[^}]*controller="tracing-exemplars"[^}]*\} \d+ # \{trace_id="[0-9a-f]{32}"\} (0\.[4-9]|[1-9])/m.test(text);
      await eventually(async () => (await fetch(`${manager.metricsUrl!}/metrics`, { headers: { accept: OM } })).text(), slowExemplar, 'the slow reconcile observed, with its exemplar', 30_000);
      om = await fetch(`${manager.metricsUrl!}/metrics`, { headers: { accept: OM } });
      omText = await om.text();
      plain = await fetch(`${manager.metricsUrl!}/metrics`);
      plainText = await plain.text();
      await eventually(() => metric(off.registry, 'controller_runtime_reconcile_total', { controller: 'tracing-exemplars-off', result: 'success' }), (v) => (v ?? 0) >= 1, 'the reconciles of the manager without tracing', 60_000);
      offAsked = await fetch(`${off.metricsUrl!}/metrics`, { headers: { accept: OM } });
      offText = await offAsked.text();
    } finally {
      await running.stop();
      await runningOff.stop();
    }
    expect(om.headers.get('content-type')).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
    expect(omText.endsWith('# EOF\n')).toBe(true);
    const exemplars = [...omText.matchAll(/^controller_runtime_reconcile_time_seconds_bucket\{[^}]*controller="tracing-exemplars"[^}]*\} \d+ # \{trace_id="([0-9a-f]{32})"\} ([0-9.e-]+) ([0-9.]+)$/gm)];
    // The other ConfigMaps of the namespace are reconciled too (in no time): the slow one is exemplary's.
    const slow = exemplars.filter(([, , value]) => Number(value) >= 0.4).map(([, traceId]) => traceId!);
    expect(slow.length).toBeGreaterThanOrEqual(1);
    const objects: unknown[] = [];
    for (const traceId of slow) {
      const trace = await eventually(() => jaeger.trace(traceId), (t) => t?.spans.some((s) => s.operationName === 'reconcile tracing-exemplars') === true, `the exemplar's trace ${traceId} in Jaeger`, 60_000);
      objects.push(tag(trace!.spans.find((s) => s.operationName === 'reconcile tracing-exemplars')!, 'kubeloop.object.name'));
    }
    expect(objects).toContain('exemplary');
    // Counters keep their names (the family is named without _total in OpenMetrics, each sample with it).
    expect(omText).toMatch(/^# TYPE controller_runtime_reconcile counter$/m);
    expect(omText).toMatch(/^controller_runtime_reconcile_total\{/m);

    // Without asking: the Prometheus text format, as always, with the same samples and no exemplar.
    expect(plain.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(plainText).not.toContain('# {');
    expect(plainText).not.toContain('# EOF');
    expect(plainText).toMatch(/^# TYPE controller_runtime_reconcile_total counter$/m);
    expect([...samples(plainText)].filter((n) => !samples(omText).has(n))).toEqual([]);
    // A second OpenMetrics scrape changed nothing for the next text one (prom-client renames the counters of a registry it writes in OpenMetrics).
    expect(samples(plainText).has('controller_runtime_reconcile_total')).toBe(true);

    // Tracing off: the text format whatever the scraper asks.
    expect(offAsked.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(offText).not.toContain('# {');
    expect(offText).toMatch(/^controller_runtime_reconcile_time_seconds_bucket\{[^}]*controller="tracing-exemplars-off"/m);
  });

  it('a reconcile that fails is marked failed, with the error and the retry count', async () => {
    const service = uniqueName('tracing-fail');
    const manager = testManager(ns, { tracing: { endpoint: jaeger.otlpHttpTraces, serviceName: service, exportDelayMs: 100 } });
    let attempts = 0;
    manager.addController({ name: 'tracing-fails', for: ConfigMap }, (req) => {
      if (req.name !== 'failing') return Promise.resolve();
      attempts++;
      return Promise.reject(new Error('the disk is not there yet'));
    });
    const running = run(manager);
    try {
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'failing', namespace: ns } });
      await eventually(() => attempts, (n) => n >= 2, 'two failed reconciles', 60_000);
    } finally {
      await running.stop();
    }
    const traces = await eventually(() => jaeger.traces(service), (ts) => ts.some((t) => t.spans.some((s) => s.operationName === 'reconcile tracing-fails' && tag(s, 'kubeloop.object.name') === 'failing')), 'the failed reconcile in Jaeger', 60_000);
    const failed = traces.flatMap((t) => t.spans).filter((s) => s.operationName === 'reconcile tracing-fails' && tag(s, 'kubeloop.object.name') === 'failing');
    expect(failed.length).toBeGreaterThanOrEqual(1);
    for (const span of failed) {
      expect(tag(span, 'error')).toBe(true);
      expect(tag(span, 'kubeloop.reconcile.result')).toBe('error');
      expect(tag(span, 'otel.status_description')).toBe('the disk is not there yet');
      expect(tag(span, 'kubeloop.reconcile.requeue')).toBe(true);
      expect(typeof tag(span, 'kubeloop.reconcile.retries')).toBe('number');
    }
  });
});
