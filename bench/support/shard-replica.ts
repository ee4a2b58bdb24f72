/**
 * One replica of the sharded HardDisk operator, for `pnpm bench:sharding`
 * when it does not run the example itself: the example's controller
 * (`harddiskController`, `HardDiskReconciler`) in a manager whose leadership
 * is a shard ring, HardDisks cached by uid share, their ConfigMaps by their
 * controller owner's, the controller sharded. Logs JSON lines as the
 * example does (`metrics listening` with its URL); stops on SIGTERM
 * (draining, its member Lease deleted).
 *
 *   node support/shard-replica.ts KUBECONFIG RING [LEASE_NAMESPACE]
 */
import 'reflect-metadata';
import { createClient, loadKubeConfig } from '@kubeloop/client';
import { createShardRing } from '@kubeloop/leaderelection';
import { createManager, ringLeadership, ringShardFilter, signalHandler, TOKENS } from '@kubeloop/manager';
import { builtinScheme, ConfigMap } from '@kubeloop/scheme';
import { HardDisk, HardDiskReconciler, harddiskController, StorageClassCatalog } from '@kubeloop/example-harddisk-operator';

const [kubeconfig, ringName, leaseNamespace = 'default'] = process.argv.slice(2);
if (!kubeconfig || !ringName) {
  process.stderr.write('usage: shard-replica KUBECONFIG RING [LEASE_NAMESPACE]\n');
  process.exit(2);
}
const kubeConfig = loadKubeConfig(kubeconfig);
const ring = createShardRing({ client: createClient({ kubeConfig, fieldOwner: 'harddisk-operator' }), namespace: leaseNamespace, name: ringName });
const manager = createManager({
  kubeConfig,
  scheme: builtinScheme.extend(HardDisk),
  fieldOwner: 'harddisk-operator',
  leadership: ringLeadership(ring),
  metricsBindAddress: '127.0.0.1:0',
  healthProbeBindAddress: '127.0.0.1:0',
  cache: {
    byKind: [
      { kind: HardDisk, options: { shard: ringShardFilter(ring) } },
      { kind: ConfigMap, options: { shard: ringShardFilter(ring, 'controller-owner') } },
    ],
  },
});
manager.register(HardDiskReconciler, { ...harddiskController, options: { shard: { ring } }, inject: [TOKENS.Client, TOKENS.EventRecorderProvider, StorageClassCatalog] });
await manager.start(signalHandler());
process.exit(0);
