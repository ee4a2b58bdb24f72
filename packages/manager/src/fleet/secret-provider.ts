/**
 * The kubeconfig-Secret provider: member clusters are Secrets in the host
 * cluster, selected by a label, each holding a kubeconfig (as
 * multicluster-runtime's kubeconfig provider and Cluster API keep them). A
 * Secret added engages its cluster, a changed kubeconfig re-engages it, a
 * Secret deleted (or no longer labelled) disengages it. Each Secret's events
 * are handled in order on a chain of their own, so a member slow to leave
 * never delays another's join or leave. A kubeconfig is untrusted input,
 * read under a `KubeconfigPolicy` (strict unless the options allow more).
 */
import { Informer, clientListWatcher } from '@kubeloop/cache';
import { isClientError, kubeConfigFromText } from '@kubeloop/client';
import type { KubeconfigPolicy } from '@kubeloop/client';
import { checkKubeconfigPolicy } from '@kubeloop/client/internal';
import { Secret } from '@kubeloop/scheme';
import { describeError, ManagerError } from '../errors.js';
import type { ClusterProvider } from './provider.js';
import { untilAborted } from './provider.js';

/** Options of {@link kubeconfigSecretProvider}. */
export interface KubeconfigSecretProviderOptions {
  /** The host namespace holding the Secrets. Required (a provider never reads every Secret of the host). */
  readonly namespace: string;
  /** Which Secrets are member clusters. Default: `fleet.kubeloop.dev/kubeconfig=true`. */
  readonly labelSelector?: string;
  /** The data key holding the kubeconfig. Default: `kubeconfig` (Cluster API's `value` works too, when named). */
  readonly key?: string;
  /** The cluster's name for a Secret. Default: the Secret's name. */
  readonly clusterName?: (secret: { readonly metadata?: { readonly name?: string; readonly labels?: Readonly<Record<string, string>> } }) => string;
  /**
   * What a Secret's kubeconfig may make the operator do beyond reaching a
   * server with the credentials it embeds: exec plugins and auth-provider
   * commands by name, auth providers, files inside given folders, a proxy,
   * insecure TLS, the host's own API server, metadata addresses (see
   * `KubeconfigPolicy`, docs/multicluster.md "Security"). The host's server
   * is the host cluster's. Default: `{}`, nothing beyond that: a Secret
   * asking for more is refused, logged (one line naming the Secret, key and
   * field) and its cluster left disengaged.
   */
  readonly policy?: KubeconfigPolicy;
}

/** The label `kubeconfigSecretProvider` selects by default. */
export const KUBECONFIG_SECRET_LABEL = 'fleet.kubeloop.dev/kubeconfig';

/**
 * Member clusters from kubeconfig Secrets in the host cluster. Reads only
 * the Secrets of `namespace` that carry the label (a list+watch of its own,
 * through the host's live client: the host's cache never holds Secrets for
 * it). A Secret whose kubeconfig cannot be read is logged and its cluster
 * left disengaged until the Secret is fixed.
 *
 * @throws {@link ManagerError} `InvalidOptions` without a namespace.
 * @example
 * ```ts
 * // kubectl -n fleet-system create secret generic eu-1 --from-file=kubeconfig=eu-1.yaml
 * // kubectl -n fleet-system label secret eu-1 fleet.kubeloop.dev/kubeconfig=true
 * const fleet = createFleet(manager, { provider: kubeconfigSecretProvider({ namespace: 'fleet-system' }) });
 * ```
 */
