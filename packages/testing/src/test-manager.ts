/**
 * A manager for tests, on either backend: the fake API server (in memory)
 * or a real one (envtest's kubeconfig). One call builds it quiet, lets the
 * test register its controllers, starts it and waits until every controller
 * has synced; `waitForReconcile` waits for a given object's reconcile to
 * finish; `stop()` (or `await using`) stops it and reports how it ended.
 */
import type { KubeConfigLike } from '@kubeloop/client';
import { createTransport } from '@kubeloop/client';
import { createLogger, createManager } from '@kubeloop/manager';
import type { RequestAudit, RoleManifest } from '@kubeloop/manager/rbac';
import type { Manager, ManagerOptions } from '@kubeloop/manager';
import type { ReconcileReport } from '@kubeloop/manager/internal';
import { TestingError } from './errors.js';
import type { FakeApiServer } from './fake-api-server.js';
import { auditManagerRequests, recordingTransport } from './recording.js';
import type { ManagerRequest } from './recording.js';

/** Options for {@link startTestManager}: those of `createManager` plus where it runs and what it runs. */
export interface TestManagerOptions extends Omit<ManagerOptions, 'kubeConfig' | 'transport' | 'cluster'> {
  /** Where the manager runs: a fake API server (`createFakeApiServer()`), or a kubeconfig (envtest's `env.kubeConfig`). */
  readonly backend: FakeApiServer | KubeConfigLike;
  /** Register controllers, webhooks and runnables on the manager before it starts. Default: none. */
  readonly setup?: (manager: Manager) => void | Promise<void>;
  /** How long start may take until every controller has synced. Default: 30 000 ms. */
  readonly startTimeoutMs?: number;
}

/** Which reconcile to wait for: an object reference, optionally of one controller. */
export interface ReconcileTarget {
  readonly namespace?: string | undefined;
  readonly name: string;
  /** Only reconciles of this controller. Default: any controller. */
  readonly controller?: string;
}

/** Options of {@link waitForReconcile}. */
export interface WaitForReconcileOptions {
  /** How long to wait. Default: 10 000 ms. */
  readonly timeoutMs?: number;
  /** Which outcomes count. Default: `success` only (errors and requeues are remembered for the timeout message). */
  readonly results?: readonly ReconcileReport['result'][];
  /** Stop waiting when this aborts. Default: none. */
  readonly signal?: AbortSignal;
}

/** A running test manager. */
export interface TestManager extends AsyncDisposable {
  /** The manager: its client reads through the cache, `apiReader` reads live. */
  readonly manager: Manager;
  /**
   * Wait for the next reconcile of `target` that ends in one of `results`;
   * see {@link waitForReconcile}. Call it before the change that triggers
   * the reconcile, and await it after.
   */
  waitForReconcile(target: ReconcileTarget | { readonly metadata?: { readonly namespace?: string | undefined; readonly name?: string | undefined } | undefined }, options?: WaitForReconcileOptions): Promise<ReconcileReport>;
  /** Stop the manager and wait for it; rejects with what `start()` rejected with (a failed runnable, say). */
  stop(): Promise<void>;
  /**
   * Every request the manager has made so far, oldest first: its client and
   * cache (watches included), leader election, the event recorder.
   */
  readonly requests: readonly ManagerRequest[];
  /**
   * The recording mode of RBAC: which of the manager's requests so far the
   * roles would deny, and which granted verbs none used. `roles` is a role
   * file (`'config/rbac/role.yaml'`, as `kubeloop generate rbac` writes it),
   * roles, or by default the roles of the manager's own `permissions()` (a
   * write your controller makes but does not declare shows as denied).
   * Discovery is not counted (every authenticated user may do it).
   *
   * @throws {@link TestingError} `InvalidArgument` when the file cannot be read or holds no role.
   * @example
   * ```ts
   * afterAll(() => {
   *   expect(tm.auditPermissions('config/rbac/role.yaml').denied).toEqual([]);
   * });
   * ```
   */
  auditPermissions(roles?: string | readonly RoleManifest[]): RequestAudit;
}

function isFake(backend: TestManagerOptions['backend']): backend is FakeApiServer {
  return typeof (backend as Partial<FakeApiServer>).createTransport === 'function';
}

function targetOf(target: Parameters<TestManager['waitForReconcile']>[0]): ReconcileTarget {
  if ('name' in target && typeof target.name === 'string') return target;
  const m = (target as { metadata?: { namespace?: string | undefined; name?: string | undefined } }).metadata;
  if (typeof m?.name !== 'string' || m.name === '') throw new TestingError('InvalidArgument', 'waitForReconcile needs { namespace, name } or an object with metadata.name');
  return { name: m.name, ...(m.namespace ? { namespace: m.namespace } : {}) };
}

function describeRequest(t: ReconcileTarget): string {
  return `${t.namespace ? `${t.namespace}/` : ''}${t.name}${t.controller ? ` (controller ${t.controller})` : ''}`;
}

