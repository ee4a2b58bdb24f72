/**
 * What the `@example` blocks of the packages' TSDoc take for granted: the
 * application around them (its manager, client, objects, signal...), typed
 * as the application would have them. scripts/check-examples.ts imports
 * from here every name an example uses and finds neither in the example,
 * nor in the file it documents, nor among the `@kubeloop/*` exports, nor in
 * its table of third-party names. Anything an example uses that is not
 * here, and not importable, fails the check: declare it in the example.
 */
import type { InformerCache } from '@kubeloop/cache';
import type { Client, Fetched, KubeConfigLike, ObjectKey, Transport } from '@kubeloop/client';
import type { Environment } from '@kubeloop/envtest';
import type { LeaderElector } from '@kubeloop/leaderelection';
import type { ControllerBuilder, EventRecorder, Manager, ReconcileContext, Reconciler, Request } from '@kubeloop/manager';
import type { RoleManifest } from '@kubeloop/manager/rbac';
import type { Fleet } from '@kubeloop/manager/fleet';
import type { RESTMapper } from '@kubeloop/mapper';
import type { ConfigMap, Deployment, KubeObject, Pod, Scheme, Secret } from '@kubeloop/scheme';
import type { FakeApiServer } from '@kubeloop/testing';
import type { CertificateSource, FieldError, Spoke, TokenAuthorizer, Webhook, WebhookServer } from '@kubeloop/webhook';
import type { TestManager } from '@kubeloop/testing/manager';
import type { HardDisk, HardDiskV2 } from '@kubeloop/example-harddisk-operator';

// The application's parts.
export declare const manager: Manager;
export declare const client: Client;
export declare const cache: InformerCache;
export declare const mapper: RESTMapper;
export declare const transport: Transport;
export declare const scheme: Scheme;
export declare const registry: Manager['registry'];
export declare const kubeConfig: KubeConfigLike;
export declare const kc: KubeConfigLike;
export declare const env: Environment;
export declare const fake: FakeApiServer;
export declare const fakeApi: FakeApiServer;
export declare const fleet: Fleet;
export declare const server: WebhookServer;
export declare const hook: Webhook;
export declare const tm: TestManager;
export declare const hardDiskV1Spoke: Spoke<HardDisk, HardDiskV2>;
export declare const serving: { certPem: string; keyPem: string };
export declare const certificates: CertificateSource;
export declare const authorizer: TokenAuthorizer;
export declare const elector: LeaderElector;
export declare const builder: ControllerBuilder;
export declare const reconciler: Reconciler;
export declare const recorder: EventRecorder;
export declare const roles: readonly RoleManifest[];
export declare const path: string;
export declare const log: Manager['logger'];
export declare const signal: AbortSignal;
export declare const shutdownSignal: AbortSignal;
export declare const shutdown: AbortController;

// What a reconcile or a handler has at hand.
export declare const req: Request;
export declare const ctx: ReconcileContext;
export declare const err: unknown;
export declare const key: ObjectKey;
export declare const namespace: string;
export declare const name: string;
export declare const ns: string;
export declare const host: string;
/** A HardDisk as read (apiVersion and kind set) whose spec the reconciler has checked. */
export declare const disk: Fetched<HardDisk> & { spec: NonNullable<HardDisk['spec']> };
export declare const old: Fetched<HardDisk> & { spec: NonNullable<HardDisk['spec']> };
export declare const spec: { size?: string };
export declare const pod: Pod;
export declare const deployment: Deployment;
export declare const configMap: ConfigMap;
export declare const cm: ConfigMap;
export declare const secret: Secret & { data: Record<string, string> };
export declare const team: KubeObject;
export declare const obj: KubeObject;
export declare const before: ConfigMap;
export declare const after: ConfigMap;
export declare const certPem: string;
export declare const keyPem: string;
export declare const certFile: string;
export declare const keyFile: string;
export declare const retryMs: number;
export declare const body: unknown;

// The application's own functions.
export declare function tryAgain(): Promise<boolean>;
export declare function backendUp(): boolean;
export declare function pruneOldBackups(): Promise<void>;
export declare function releaseDisk(disk: HardDisk): Promise<void>;
export declare function runReport(signal: AbortSignal): Promise<void>;
export declare function runControllers(signal: AbortSignal): Promise<void>;
export declare function reconcile(key: string): Promise<void>;
export declare function reconcileWidget(req: Request, ctx: ReconcileContext): Promise<void>;
export declare function modify(cm: ConfigMap): Promise<ConfigMap>;
export declare function update(): Promise<void>;
export declare function podsOn(node: KubeObject): { ns: string; name: string }[];
export declare function storageClassErrors(disk: HardDisk): FieldError[];
export declare function writeFileSyncAndReturnPath(content: string): string;

// A kind of someone else's CRD.
export declare const Widget: { readonly apiVersion: 'example.com/v1'; readonly kind: 'Widget' };
export declare const FleetConfig: { readonly apiVersion: 'fleet.example.com/v1'; readonly kind: 'FleetConfig' };
export interface Certificate extends KubeObject {
  spec?: { secretName: string; dnsNames: string[]; issuerRef: { name: string } };
}
