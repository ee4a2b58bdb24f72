/**
 * The fleet operator's two controllers. `fleetconfig-copy` runs in every
 * member cluster: it copies each host FleetConfig into a ConfigMap there,
 * puts back a copy edited or deleted by hand (the member's own ConfigMap
 * events enqueue the FleetConfig's key in that member's queue), and reports
 * the member's state in the FleetConfig's `status.members[]`.
 * `fleetconfig-members` runs in the host: when a member leaves the fleet it
 * drops that member's status entry.
 */
import { isAlreadyExists, isNotFound } from '@kubeloop/client';
import type { DeepReadonly } from '@kubeloop/client';
import type { Manager, ReconcileResult, Source } from '@kubeloop/manager';
import { Result } from '@kubeloop/manager';
import { createFleet, kubeconfigSecretProvider, KUBECONFIG_SECRET_LABEL } from '@kubeloop/manager/fleet';
import type { ClusterProvider, EventOrigin, Fleet, FleetReconcileContext, FleetRequest } from '@kubeloop/manager/fleet';
import type { InformerEvent } from '@kubeloop/cache';
import type { KubeObject } from '@kubeloop/scheme';
import { ConfigMap, Namespace } from '@kubeloop/scheme';
import { FLEETCONFIG_LABEL, FleetConfig, memberFieldManager } from './fleet-config.js';

/** Options of {@link setupFleetOperator}. */
export interface FleetOperatorOptions {
  /** Where the member clusters come from. Default: kubeconfig Secrets in `secretNamespace` selected by `memberSelector`. */
  readonly provider?: ClusterProvider;
  /** The host namespace holding the members' kubeconfig Secrets. Default: `fleet-system`. */
  readonly secretNamespace?: string;
  /** The label selector of the members' kubeconfig Secrets. Default: `fleet.kubeloop.dev/kubeconfig=true`. */
  readonly memberSelector?: string;
  /** The field owner of the operator's writes in member clusters. Default: `fleet-operator`. */
  readonly fieldOwner?: string;
}

/** The field owner of the operator's own writes. */
export const FIELD_OWNER = 'fleet-operator';

/**
 * Register the fleet operator on a manager whose scheme knows FleetConfig:
 * a fleet of member clusters (kubeconfig Secrets by default) and its two
 * controllers. Returns the fleet.
 *
 * @example
 * ```ts
 * const manager = createManager({ scheme: builtinScheme.extend(FleetConfig), fieldOwner: 'fleet-operator' });
 * setupFleetOperator(manager, { secretNamespace: 'fleet-system' });
 * await manager.start(signalHandler());
 * ```
 */
export function setupFleetOperator(manager: Manager, options: FleetOperatorOptions = {}): Fleet {
  const provider = options.provider ?? kubeconfigSecretProvider({ namespace: options.secretNamespace ?? 'fleet-system', labelSelector: options.memberSelector ?? `${KUBECONFIG_SECRET_LABEL}=true` });
  const fleet = createFleet(manager, {
    provider,
    clusters: {
      fieldOwner: options.fieldOwner ?? FIELD_OWNER,
      // A member's cache holds the operator's ConfigMaps only, not every ConfigMap of the cluster.
      cache: { byKind: [{ kind: ConfigMap, options: { labelSelector: FLEETCONFIG_LABEL } }] },
    },
  });
  fleet
    .controller()
    .named('fleetconfig-copy')
    .for(ConfigMap)
    .watchesHost(FleetConfig, copiesOf)
    // In members: the copies, and their namespace when missing (generate rbac's member role).
    .withPermissions({ resource: ConfigMap, verbs: ['create', 'update', 'delete'] }, { resource: Namespace, verbs: ['create'] })
    // In the host: each member's status entry, by server-side apply.
    .withHostPermissions({ resource: FleetConfig, subresource: 'status', verbs: ['patch'] })
    .complete(reconcileMember);

  const client = manager.client;
  manager
    .controller()
    .named('fleetconfig-members')
    .for(FleetConfig)
    .watches(membersLeaving(fleet))
    .complete(async (req) => {
      const config = await orUndefined(client.get(FleetConfig, { name: req.name }));
      const engaged = new Set(fleet.clusters());
      for (const entry of config?.status?.members ?? []) {
        if (engaged.has(entry.cluster)) continue;
        // Applying nothing as that member's field manager removes the entry it alone owns.
        await client.status().apply({ apiVersion: FleetConfig.apiVersion, kind: FleetConfig.kind, metadata: { name: req.name } }, { fieldManager: memberFieldManager(entry.cluster) });
      }
      return Result.done();
    });
  return fleet;
}

/** A host FleetConfig's events: its copy in every member (and the copy it had, when its namespace changed). */
function copiesOf(event: InformerEvent<KubeObject>, origin: EventOrigin): FleetRequest[] {
  const keys = new Set<string>();
  const name = event.object.metadata?.name;
  if (!name) return [];
  for (const object of event.type === 'update' ? [event.object, event.old] : [event.object]) {
    const namespace = (object as FleetConfig).spec?.namespace;
    if (namespace) keys.add(namespace);
  }
  return origin.clusters().flatMap((cluster) => [...keys].map((namespace) => ({ cluster, namespace, name })));
}

