/**
 * The Website controller: for each Website, an owned ConfigMap holding its
 * index.html, kept in sync with the spec; a Ready condition in status; events;
 * and a finalizer (an example of cleanup that owner references cannot do).
 *
 * `permissions` in {@link setupWebsiteController} declares what it writes;
 * `pnpm generate` (kubeloop generate rbac) adds the reads of what it
 * watches and writes config/rbac/role.yaml. Declare a write here when you
 * add one, then run `pnpm generate`.
 */
import { ConfigMap } from '@kubeloop/scheme';
import type { CachedClient, DeepReadonly, Fetched } from '@kubeloop/client';
import { isNotFound, mergeFrom, mutableCopy } from '@kubeloop/client';
import { Result, TOKENS, createOrUpdate, finalize, generationChanged, setControllerReference, setStatusCondition } from '@kubeloop/manager';
import type { EventRecorder, EventRecorderProvider, Manager, ReconcileContext, ReconcileResult, Reconciler, Request } from '@kubeloop/manager';
import { WEBSITE_FINALIZER, Website } from '../apis/index.js';
import type { SetupOptions } from './index.js';

/** The ConfigMap a Website owns. */
export function configMapNameOf(website: string): string {
  return `${website}-site`;
}

/**
 * Reconciles Websites. Its constructor takes its dependencies; the manager's
 * DI container supplies them from the `inject` list in
 * {@link setupWebsiteController} (no decorator metadata needed, so it works
 * the same under tsc, tsx and vitest).
 */
export class WebsiteReconciler implements Reconciler {
  private readonly recorder: EventRecorder;

  constructor(
    private readonly client: CachedClient,
    recorders: EventRecorderProvider,
  ) {
    this.recorder = recorders.recorderFor('website-controller');
  }

  async reconcile(request: Request, ctx: ReconcileContext): Promise<ReconcileResult> {
    const key = { namespace: request.namespace!, name: request.name };
    const website = await this.client.get(Website, key).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (!website) return Result.done(); // deleted: the ConfigMap goes with it (owner reference)

    const configMapName = configMapNameOf(request.name);
    const state = await finalize(this.client, website, WEBSITE_FINALIZER, () => {
      // Clean up anything outside the cluster here (DNS records, CDN caches, ...).
      this.recorder.event(website, 'Normal', 'Finalized', 'Finalize', `website ${request.name} released`);
      ctx.log.info('website finalized');
      return Promise.resolve();
    });
    if (state === 'deleting') return Result.done();

    const cm: ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configMapName, namespace: key.namespace } };
    const op = await createOrUpdate(this.client, cm, (c) => {
      c.metadata = { ...c.metadata, labels: { ...c.metadata?.labels, 'app.kubernetes.io/managed-by': '{{name}}' } };
      c.data = { 'index.html': page(website.spec.title, website.spec.content ?? '') };
      setControllerReference(website, c);
    });
    if (op !== 'unchanged') {
      this.recorder.event(website, 'Normal', op === 'created' ? 'Created' : 'Updated', 'Reconcile', `ConfigMap ${configMapName} ${op}`);
      ctx.log.info({ configMap: configMapName, op }, 'ConfigMap synced');
    }
    await this.updateStatus(website, configMapName);
    return Result.done();
  }

  private async updateStatus(website: DeepReadonly<Fetched<Website>>, configMapName: string): Promise<void> {
    const status = mutableCopy(website.status ?? {});
    const generation = website.metadata?.generation;
    let changed = status.configMapName !== configMapName || status.observedGeneration !== generation;
    status.configMapName = configMapName;
    if (generation !== undefined) status.observedGeneration = generation;
    changed =
      setStatusCondition((status.conditions ??= []), {
        type: 'Ready',
        status: 'True',
        reason: 'Published',
        message: `ConfigMap ${configMapName} holds the page`,
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
      }) || changed;
    if (!changed) return; // a steady-state reconcile makes no request
    await this.client.status().patch(website, mergeFrom({ status: website.status ?? {} }, { status }));
  }
}

function page(title: string, content: string): string {
  const escaped = title.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>\n<title>${escaped}</title>\n<h1>${escaped}</h1>\n${content}\n`;
}

/**
 * Registers the Website controller with a manager: what it watches (Websites
 * whose generation changed, and the ConfigMaps it owns), what it writes
 * (for `kubeloop generate rbac`), the DI tokens of its constructor's
 * parameters, in order, and its shard when sharded.
 *
 * @example
 * ```ts
 * const manager = createManager({ scheme: builtinScheme.extend(Website), fieldOwner: '{{name}}' });
 * setupWebsiteController(manager);
 * await manager.start(signalHandler());
 * ```
 */
export function setupWebsiteController(manager: Manager, { shard }: SetupOptions = {}): void {
  manager.register(WebsiteReconciler, {
    name: 'website',
    for: Website,
    forPredicates: [generationChanged()],
    owns: [ConfigMap],
    permissions: [
      { resource: Website, verbs: ['update', 'patch'] }, // its finalizer
      { resource: ConfigMap, verbs: ['create', 'update', 'patch'] }, // createOrUpdate
    ],
    inject: [TOKENS.Client, TOKENS.EventRecorderProvider],
    ...(shard ? { options: { shard } } : {}),
  });
}
