/**
 * Content negotiation of the metrics server while tracing is on: OpenMetrics
 * (with exemplars) only for a scraper whose Accept prefers it to the
 * Prometheus text format; a header from the network is read bounded and
 * never throws. (packages/manager/test/tracing.test.ts scrapes a real manager
 * both ways; test/grafana-dashboard.test.ts has a real Prometheus scrape it.)
 */
import { describe, expect, it } from 'vitest';
import { prefersOpenMetrics } from '../../src/metrics/openmetrics.js';

describe('prefersOpenMetrics', () => {
  it("is true for what Prometheus sends, and for OpenMetrics alone or first", () => {
    expect(prefersOpenMetrics('application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1')).toBe(true);
    expect(prefersOpenMetrics('application/openmetrics-text')).toBe(true);
    expect(prefersOpenMetrics('application/openmetrics-text; version=1.0.0; charset=utf-8')).toBe(true);
    expect(prefersOpenMetrics('text/plain;q=0.5, application/openmetrics-text;q=0.5')).toBe(true);
  });

  it('is false without a header, when the text format is preferred, for an OpenMetrics version it does not write, and for q=0', () => {
    expect(prefersOpenMetrics(undefined)).toBe(false);
    expect(prefersOpenMetrics('')).toBe(false);
    expect(prefersOpenMetrics('*/*')).toBe(false);
    expect(prefersOpenMetrics('text/plain;version=0.0.4')).toBe(false);
    expect(prefersOpenMetrics('text/plain, application/openmetrics-text;q=0.9')).toBe(false);
    expect(prefersOpenMetrics('application/openmetrics-text;version=0.0.1')).toBe(false);
    expect(prefersOpenMetrics('application/openmetrics-text;q=0, text/plain')).toBe(false);
  });

  it('reads a hostile header without throwing: bad q values count as 0, and only its first 4 KiB are read', () => {
    expect(prefersOpenMetrics('application/openmetrics-text;q=lots')).toBe(false);
    expect(prefersOpenMetrics(';;;,,,=;q=;application/openmetrics-text;;')).toBe(false);
    expect(prefersOpenMetrics(`${'x/y;a=b,'.repeat(100_000)}application/openmetrics-text`)).toBe(false);
    expect(prefersOpenMetrics(`application/openmetrics-text,${'x/y;a=b,'.repeat(100_000)}`)).toBe(true);
  });
});
