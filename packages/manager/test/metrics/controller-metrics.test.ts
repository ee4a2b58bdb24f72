/**
 * Metrics with controller-runtime's names in one registry: controllers'
 * series exist before their first reconcile, many controllers and electors
 * share a registry, `rest_client_requests_total` counts requests, informer
 * metrics read every informer.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Registry, collectDefaultMetrics } from 'prom-client';
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

  it("are the families prom-client's collectDefaultMetrics registers, in its order, and process CPU counts from the process's start", async () => {
    const { createManager, createLogger } = await import('../../src/index.js');
    const { testKubeConfig } = await import('../../../../test/support/env.js');
    const families = (text: string): string[] => text.split('\n').filter((l) => /^# (TYPE|HELP) (process|nodejs)_/.test(l));
    const theirs = new Registry();
    collectDefaultMetrics({ register: theirs });
    const ours = new Registry();
    const before = process.cpuUsage();
    createManager({ kubeConfig: testKubeConfig(), registry: ours, logger: createLogger({ level: 'silent' }) });
    expect(families(await ours.metrics())).toEqual(families(await theirs.metrics()));
    // The CPU this test process spent before the manager existed is counted (prom-client's own
    // counters start at their registration), as Prometheus' Go process collector counts it.
    expect(await metric(ours, 'process_cpu_seconds_total', {})).toBeGreaterThanOrEqual((before.user + before.system) / 1e6);
    const user = await metric(ours, 'process_cpu_user_seconds_total', {});
    const system = await metric(ours, 'process_cpu_system_seconds_total', {});
    expect(user).toBeGreaterThanOrEqual(before.user / 1e6);
    expect(system).toBeGreaterThanOrEqual(before.system / 1e6);
  });

  it("loading the manager and registering them loads neither prom-client's index, nor @opentelemetry/api, nor node:zlib", async () => {
    const dist = fileURLToPath(new URL('../../dist/index.js', import.meta.url));
    const script = `
      import { createRequire } from 'node:module';
      const { createManager, createLogger } = await import(${JSON.stringify(dist)});
      const manager = createManager({ kubeConfig: { server: 'https://127.0.0.1:1' }, logger: createLogger({ level: 'silent' }) });
      const text = await manager.registry.metrics();
      console.log(JSON.stringify({
        files: Object.keys(createRequire(import.meta.url).cache),
        zlib: process.moduleLoadList.includes('NativeModule zlib'),
        cpu: /^process_cpu_seconds_total /m.test(text),
      }));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
    const loaded = JSON.parse(stdout) as { files: string[]; zlib: boolean; cpu: boolean };
    expect(loaded.cpu).toBe(true);
    expect(loaded.files.filter((f) => f.includes('/prom-client/lib/counter.js'))).toHaveLength(1);
    expect(loaded.files.filter((f) => /\/prom-client\/index\.js$|@opentelemetry|\/prom-client\/lib\/(pushgateway|summary|cluster)\.js$/.test(f))).toEqual([]);
    expect(loaded.zlib).toBe(false);
  });
});