export function kubeconfigSecretProvider(options: KubeconfigSecretProviderOptions): ClusterProvider {
  if (typeof options?.namespace !== 'string' || options.namespace === '') {
    throw new ManagerError('InvalidOptions', "kubeconfigSecretProvider needs { namespace }: the host namespace holding the kubeconfig Secrets (e.g. 'fleet-system')");
  }
  const policy = options.policy ?? {};
  try {
    checkKubeconfigPolicy(policy, 'kubeconfigSecretProvider');
  } catch (cause) {
    throw new ManagerError('InvalidOptions', (cause as Error).message, { cause });
  }
  const labelSelector = options.labelSelector ?? `${KUBECONFIG_SECRET_LABEL}=true`;
  const key = options.key ?? 'kubeconfig';
  const nameOf = options.clusterName ?? ((s) => s.metadata?.name ?? '');
  return {
    description: `kubeconfig Secrets in ${options.namespace} (${labelSelector})`,
    // A list+watch of its own (no get): the Secrets of one namespace.
    permissions: () => [{ group: '', resource: 'secrets', verbs: ['list', 'watch'], namespaces: [options.namespace], reason: `fleet provider: kubeconfig Secrets (${labelSelector})` }],
    async run(fleet, signal) {
      const log = fleet.log.child({ component: 'fleet', provider: 'kubeconfig-secrets' });
      const informer = new Informer([{ lw: clientListWatcher(fleet.host.apiReader, Secret, { namespace: options.namespace, labelSelector }), namespace: options.namespace }]);
      /** Secret name -> the cluster it engaged and the kubeconfig text it engaged with (touched only on that Secret's chain). */
      const engaged = new Map<string, { cluster: string; text: string }>();
      /** Secret name -> the cluster and kubeconfig text that could not be engaged: reported once, tried again when the Secret changes. */
      const failed = new Map<string, { cluster: string; text: string | undefined }>();
      const hostServer = fleet.host.transport.server;
      const apply = async (secret: Secret): Promise<void> => {
        const secretName = secret.metadata?.name ?? '';
        const where = `${options.namespace}/${secretName}`;
        const encoded = secret.data?.[key];
        const text = encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
        const before = engaged.get(secretName);
        const cluster = nameOf(secret);
        if (before && before.cluster === cluster && before.text === text) return; // nothing that matters changed
        const failedBefore = failed.get(secretName);
        if (!before && failedBefore && failedBefore.cluster === cluster && failedBefore.text === text) return; // refused already, and reported
        failed.delete(secretName);
        // A new name (or no kubeconfig any more) disengages the old cluster; a new kubeconfig under the same name re-engages it.
        if (before && (before.cluster !== cluster || text === undefined)) {
          engaged.delete(secretName);
          await fleet.disengage(before.cluster);
        }
        if (text === undefined) {
          failed.set(secretName, { cluster, text });
          log.error({ secret: where, key }, 'the Secret has no kubeconfig under its key; its cluster stays disengaged');
          return;
        }
        try {
          const kubeConfig = kubeConfigFromText(text, { source: `Secret ${where} key ${key}`, policy, hostServer });
          await fleet.engage(cluster, { kubeConfig });
          engaged.set(secretName, { cluster, text });
        } catch (err) {
          // A kubeconfig that cannot be read (or is refused) leaves its cluster disengaged (not running on the old credentials).
          if (engaged.get(secretName)?.cluster === cluster) {
            engaged.delete(secretName);
            await fleet.disengage(cluster);
          }
          failed.set(secretName, { cluster, text });
          if (isClientError(err) && err.reason === 'PolicyRefused') {
            log.error({ secret: where, key, field: err.field, cluster }, `kubeconfig refused: ${err.message}`);
          } else {
            log.error({ secret: where, err: describeError(err) }, 'cannot engage the cluster of this Secret; fix the Secret');
          }
        }
      };
      const remove = async (secret: Secret): Promise<void> => {
        failed.delete(secret.metadata?.name ?? '');
        const before = engaged.get(secret.metadata?.name ?? '');
        if (!before) return;
        engaged.delete(secret.metadata?.name ?? '');
        await fleet.disengage(before.cluster);
      };
      /** Secret name -> the tail of its chain: one Secret's events in order, different Secrets at once. */
      const chains = new Map<string, Promise<void>>();
      const enqueue = (secret: Secret, step: (s: Secret) => Promise<void>): void => {
        const name = secret.metadata?.name ?? '';
        const next = (chains.get(name) ?? Promise.resolve())
          .then(() => step(secret))
          .catch((err: unknown) => {
            log.error({ secret: `${options.namespace}/${name}`, err: describeError(err) }, 'handling a change of this Secret failed');
          });
        chains.set(name, next);
        void next.then(() => {
          if (chains.get(name) === next) chains.delete(name);
        });
      };
      // The handlers return at once: the informer's own delivery never waits for an engage or a disengage.
      informer.addEventHandler({
        onAdd: (s) => enqueue(s, apply),
        onUpdate: (_old, s) => enqueue(s, apply),
        onDelete: (s) => enqueue(s, remove),
      });
      informer.start();
      try {
        await untilAborted(signal);
      } finally {
        await informer.stop();
        await Promise.all([...chains.values()]);
      }
    },
  };
}