/**
 * Wait for the next reconcile of an object by `manager` that ends in one of
 * `results` (success by default). Subscribe first, then make the change,
 * then await: a reconcile that finished before the call is not seen. It is
 * the next one to finish, which may be one queued by an earlier write and
 * not yet see your change: to wait for a state (Bound, a repaired child),
 * use `eventually`; this is for "it ran" and for how it ended. On
 * timeout it rejects with {@link TestingError} `ConditionNotMet` listing the
 * reconciles of that object it did see (with their errors).
 *
 * @example
 * ```ts
 * const bound = waitForReconcile(manager, { namespace: 'default', name: 'd1' });
 * await client.create(disk);
 * const report = await bound; // { controller: 'harddisk', result: 'success', durationMs: 3.1, ... }
 * ```
 */
export function waitForReconcile(manager: Manager, target: ReconcileTarget, options: WaitForReconcileOptions = {}): Promise<ReconcileReport> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const results = new Set(options.results ?? ['success']);
  if (!(timeoutMs > 0)) return Promise.reject(new TestingError('InvalidArgument', `waitForReconcile: timeoutMs must be positive, got ${timeoutMs}`));
  const seen: string[] = [];
  return new Promise<ReconcileReport>((resolve, reject) => {
    const finish = (): void => {
      off();
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    };
    const off = manager.onReconcile((report) => {
      if (report.request.name !== target.name || (report.request.namespace ?? undefined) !== (target.namespace || undefined)) return;
      if (target.controller !== undefined && report.controller !== target.controller) return;
      if (results.has(report.result)) {
        finish();
        resolve(report);
        return;
      }
      if (seen.length < 20) seen.push(`${report.controller}: ${report.result}${report.error === undefined ? '' : ` (${report.error instanceof Error ? report.error.message : JSON.stringify(report.error) ?? 'undefined'})`}`);
    });
    const timer = setTimeout(() => {
      finish();
      const saw = seen.length === 0 ? 'no reconcile of it at all' : `only: ${seen.join('; ')}`;
      reject(new TestingError('ConditionNotMet', `waitForReconcile ${describeRequest(target)}: no ${[...results].join(' or ')} within ${timeoutMs} ms; saw ${saw}`));
    }, timeoutMs);
    const onAbort = (): void => {
      finish();
      reject(new TestingError('ConditionNotMet', `waitForReconcile ${describeRequest(target)}: aborted`, { cause: options.signal?.reason }));
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Build, set up and start a manager for a test, on the fake or on a real
 * API server, and wait until its controllers have synced. Quiet by default
 * (log level `silent`, or `KUBELOOP_LOG_LEVEL` when set); no metrics or
 * probe servers unless asked for; field owner `test-manager`.
 *
 * @throws {@link TestingError} `ConditionNotMet` when the controllers do not sync within `startTimeoutMs`, naming what they wait for.
 * @example
 * ```ts
 * const fake = createFakeApiServer();
 * fake.register(HardDisk, { status: true });
 * await using tm = await startTestManager({ backend: fake, scheme: builtinScheme.extend(HardDisk), setup: (m) => setupHardDiskController(m) });
 * const bound = tm.waitForReconcile({ namespace: 'default', name: 'd1' });
 * await fake.client().create(disk);
 * await bound;
 * ```
 */
export async function startTestManager(options: TestManagerOptions): Promise<TestManager> {
  const { backend, setup, startTimeoutMs = 30_000, ...managerOptions } = options;
  if (!backend) throw new TestingError('InvalidArgument', 'startTestManager needs a backend: a fake API server or a kubeconfig');
  const requests: ManagerRequest[] = [];
  const transport = isFake(backend) ? backend.createTransport() : createTransport(backend, managerOptions.transportOptions ?? {});
  const manager = createManager({
    fieldOwner: 'test-manager',
    logger: createLogger({ level: process.env['KUBELOOP_LOG_LEVEL'] ?? 'silent' }),
    ...managerOptions,
    transport: recordingTransport(transport, requests),
  });
  if (setup) await setup(manager);
  const ac = new AbortController();
  const done = manager.start(ac.signal);
  let ended = false;
  // observed at once, so that a failure before stop() is not an unhandled rejection
  done.then(
    () => (ended = true),
    () => (ended = true),
  );
  const stop = async (): Promise<void> => {
    ac.abort();
    await done; // rejects with what start() rejected with
  };
  // Synced: every controller has started its workers (leader-elected controllers wait for the lease).
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (ended) {
      await stop();
      throw new TestingError('ConditionNotMet', 'the test manager stopped before its controllers synced');
    }
    const statuses = manager.controllers();
    if (statuses.every((c) => c.started && c.synced)) break;
    if (Date.now() > deadline) {
      const waiting = statuses.filter((c) => !c.synced).map((c) => `${c.name} waiting for ${c.waitingFor.join(', ') || 'leadership'}`);
      await stop().catch(() => undefined);
      throw new TestingError('ConditionNotMet', `the test manager's controllers did not sync within ${startTimeoutMs} ms: ${waiting.join('; ')}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    manager,
    waitForReconcile: (target, waitOptions) => waitForReconcile(manager, targetOf(target), waitOptions),
    stop,
    requests,
    auditPermissions: (roles) => auditManagerRequests(requests, roles, () => manager.permissions()),
    [Symbol.asyncDispose]: stop,
  };
}
