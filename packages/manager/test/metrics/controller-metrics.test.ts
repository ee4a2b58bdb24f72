/**
 * Metrics with controller-runtime's names in one registry: controllers'
 * series exist before their first reconcile, many controllers and electors
 * share a registry, `rest_client_requests_total` counts requests, informer
 * metrics read every informer.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ControllerMetrics, restClientMetrics } from '../../src/metrics/controller-metrics.js';
import { leaderElectionMetrics } from '../../src/metrics/leader-election-metrics.js';
import { metric } from '../support.js';

describe('controller metrics', () => {
  it('zeroes every series of a controller before its first reconcile; two controllers share the registry', async () => {
    const registry = new Registry();
    new ControllerMetrics(registry).initController({ controller: 'a' }, 3);
    new ControllerMetrics(registry).initController({ controller: 'b' }, 1);
    for (const result of ['success', 'error', 'requeue', 'requeue_after']) {
      expect(await metric(registry, 'controller_runtime_reconcile_total', { controller: 'a', result })).toBe(0);
    }
    expect(await metric(registry, 'controller_runtime_max_concurrent_reconciles', { controller: 'a' })).toBe(3);
    expect(await metric(registry, 'controller_runtime_max_concurrent_reconciles', { controller: 'b' })).toBe(1);
    expect(await metric(registry, 'controller_runtime_active_workers', { controller: 'b' })).toBe(0);
    expect(await metric(registry, 'kubeloop_controller_source_errors_total', { controller: 'b' })).toBe(0);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE controller_runtime_reconcile_time_seconds histogram');
  });

  it('rest_client_requests_total counts by code, method and host', async () => {
    const registry = new Registry();
    const observe = restClientMetrics(registry);
    observe({ method: 'GET', host: '127.0.0.1:6443', path: '/api', code: 200, durationMs: 1 });
    observe({ method: 'GET', host: '127.0.0.1:6443', path: '/api', code: 200, durationMs: 1 });
    observe({ method: 'PATCH', host: '127.0.0.1:6443', path: '/x', code: '<error>', durationMs: 1 });
    expect(await metric(registry, 'rest_client_requests_total', { code: '200', method: 'GET', host: '127.0.0.1:6443' })).toBe(2);
    expect(await metric(registry, 'rest_client_requests_total', { code: '<error>', method: 'PATCH', host: '127.0.0.1:6443' })).toBe(1);
  });

  it('leader_election_master_status: one gauge, a series per lease', async () => {
    const registry = new Registry();
    const a = leaderElectionMetrics(registry);
    const b = leaderElectionMetrics(registry);
    a.leading('lease-a', true);
    b.leading('lease-b', false);
    expect(await metric(registry, 'leader_election_master_status', { name: 'lease-a' })).toBe(1);
    expect(await metric(registry, 'leader_election_master_status', { name: 'lease-b' })).toBe(0);
    a.leading('lease-a', false);
    expect(await metric(registry, 'leader_election_master_status', { name: 'lease-a' })).toBe(0);
    expect(await registry.metrics()).toContain('# TYPE leader_election_master_status gauge');
  });
});

describe('process and Node.js metrics', () => {
  it('a manager registers them once per registry (two managers may share one), and can leave them out', async () => {
    const { createManager, createLogger } = await import('../../src/index.js');
    const { testKubeConfig } = await import('../../../../test/support/env.js');
    const registry = new Registry();
    createManager({ kubeConfig: testKubeConfig(), registry, logger: createLogger({ level: 'silent' }) });
    createManager({ kubeConfig: testKubeConfig(), registry, logger: createLogger({ level: 'silent' }) });
    const text = await registry.metrics();
    expect(text).toContain('# TYPE process_resident_memory_bytes gauge');
    expect(text).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
    expect(text.match(/# TYPE process_cpu_user_seconds_total/g)).toHaveLength(1);
    const bare = new Registry();
    createManager({ kubeConfig: testKubeConfig(), registry: bare, defaultMetrics: false, logger: createLogger({ level: 'silent' }) });
    expect(await bare.metrics()).not.toContain('process_resident_memory_bytes');
  });
});
