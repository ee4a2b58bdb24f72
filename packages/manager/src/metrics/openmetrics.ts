/**
 * The OpenMetrics exposition of a registry, for scrapers that ask for it
 * (Prometheus does first), served only while tracing is on: it is what
 * carries exemplars (the trace ID of a reconcile on the histogram bucket it
 * fell in). prom-client writes OpenMetrics only for a registry whose content
 * type is OpenMetrics, and renames the counters of a registry it writes
 * that way for good (`_total` cut off their names); so each scrape
 * writes a registry of its own whose entries are views of the real
 * metrics, and the Prometheus text format of the real registry is left as
 * it was.
 */
import type { Metric as PromMetric, Registry as PromRegistry } from 'prom-client';
import type * as Prom from 'prom-client';
import { Registry } from './prom.js';

/** The content type of the OpenMetrics text prom-client writes. */
export const OPENMETRICS_CONTENT_TYPE: string = Registry.OPENMETRICS_CONTENT_TYPE;

/** At most this much of an Accept header is read. */
const MAX_ACCEPT = 4096;

/**
 * Whether an `Accept` header prefers OpenMetrics 1.0.0 (or OpenMetrics with
 * no version) to the Prometheus text format: the highest `q` of each, ties
 * to OpenMetrics (Prometheus sends
 * `application/openmetrics-text;version=1.0.0,...;text/plain;version=0.0.4;q=0.5,...`).
 */
export function prefersOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes('openmetrics')) return false;
  let om = 0;
  let text = 0;
  for (const range of accept.slice(0, MAX_ACCEPT).split(',')) {
    const [type = '', ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    let q = 1;
    let version: string | undefined;
    for (const p of params) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const key = p.slice(0, eq).trim();
      const value = p.slice(eq + 1).trim();
      if (key === 'q') q = Number.isFinite(Number(value)) ? Math.min(Math.max(Number(value), 0), 1) : 0;
      else if (key === 'version') version = value;
    }
    if (type === 'application/openmetrics-text' && (version === undefined || version === '1.0.0')) om = Math.max(om, q);
    else if (type === 'text/plain' || type === '*/*' || type === 'text/*') text = Math.max(text, q);
  }
  return om > 0 && om >= text;
}

interface Metric {
  readonly name: string;
  readonly type?: string;
  readonly help?: string;
  get(): Promise<{ readonly name: string }>;
}

/** `registry`'s metrics in the OpenMetrics text format, exemplars included (the registry itself is not changed). */
export async function openMetricsText(registry: PromRegistry): Promise<string> {
  const view = new (Registry as unknown as new (contentType: string) => Prom.Registry)(Registry.OPENMETRICS_CONTENT_TYPE);
  const defaults = (registry as unknown as { _defaultLabels?: Record<string, string> })._defaultLabels;
  if (defaults && Object.keys(defaults).length > 0) view.setDefaultLabels(defaults);
  for (const m of registry.getMetricsAsArray() as unknown as Metric[]) {
    // A counter family is named without `_total` in OpenMetrics; its samples get it back.
    const counter = m.type === 'counter';
    const name = counter ? m.name.replace(/_total$/, '') : m.name;
    view.registerMetric({
      name,
      type: m.type,
      help: m.help,
      get: async () => {
        const got = await m.get();
        return counter ? { ...got, name } : got;
      },
    } as unknown as PromMetric);
  }
  return view.metrics();
}
