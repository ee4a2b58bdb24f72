/**
 * The two backends the conformance suite runs on: the real kube-apiserver +
 * etcd that envtest started for this vitest run, and the fake API server.
 * Each test file gets a harness per backend with a fresh namespace and the
 * suite's CRDs installed; the same test body runs on both.
 */
import { afterAll, beforeAll } from 'vitest';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import type { CustomResourceDefinitionLike, Environment } from '@kubeloop/envtest';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { createFakeApiServer } from '../../src/index.js';
import type { FakeApiServer } from '../../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../../test/support/env.js';

export const GROUP = 'conformance.kubeloop.dev';

export interface Widget extends KubeObject {
  apiVersion?: 'conformance.kubeloop.dev/v1';
  kind?: 'Widget';
  spec?: { size?: number; replicas?: number; color?: string; ports?: { name: string; port: number }[]; tags?: string[]; [k: string]: unknown };
  status?: { phase?: string; replicas?: number; conditions?: { type: string; status: string }[]; [k: string]: unknown };
}
/** Namespaced, status and scale subresources, a selectable field, map-list ports. */
export const Widget = defineKind<Widget>({ group: GROUP, version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true, listKind: 'WidgetList' });

export interface Gadget extends KubeObject {
  apiVersion?: 'conformance.kubeloop.dev/v1';
  kind?: 'Gadget';
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}
/** Cluster-scoped, no subresources. */
export const Gadget = defineKind<Gadget>({ group: GROUP, version: 'v1', kind: 'Gadget', plural: 'gadgets', namespaced: false, listKind: 'GadgetList' });

const open = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

export const CRDS: CustomResourceDefinitionLike[] = [
  {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `widgets.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wd'] },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
          selectableFields: [{ jsonPath: '.spec.color' }],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  'x-kubernetes-preserve-unknown-fields': true,
                  properties: {
                    color: { type: 'string' },
                    size: { type: 'integer' },
                    replicas: { type: 'integer' },
                    tags: { type: 'array', items: { type: 'string' } },
                    ports: {
                      type: 'array',
                      'x-kubernetes-list-type': 'map',
                      'x-kubernetes-list-map-keys': ['name'],
                      items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, port: { type: 'integer' } } },
                    },
                  },
                },
                status: {
                  type: 'object',
                  'x-kubernetes-preserve-unknown-fields': true,
                  properties: {
                    phase: { type: 'string' },
                    replicas: { type: 'integer' },
                    conditions: {
                      type: 'array',
                      'x-kubernetes-list-type': 'map',
                      'x-kubernetes-list-map-keys': ['type'],
                      items: { type: 'object', required: ['type'], properties: { type: { type: 'string' }, status: { type: 'string' } } },
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  },
  {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gadgets.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Cluster',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: open } }],
    },
  },
];

export interface Harness {
  readonly backend: 'envtest' | 'fake';
  /** A namespace made for this file. */
  readonly namespace: string;
  /** A client with a field owner. */
  client(fieldOwner?: string): Client;
  /** The fake, on the fake backend. */
  readonly fake: FakeApiServer | undefined;
  /** Make a unique name. */
  name(prefix: string): string;
}

export const BACKENDS = [{ backend: 'envtest' as const }, { backend: 'fake' as const }];

/**
 * Set up a backend for the tests of the enclosing describe block (hooks),
 * and hand back an accessor valid inside tests.
 */
export function useBackend(backend: 'envtest' | 'fake'): () => Harness {
  let harness: Harness | undefined;
  let fake: FakeApiServer | undefined;
  let env: Environment | undefined;
  beforeAll(async () => {
    let make: (owner: string) => Client;
    if (backend === 'fake') {
      const f = createFakeApiServer();
      fake = f;
      await f.installCRDs(CRDS);
      make = (owner) => f.client({ fieldOwner: owner });
    } else {
      const e = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
      env = e;
      await e.start();
      await e.installCRDs(CRDS);
      make = (owner) => createClient({ kubeConfig: e.kubeConfig, fieldOwner: owner, transportOptions: { qps: 0 } });
    }
    const clients = new Map<string, Client>();
    const cached = make;
    make = (owner) => {
      let c = clients.get(owner);
      if (!c) clients.set(owner, (c = cached(owner)));
      return c;
    };
    const namespace = uniqueName('conf');
    await make('conformance').create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    harness = { backend, namespace, client: (owner = 'conformance') => make(owner), fake, name: (prefix) => uniqueName(prefix) };
  });
  afterAll(async () => {
    if (harness) await harness.client().delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: harness.namespace }).catch(() => undefined);
    await fake?.close();
    await env?.stop();
  });
  return () => {
    if (!harness) throw new Error('the backend is not set up (use it inside a test)');
    return harness;
  };
}
