/**
 * Metrics of the client beyond `rest_client_requests_total`: how cached
 * reads waited for the client's own writes (read-your-writes), and the API
 * server's warnings.
 */
import { Counter, Histogram } from './prom.js';
import type { Registry } from 'prom-client';
import type { ApiWarning } from '@kubeloop/client';
import type { ReadYourWritesOptions } from '@kubeloop/client/internal';
import { once } from './register.js';

/**
 * `kubeloop_client_read_your_writes_total{kind,op,outcome}` counts cached
 * reads that had one of the client's writes to wait for: outcome `cache`
 * (the cache caught up), `written` (the cache was behind: answered from
 * the written objects) or `live` (read from the API server).
 * `kubeloop_client_read_your_writes_wait_seconds{op}` is how long they
 * waited (0 when the cache's stream was already known to be behind).
 */
export function readYourWritesMetrics(registry: Registry): NonNullable<ReadYourWritesOptions['onRead']> {
  const reads = once(
    registry,
    'kubeloop_client_read_your_writes_total',
    () =>
      new Counter({
        name: 'kubeloop_client_read_your_writes_total',
        help: "Cached reads that waited for the client's own writes, by outcome: cache (caught up), written (the cache was behind; answered from the written objects) or live (read from the API server)",
        labelNames: ['kind', 'op', 'outcome'],
        registers: [registry],
      }),
  );
  const waited = once(
    registry,
    'kubeloop_client_read_your_writes_wait_seconds',
    () =>
      new Histogram({
        name: 'kubeloop_client_read_your_writes_wait_seconds',
        help: "How long cached reads waited for the cache to see the client's own writes",
        labelNames: ['op'],
        buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5],
        registers: [registry],
      }),
  );
  return (info) => {
    reads.inc({ kind: info.kind, op: info.op, outcome: info.outcome });
    waited.observe({ op: info.op }, info.waitedMs / 1000);
  };
}

/**
 * `kubeloop_client_warnings_total{code}` counts the API server's `Warning`
 * headers (every one; the log has each distinct text once).
 */
export function warningMetrics(registry: Registry): (warning: ApiWarning) => void {
  const warnings = once(
    registry,
    'kubeloop_client_warnings_total',
    () => new Counter({ name: 'kubeloop_client_warnings_total', help: 'Warning headers the API server answered with (deprecated APIs, unknown fields, webhook warnings)', labelNames: ['code'], registers: [registry] }),
  );
  return (w) => warnings.inc({ code: String(w.code) });
}
