/**
 * Webhook metrics with controller-runtime's names, fed by real requests to
 * the server: counts by code, latency, in-flight, and failures by reason.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { prometheusWebhookMetrics } from '../src/index.js';
import type { Webhook } from '../src/index.js';
import { call, runServer, testPki } from './support.js';

function value(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('prometheusWebhookMetrics', () => {
  it('counts requests by webhook and code, observes latency, tracks in-flight and failures', async () => {
    const registry = new Registry();
    const pki = testPki();
    const s = await runServer({ pki, metrics: prometheusWebhookMetrics(registry), handlerTimeoutMs: 300 });
    let release!: () => void;
    const hook: Webhook = {
      path: '/validate-x',
      async handle(body) {
        const mode = (body as { mode?: string }).mode;
        if (mode === 'throw') throw new Error('nope');
        if (mode === 'slow') await new Promise((r) => setTimeout(r, 2000));
        if (mode === 'hold') await new Promise<void>((r) => (release = r));
        return { status: 200, body: { ok: true } };
      },
      failure: (p) => ({ status: 200, body: { failed: p.message } }),
    };
    s.server.register(hook);
    try {
      const ca = pki.ca.certPem;
      await call(s.url, '/validate-x', { mode: 'ok' }, { ca });
      await call(s.url, '/validate-x', { mode: 'ok' }, { ca });
      await call(s.url, '/validate-x', { mode: 'throw' }, { ca });
      await call(s.url, '/validate-x', { mode: 'slow' }, { ca });
      await call(s.url, '/validate-x', '{', { ca });
      await call(s.url, '/validate-x', 'x', { ca, headers: { 'content-type': 'text/plain' } });
      await call(s.url, '/unknown', {}, { ca }); // not a webhook: not counted

      const held = call(s.url, '/validate-x', { mode: 'hold' }, { ca });
      await new Promise((r) => setTimeout(r, 100));
      const during = await registry.metrics();
      expect(value(during, 'controller_runtime_webhook_requests_in_flight{webhook="/validate-x"}')).toBe(1);
      release();
      await held;

      const text = await registry.metrics();
      expect(value(text, 'controller_runtime_webhook_requests_total{webhook="/validate-x",code="200"}')).toBe(7);
      expect(value(text, 'controller_runtime_webhook_requests_in_flight{webhook="/validate-x"}')).toBe(0);
      expect(value(text, 'controller_runtime_webhook_latency_seconds_count{webhook="/validate-x"}')).toBe(7);
      expect(value(text, 'controller_runtime_webhook_latency_seconds_bucket{le="+Inf",webhook="/validate-x"}')).toBe(7);
      expect(value(text, 'controller_runtime_webhook_latency_seconds_bucket{le="0.1",webhook="/validate-x"}')).toBeLessThan(7);
      expect(value(text, 'kubeloop_webhook_failures_total{webhook="/validate-x",reason="HandlerError"}')).toBe(1);
      expect(value(text, 'kubeloop_webhook_failures_total{webhook="/validate-x",reason="Timeout"}')).toBe(1);
      expect(value(text, 'kubeloop_webhook_failures_total{webhook="/validate-x",reason="MalformedRequest"}')).toBe(1);
      expect(value(text, 'kubeloop_webhook_failures_total{webhook="/validate-x",reason="UnsupportedMediaType"}')).toBe(1);
      expect(text).not.toContain('/unknown');
      expect(text).toContain('# HELP controller_runtime_webhook_requests_total Total number of admission requests by HTTP status code.');
    } finally {
      await s.stop();
    }
  });

  it('reuses the metrics when called twice on one registry', () => {
    const registry = new Registry();
    const a = prometheusWebhookMetrics(registry);
    const b = prometheusWebhookMetrics(registry);
    a.requestStarted('/w');
    b.requestFinished('/w', 200, 0.01);
    expect(registry.getMetricsAsArray().map((m) => m.name).sort()).toEqual([
      'controller_runtime_webhook_latency_seconds',
      'controller_runtime_webhook_requests_in_flight',
      'controller_runtime_webhook_requests_total',
      'kubeloop_webhook_failures_total',
    ]);
  });
});
