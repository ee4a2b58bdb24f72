/**
 * The test manager's recording mode: a transport that notes every request
 * the manager makes (its client and cache, leader election's and the event
 * recorder's forks, watches included) on the way to either backend, and an
 * audit of those requests against RBAC roles.
 */
import { readFileSync } from 'node:fs';
import type { Transport } from '@kubeloop/client';
import type { TransportRequest } from '@kubeloop/client/internal';
import { auditRequests, rolesFor } from '@kubeloop/manager/rbac';
import type { PermissionRequirement, RequestAudit, RoleManifest } from '@kubeloop/manager/rbac';
import { parseAllDocuments } from 'yaml';
import { TestingError } from './errors.js';

/** One request the test manager made. */
export interface ManagerRequest {
  readonly method: string;
  /** Path and query, as sent: `/api/v1/configmaps?watch=true&resourceVersion=12`. */
  readonly url: string;
  /** The answer's status; 0 when there was none (a network error, an abort). */
  status: number;
}

function urlOf(req: TransportRequest): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) params.append(k, String(v));
  const q = params.toString();
  return q ? `${req.path}?${q}` : req.path;
}

/** `transport`, and every fork of it, noting each request in `sink`. */
export function recordingTransport(transport: Transport, sink: ManagerRequest[]): Transport {
  const note = (req: TransportRequest): ManagerRequest => {
    const record: ManagerRequest = { method: req.method, url: urlOf(req), status: 0 };
    sink.push(record);
    return record;
  };
  return {
    get server() {
      return transport.server;
    },
    get config() {
      return transport.config;
    },
    get options() {
      return transport.options;
    },
    async request(req) {
      const record = note(req);
      const res = await transport.request(req);
      record.status = res.status;
      return res;
    },
    async stream(req) {
      const record = note(req);
      const res = await transport.stream(req);
      record.status = res.statusCode ?? 0;
      return res;
    },
    fork: (options) => recordingTransport(transport.fork(options), sink),
    close: () => transport.close(),
  };
}

/** Roles from a role file (`config/rbac/role.yaml`): every ClusterRole and Role document in it. */
function rolesFromFile(path: string): RoleManifest[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new TestingError('InvalidArgument', `auditPermissions: cannot read ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  const roles = parseAllDocuments(text)
    .map((d) => d.toJSON() as unknown)
    .filter((d): d is RoleManifest => typeof d === 'object' && d !== null && ((d as RoleManifest).kind === 'ClusterRole' || (d as RoleManifest).kind === 'Role'));
  if (roles.length === 0) throw new TestingError('InvalidArgument', `auditPermissions: ${path} holds no ClusterRole or Role`);
  return roles.map((r) => ({ ...r, rules: r.rules ?? [] }));
}

/** The audit of `requests` against `roles` (a role file's path, roles, or the manager's own permissions). */
export function auditManagerRequests(requests: readonly ManagerRequest[], roles: string | readonly RoleManifest[] | undefined, permissions: () => PermissionRequirement[]): RequestAudit {
  const against = typeof roles === 'string' ? rolesFromFile(roles) : (roles ?? rolesFor(permissions(), { name: 'manager' }));
  return auditRequests(against, requests);
}
