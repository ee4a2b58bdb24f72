/**
 * createClient's options are checked before anything is built: each wrong
 * shape is a ClientError InvalidOptions naming the option and what it
 * expects (no request is made, nothing needs a cluster).
 */
import { describe, expect, it } from 'vitest';
import { createClient, createTransport, isClientError, loadKubeConfig } from '../src/index.js';
import type { ClientOptions } from '../src/index.js';
import { testKubeconfigPath } from '../../../test/support/env.js';

const WRONG: readonly [option: string, value: unknown, expects: RegExp][] = [
  ['kubeConfig', 'https://127.0.0.1:6443', /RestConfig/],
  ['transport', { qps: 0 }, /a Transport \(createTransport.*transportOptions/],
  ['transportOptions', 5, /transport tuning/],
  ['scheme', {}, /a Scheme/],
  ['mapper', {}, /a RESTMapper/],
  ['fieldOwner', '', /non-empty string of at most 128/],
  ['fieldOwner', 'x'.repeat(129), /at most 128/],
  ['cache', new Map(), /a Reader with get and list/],
  ['uncached', ['Secret'], /an array of kinds/],
  ['cacheUnstructured', 'yes', /true or false/],
  ['readYourWrites', true, /false, or \{ timeoutMs/],
  ['readYourWrites', { onRead: 'log' }, /false, or \{ timeoutMs/],
];

function refusal(options: unknown): unknown {
  try {
    createClient(options as ClientOptions);
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('createClient checks its options', () => {
  it.each(WRONG)('%s: %j', (option, value, expects) => {
    const kubeConfig = loadKubeConfig({ path: testKubeconfigPath() });
    const err = refusal({ kubeConfig, [option]: value });
    expect(isClientError(err) && err.reason).toBe('InvalidOptions');
    expect((err as Error).message).toContain(`createClient: ${option} must be`);
    expect((err as Error).message).toMatch(expects);
  });

  it('not an object at all', () => {
    const err = refusal('kubeconfig.yaml');
    expect(isClientError(err) && err.reason).toBe('InvalidOptions');
    expect((err as Error).message).toMatch(/one options object; got the string "kubeconfig.yaml"/);
  });

  it('readYourWrites.timeoutMs that is not a number of ms', () => {
    const kubeConfig = loadKubeConfig({ path: testKubeconfigPath() });
    const cache = { get: () => Promise.reject(new Error('unused')), list: () => Promise.reject(new Error('unused')), observedResourceVersion: () => undefined, nextChange: () => Promise.resolve() };
    const err = refusal({ kubeConfig, cache, readYourWrites: { timeoutMs: -1 } });
    expect(isClientError(err) && err.reason).toBe('InvalidOptions');
    expect((err as Error).message).toMatch(/readYourWrites.timeoutMs must be a number of ms >= 0/);
  });

  it('right shapes pass', () => {
    const kubeConfig = loadKubeConfig({ path: testKubeconfigPath() });
    const transport = createTransport(kubeConfig);
    expect(() => createClient({ transport, fieldOwner: 'me', uncached: [{ apiVersion: 'v1', kind: 'Secret' }], readYourWrites: false, cacheUnstructured: true })).not.toThrow();
    transport.close();
  });
});
