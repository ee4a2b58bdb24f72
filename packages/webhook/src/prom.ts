// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- the ambient declarations of those files; tsc finds them through tsconfig, typescript-eslint only through this
/// <reference path="./prom-client-files.d.ts" />
/**
 * prom-client's metric classes, taken from its own files rather than its
 * index, which also loads its Pushgateway (node:zlib), Summary and default
 * metrics (with `@opentelemetry/api`): as `@kubeloop/manager` takes them, and
 * for the same reason (its src/metrics/prom.ts). prom-client 15's layout.
 */
import type * as Prom from 'prom-client';
import CounterClass from 'prom-client/lib/counter.js';
import GaugeClass from 'prom-client/lib/gauge.js';
import HistogramClass from 'prom-client/lib/histogram.js';

export const Counter = CounterClass as typeof Prom.Counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = GaugeClass as typeof Prom.Gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = HistogramClass as typeof Prom.Histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;
