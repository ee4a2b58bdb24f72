/** Small helpers for the conformance tests: raw requests, error capture, watch collection. */
import { expect } from 'vitest';
import { isClientError } from '@kubeloop/client';
import type { Client, ClientError, WatchEvent } from '@kubeloop/client';
import type { Query } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import type { Harness } from './backends.js';

export interface Raw {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly contentType: string | undefined;
  /** The `Warning` header, if any. */
  readonly warning: string | undefined;
}

/** A request straight through the client's transport, answer parsed. */
export async function raw(h: Harness, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, options: { body?: unknown; query?: Query; contentType?: string; accept?: string } = {}): Promise<Raw> {
  const res = await h.client().transport.request({
    method,
    path,
    ...(options.query ? { query: options.query } : {}),
    ...(options.body === undefined ? {} : { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }),
    ...(options.contentType ? { contentType: options.contentType } : {}),
    ...(options.accept ? { accept: options.accept } : {}),
  });
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(res.body) as Record<string, unknown>;
  } catch {
    body = { text: res.body };
  }
  const ct = res.headers['content-type'];
  const warning = res.headers['warning'];
  return { status: res.status, body, contentType: typeof ct === 'string' ? ct : undefined, warning: Array.isArray(warning) ? warning.join(', ') : warning };
}

/** The ClientError a promise rejects with (fails the test if it resolves or rejects otherwise). */
export async function failure(p: Promise<unknown>): Promise<ClientError> {
  try {
    await p;
  } catch (err) {
    if (isClientError(err)) return err;
    throw err;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** Expect a failure with this HTTP code and reason. */
export async function expectStatus(p: Promise<unknown>, code: number, reason: string): Promise<ClientError> {
  const err = await failure(p);
  expect({ code: err.code, reason: err.reason }, err.message).toEqual({ code, reason });
  return err;
}

/** Collect watch events until `done` says so (or `timeoutMs`). */
export async function collect<T>(events: AsyncIterableIterator<WatchEvent<T>>, done: (seen: WatchEvent<T>[]) => boolean, timeoutMs = 10_000): Promise<WatchEvent<T>[]> {
  const seen: WatchEvent<T>[] = [];
  const timer = setTimeout(() => void events.return?.(), timeoutMs);
  try {
    for await (const e of events) {
      seen.push(e);
      if (done(seen)) break;
    }
  } finally {
    clearTimeout(timer);
    await events.return?.();
  }
  return seen;
}

/** `type name` of each event, for compact assertions. */
export function summary<T extends { metadata?: { name?: string } }>(events: readonly WatchEvent<T>[]): string[] {
  return events.map((e) => `${e.type} ${e.object.metadata?.name ?? ''}`.trim());
}

export function configMap(namespace: string, name: string, data: Record<string, string> = {}, labels?: Record<string, string>): { apiVersion: 'v1'; kind: 'ConfigMap'; metadata: { name: string; namespace: string; labels?: Record<string, string> }; data: Record<string, string> } {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, ...(labels ? { labels } : {}) }, data };
}

export function deployment(namespace: string, name: string, containers: { name: string; image: string; [k: string]: unknown }[] = [{ name: 'app', image: 'app:v1' }]): {
  apiVersion: 'apps/v1';
  kind: 'Deployment';
  metadata: { name: string; namespace: string };
  spec: Record<string, unknown>;
} {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers } } },
  };
}

export function widget(namespace: string, name: string, spec: Record<string, unknown> = { size: 1 }): { apiVersion: 'conformance.kubeloop.dev/v1'; kind: 'Widget'; metadata: { name: string; namespace: string }; spec: Record<string, unknown> } {
  return { apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', metadata: { name, namespace }, spec };
}

/** FieldsV1 of each managed-fields entry, by manager name. */
export function fieldsByManager(obj: KubeObject): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const m of obj.metadata?.managedFields ?? []) {
    const fields: unknown = m.fieldsV1;
    out[m.manager ?? ''] = fields;
  }
  return out;
}

export type { Client };

/**
 * The CRD of a kind of a test's own: `things` (kind `Thing`) in `group`, one
 * served and stored version `v1` with `openAPIV3Schema` (by default one that
 * keeps any field); `resourceVersion` to update it.
 */
export function thingCRD(group: string, openAPIV3Schema: Record<string, unknown> = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, resourceVersion?: string): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `things.${group}`, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: { group, scope: 'Namespaced', names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema } }] },
  };
}
