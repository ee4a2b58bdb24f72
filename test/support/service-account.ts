/** A ServiceAccount bound to generated roles, as a kubeconfig: how RBAC tests run an operator as its role. */
import { KubeConfig } from '@kubernetes/client-node';
import type { Client } from '@kubeloop/client';

/** A Role or ClusterRole manifest as `kubeloop generate rbac` writes it. */
export interface RoleLike {
  readonly kind: string;
  readonly metadata: { readonly namespace?: string };
  readonly rules: readonly object[];
}

/**
 * Creates ServiceAccount `name` in `namespace`, a copy of every role named
 * `name` bound to it, and a kubeconfig for the API server of `admin` speaking
 * with a token of that account.
 *
 * @example
 * ```ts
 * const kc = await serviceAccountKubeConfig(admin, env.kubeConfig, { name: 'op-1', namespace: 'op-system', roles });
 * ```
 */
export async function serviceAccountKubeConfig(
  admin: Client,
  adminConfig: KubeConfig,
  { name, namespace, roles }: { readonly name: string; readonly namespace: string; readonly roles: readonly RoleLike[] },
): Promise<KubeConfig> {
  await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  for (const role of roles) {
    const roleNamespace = role.metadata.namespace;
    const metadata = { name, ...(roleNamespace ? { namespace: roleNamespace } : {}) };
    await admin.create({ ...role, metadata, rules: role.rules.map((r) => ({ ...r })) } as never);
    await admin.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: roleNamespace ? 'RoleBinding' : 'ClusterRoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: role.kind, name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    } as never);
  }
  const answer = await admin
    .subResource('token')
    .create<{ status: { token: string } }>({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } }, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } });
  const cluster = adminConfig.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'envtest', server: cluster.server, ...(cluster.caData ? { caData: cluster.caData } : {}), ...(cluster.caFile ? { caFile: cluster.caFile } : {}), skipTLSVerify: false }],
    users: [{ name, token: answer.status.token }],
    contexts: [{ name, cluster: 'envtest', user: name }],
    currentContext: name,
  });
  return kc;
}
