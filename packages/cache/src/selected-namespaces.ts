/**
 * The namespaces a label selector chooses, followed while the cache runs:
 * one list+watch of Namespaces with the selector (the API server filters,
 * and sends a DELETED when a namespace stops matching), telling the cache's
 * informers when the set changes so they start or drop that namespace's
 * list+watch.
 */
import type { Client, TypeRef } from '@kubeloop/client';
import type { Selector } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import { CacheError } from './errors.js';
import { Informer } from './informer.js';
import type { InformerErrorPhase } from './informer.js';
import { clientListWatcher } from './list-watch.js';
import type { ListWatcher } from './list-watch.js';
import type { ReflectorOptions } from './reflector.js';

const NAMESPACE: TypeRef = { apiVersion: 'v1', kind: 'Namespace' };

/** How long a kind's informer waits for the namespaces before it reports why it cannot start, and retries. */
const FIRST_LIST_WAIT_MS = 10_000;

export class SelectedNamespaces {
  private readonly informer: Informer<KubeObject>;
  private readonly listeners = new Set<() => void>();

  constructor(
    client: Client,
    private readonly selector: Selector,
    options: { reflector?: ReflectorOptions; onError?: (err: unknown, phase: InformerErrorPhase) => void },
  ) {
    const lw = clientListWatcher(client, NAMESPACE, { labelSelector: selector }) as unknown as ListWatcher<KubeObject>;
    this.informer = new Informer<KubeObject>([{ lw, namespace: '' }], {
      // Only the names are used.
      transform: (o) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.metadata?.name, uid: o.metadata?.uid, resourceVersion: o.metadata?.resourceVersion } }) as KubeObject,
      ...(options.reflector ? { reflector: options.reflector } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
    });
    this.informer.addEventHandler((event) => {
      if (event.type !== 'update') this.changed();
    });
  }

  /** What the selector is, for messages. */
  describe(): string {
    return typeof this.selector === 'string' ? this.selector : Object.entries(this.selector).map(([k, v]) => `${k}=${v}`).join(',');
  }

  start(): void {
    this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** The namespaces selected now. */
  names(): string[] {
    return [...this.informer.store.keys()].sort();
  }

  has(namespace: string): boolean {
    return this.informer.store.get(namespace) !== undefined;
  }

  /**
   * Resolves once the namespaces have been listed. Rejects, for the kind's
   * informer to report and retry, when they have not been within a while:
   * with the list's last error (a Forbidden says the role lacks `list` /
   * `watch` on namespaces), else a `Timeout`.
   */
  async synced(signal: AbortSignal): Promise<void> {
    if (this.informer.hasSynced()) return;
    try {
      await this.informer.waitForSync(AbortSignal.any([signal, AbortSignal.timeout(FIRST_LIST_WAIT_MS)]));
    } catch (err) {
      if (signal.aborted) throw err;
      const last = this.informer.stats()[0]?.lastError;
      if (last instanceof Error) throw last;
      throw new CacheError('Timeout', `the namespaces selected by ${this.describe()} were not listed within ${FIRST_LIST_WAIT_MS} ms`, { cause: last ?? err });
    }
  }

  /** Told whenever a namespace joins or leaves the set; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private changed(): void {
    for (const l of [...this.listeners]) l();
  }
}
