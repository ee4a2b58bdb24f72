/**
 * retryOnConflict / retryOn: attempt counting and backoff with a fake
 * function, then a real stale-resourceVersion PUT that gets 409 from the API
 * server and is recovered by re-reading.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ClientError, isClientError, isConflict, isTooManyRequests } from '../src/errors.js';
import { DEFAULT_RETRY, retryOn, retryOnConflict } from '../src/retry.js';
import { createTransport } from '../src/transport.js';
import type { Transport } from '../src/transport.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const conflict = (n: number): ClientError =>
  new ClientError('Conflict', `PUT /api/v1/namespaces/default/configmaps/x: 409 Conflict (#${n})`, { code: 409 });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('retryOnConflict with a fake function', () => {
  it('has client-go DefaultRetry as its default', () => {
    expect(DEFAULT_RETRY).toEqual({ steps: 5, durationMs: 10, factor: 1.0, jitter: 0.1 });
  });

  it('returns at once on success', async () => {
    const fn = vi.fn((_attempt: number) => Promise.resolve('ok'));
    await expect(retryOnConflict(fn)).resolves.toBe('ok');
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('retries conflicts until success, numbering attempts from 1', async () => {
    const attempts: number[] = [];
    const result = await retryOnConflict((attempt) => {
      attempts.push(attempt);
      if (attempt < 3) throw conflict(attempt);
      return 'done';
    });
    expect(result).toBe('done');
    expect(attempts).toEqual([1, 2, 3]);
  });

  it('makes 5 attempts in all, 10–11 ms apart, then rethrows the last conflict', async () => {
    const timeouts = vi.spyOn(globalThis, 'setTimeout');
    const errors: ClientError[] = [];
    const err = await retryOnConflict(async (attempt) => {
      await Promise.resolve();
      const e = conflict(attempt);
      errors.push(e);
      throw e;
    }).catch((e: unknown) => e);
    expect(errors).toHaveLength(5);
    expect(err).toBe(errors[4]);
    const waits = timeouts.mock.calls.map((c) => c[1] ?? 0);
    expect(waits).toHaveLength(4);
    for (const w of waits) {
      expect(w).toBeGreaterThanOrEqual(10);
      expect(w).toBeLessThan(11);
    }
  });

  it('rethrows any other error at once', async () => {
    const notFound = new ClientError('NotFound', 'GET x: 404 NotFound', { code: 404 });
    const boom = new Error('bug');
    const fn = vi.fn(() => Promise.reject(notFound));
    await expect(retryOnConflict(fn)).rejects.toBe(notFound);
    expect(fn).toHaveBeenCalledTimes(1);
    const fn2 = vi.fn(() => {
      throw boom;
    });
    await expect(retryOnConflict(fn2)).rejects.toBe(boom);
    expect(fn2).toHaveBeenCalledTimes(1);
  });

  it('grows the wait by factor, caps it at capMs, and adds at most jitter × wait', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.999);
    const timeouts = vi.spyOn(globalThis, 'setTimeout');
    let calls = 0;
    await retryOnConflict(
      () => {
        calls++;
        throw conflict(calls);
      },
      { steps: 6, durationMs: 4, factor: 2, jitter: 0.5, capMs: 20 },
    ).catch(() => undefined);
    expect(calls).toBe(6);
    const waits = timeouts.mock.calls.map((c) => c[1] ?? 0);
    expect(waits.map((w) => Math.round(w * 1000) / 1000)).toEqual([4, 8, 16, 20, 20].map((d) => Math.round(d * 1.4995 * 1000) / 1000));
  });

  it('steps: 1 runs once and never waits', async () => {
    const timeouts = vi.spyOn(globalThis, 'setTimeout');
    const fn = vi.fn(() => Promise.reject(conflict(1)));
    await expect(retryOnConflict(fn, { steps: 1 })).rejects.toSatisfy(isConflict);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(timeouts).not.toHaveBeenCalled();
  });

  it('an abort during the wait stops at once with ClientError Aborted', async () => {
    const controller = new AbortController();
    const fn = vi.fn(() => {
      setTimeout(() => controller.abort(new Error('stop')), 5);
      return Promise.reject(conflict(1));
    });
    const started = Date.now();
    const err = await retryOnConflict(fn, { durationMs: 10_000, signal: controller.signal }).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('Aborted');
    expect((err as ClientError).cause).toEqual(new Error('stop'));
    expect(fn).toHaveBeenCalledTimes(1);
    expect(Date.now() - started).toBeLessThan(2_000);

    const never = vi.fn(() => 'x');
    await expect(retryOnConflict(never, { signal: AbortSignal.abort() })).rejects.toSatisfy((e) => isClientError(e) && e.reason === 'Aborted');
    expect(never).not.toHaveBeenCalled();
  });

  it.each([
    [{ steps: 0 }, 'steps'],
    [{ steps: 1.5 }, 'steps'],
    [{ durationMs: -1 }, 'durationMs'],
    [{ factor: Number.NaN }, 'factor'],
    [{ jitter: -0.1 }, 'jitter'],
    [{ capMs: -5 }, 'capMs'],
  ])('rejects bad options %j with ClientError InvalidRequest', async (options, field) => {
    const fn = vi.fn(() => 'x');
    const err = await retryOnConflict(fn, options).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('InvalidRequest');
    expect((err as Error).message).toContain(field);
    expect(fn).not.toHaveBeenCalled();
  });
});

describe('retryOn', () => {
  it('retries whatever the predicate picks', async () => {
    let n = 0;
    const result = await retryOn(
      isTooManyRequests,
      () => {
        n++;
        if (n < 3) throw new ClientError('TooManyRequests', '429', { code: 429 });
        return n;
      },
      { durationMs: 1 },
    );
    expect(result).toBe(3);
    // a conflict is not what this predicate retries
    let m = 0;
    await expect(
      retryOn(isTooManyRequests, () => {
        m++;
        throw conflict(m);
      }),
    ).rejects.toSatisfy(isConflict);
    expect(m).toBe(1);
  });
});

describe('retryOnConflict against the API server', () => {
  let transport: Transport;
  let core: CoreV1Api;
  let ns: string;

  beforeAll(async () => {
    const kc = testKubeConfig();
    transport = createTransport(kc);
    core = kc.makeApiClient(CoreV1Api);
    ns = uniqueName('retry');
    await core.createNamespace({ body: { metadata: { name: ns } } });
  });
  afterAll(async () => {
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    transport.close();
  });

  async function send<T>(method: 'GET' | 'PUT', path: string, body?: unknown): Promise<T> {
    const res = await transport.request({ method, path, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    if (res.status < 200 || res.status > 299) throw ClientError.fromResponse(method, path, res.status, res.body);
    return JSON.parse(res.body) as T;
  }

  it('a PUT with a stale resourceVersion is 409 Conflict; retryOnConflict recovers by re-reading', async () => {
    const name = uniqueName('counter');
    const path = `/api/v1/namespaces/${ns}/configmaps/${name}`;
    const original = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name }, data: { count: '0', owner: 'a' } } });

    // someone else writes after we read: our copy is stale
    await core.replaceNamespacedConfigMap({ namespace: ns, name, body: { ...original, data: { count: '5', owner: 'b' } } });

    // plain PUT of the stale copy: the server refuses it
    const stalePut = await send('PUT', path, { ...original, data: { count: '1', owner: 'a' } }).catch((e: unknown) => e);
    expect(isConflict(stalePut)).toBe(true);
    expect((stalePut as ClientError).code).toBe(409);
    expect((stalePut as ClientError).status?.reason).toBe('Conflict');

    // read-modify-write under retryOnConflict: attempt 1 uses the stale copy and conflicts, attempt 2 re-reads
    const attempts: number[] = [];
    const result = await retryOnConflict(async (attempt) => {
      attempts.push(attempt);
      const current = attempt === 1 ? original : await send<V1ConfigMap>('GET', path);
      const count = Number(current.data?.['count'] ?? '0') + 1;
      return send<V1ConfigMap>('PUT', path, { ...current, data: { ...current.data, count: String(count) } });
    });
    expect(attempts).toEqual([1, 2]);
    expect(result.data).toEqual({ count: '6', owner: 'b' }); // built on b's write, not over it
    const live = await send<V1ConfigMap>('GET', path);
    expect(live.data).toEqual({ count: '6', owner: 'b' });
  });
});