/** The FleetConfigs, enqueued again whenever a member leaves: their status entries for it go. */
function membersLeaving(fleet: Fleet): Source {
  return {
    description: 'fleet members leaving',
    start({ enqueue, cache, signal, onError }) {
      const off = fleet.onClusterChange((change) => {
        if (change.type !== 'disengaged' || signal.aborted) return;
        cache.list(FleetConfig, { signal }).then(
          (list) => {
            for (const config of list.items) enqueue({ name: config.metadata!.name! });
          },
          (err: unknown) => onError(err, `listing FleetConfigs after ${change.cluster} left`),
        );
      });
      signal.addEventListener('abort', off, { once: true });
      return Promise.resolve();
    },
  };
}

/** In one member: make the ConfigMap `req.namespace/req.name` match its FleetConfig, then report. */
async function reconcileMember(req: FleetRequest, ctx: FleetReconcileContext): Promise<ReconcileResult> {
  const key = { namespace: req.namespace!, name: req.name };
  const config = await orUndefined(ctx.host.client.get(FleetConfig, { name: req.name }));
  const copy = await orUndefined(ctx.client.get(ConfigMap, key));
  if (!config || config.metadata?.deletionTimestamp || config.spec.namespace !== req.namespace) {
    // No FleetConfig wants this copy (deleted, or moved to another namespace): remove ours.
    if (copy?.metadata?.labels?.[FLEETCONFIG_LABEL] === req.name) {
      await ctx.client.delete(ConfigMap, key, { preconditions: { uid: copy.metadata.uid! } }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
      ctx.log.info('removed a copy no FleetConfig wants');
    }
    return Result.done();
  }
  const want = { ...config.spec.data };
  try {
    if (!copy) {
      await createCopy(ctx, key, want);
      ctx.log.info('created the copy');
    } else if (!sameData(copy.data ?? {}, want) || copy.metadata?.labels?.[FLEETCONFIG_LABEL] !== req.name) {
      await ctx.client.update({ ...copy, metadata: { ...copy.metadata, labels: { ...copy.metadata?.labels, [FLEETCONFIG_LABEL]: req.name } }, data: want });
      ctx.log.info('put the copy back');
    }
  } catch (err) {
    await report(ctx, req, config, { status: 'False', reason: 'CopyFailed', message: err instanceof Error ? err.message : String(err) });
    throw err;
  }
  await report(ctx, req, config, { status: 'True', reason: 'Copied', message: `ConfigMap ${key.namespace}/${key.name} holds the ${Object.keys(want).length} keys of generation ${config.metadata?.generation ?? 0}` });
  return Result.done();
}

/** Create the copy; its namespace too when missing; a ConfigMap of that name made by someone else is taken over. */
async function createCopy(ctx: FleetReconcileContext, key: { namespace: string; name: string }, data: Record<string, string>): Promise<void> {
  const object = { apiVersion: 'v1' as const, kind: 'ConfigMap' as const, metadata: { ...key, labels: { [FLEETCONFIG_LABEL]: key.name } }, data };
  try {
    await ctx.client.create(object);
  } catch (err) {
    if (isNotFound(err)) {
      // The namespace is missing: create it, then the copy.
      await ctx.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: key.namespace } }).catch((e: unknown) => {
        if (!isAlreadyExists(e)) throw e;
      });
      await ctx.client.create(object);
    } else if (isAlreadyExists(err)) {
      // Not in the cache (it holds labelled ConfigMaps only): someone else's, or ours with the label taken off.
      const live = await ctx.apiReader.get(ConfigMap, key);
      await ctx.client.update({ ...live, metadata: { ...live.metadata, labels: { ...live.metadata?.labels, [FLEETCONFIG_LABEL]: key.name } }, data });
    } else {
      throw err;
    }
  }
}

type Synced = { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };

/** Write this member's entry of `status.members`, as its own field manager, unless it already says so. */
async function report(ctx: FleetReconcileContext, req: FleetRequest, config: DeepReadonly<FleetConfig>, synced: Synced): Promise<void> {
  const generation = config.metadata?.generation ?? 0;
  const before = config.status?.members?.find((m) => m.cluster === req.cluster);
  const condition = before?.conditions?.find((c) => c.type === 'Synced');
  const syncedGeneration = synced.status === 'True' ? generation : before?.syncedGeneration;
  if (condition && condition.status === synced.status && condition.reason === synced.reason && condition.message === synced.message && condition.observedGeneration === generation && before?.syncedGeneration === syncedGeneration) return;
  const lastTransitionTime = condition?.status === synced.status && condition.lastTransitionTime ? condition.lastTransitionTime : new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await ctx.host.client.status().apply(
    {
      apiVersion: FleetConfig.apiVersion,
      kind: FleetConfig.kind,
      metadata: { name: config.metadata!.name! },
      status: { members: [{ cluster: req.cluster, ...(syncedGeneration !== undefined ? { syncedGeneration } : {}), conditions: [{ type: 'Synced', ...synced, observedGeneration: generation, lastTransitionTime }] }] },
    },
    { fieldManager: memberFieldManager(req.cluster) },
  );
}

function sameData(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** What `read` gives, or undefined when the object is not there. */
async function orUndefined<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
