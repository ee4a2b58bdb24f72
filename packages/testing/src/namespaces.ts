/**
 * A fresh namespace per test: a unique name, created through the client,
 * deleted (with its objects, on a cluster that runs the namespace
 * controller) when the test is done.
 */
import { randomBytes } from 'node:crypto';
import { isNotFound } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { TestingError } from './errors.js';

/**
 * Options for {@link createTestNamespace}.
 *
 * @example
 * ```ts
 * const ns = await createTestNamespace(client, { prefix: 'harddisk', labels: { suite: 'e2e' } } satisfies TestNamespaceOptions);
 * ```
 */
export interface TestNamespaceOptions {
  /** Start of the name; 8 random hex characters follow. Default: `test`. */
  readonly prefix?: string;
  /** Labels of the namespace. Default: `{ 'kubeloop.dev/test-namespace': 'true' }`. */
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * A namespace made for one test.
 *
 * @example
 * ```ts
 * await using ns = await createTestNamespace(client); // deleted at the end of the block
 * await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: ns.name } });
 * ```
 */
export interface TestNamespace extends AsyncDisposable {
  readonly name: string;
  /** Delete it (idempotent; a namespace already gone is fine). */
  delete(): Promise<void>;
}

/**
 * Create a namespace with a unique name.
 *
 * @example
 * ```ts
 * let ns: TestNamespace;
 * beforeEach(async () => { ns = await createTestNamespace(client, { prefix: 'reconcile' }); });
 * afterEach(() => ns.delete());
 * ```
 */
export async function createTestNamespace(client: Client, options: TestNamespaceOptions = {}): Promise<TestNamespace> {
  const prefix = options.prefix ?? 'test';
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(prefix) || prefix.length > 54) {
    throw new TestingError('InvalidArgument', `createTestNamespace: prefix ${JSON.stringify(prefix)} must be a DNS label of at most 54 characters`);
  }
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { ...(options.labels ?? { 'kubeloop.dev/test-namespace': 'true' }) } } });
  let deleted: Promise<void> | undefined;
  const remove = (): Promise<void> =>
    (deleted ??= client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name }).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    }));
  return { name, delete: remove, [Symbol.asyncDispose]: remove };
}
