/** Shared by the fleet tests: member control planes, the copy controller they run, and what a test reads back. */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createClient, isAlreadyExists, isNotFound, mergePatch } from '@kubeloop/client';
import type { Client, KubeConfigLike } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';
import type { Fleet } from '../../src/fleet/index.js';
import { labelSelectorPredicate, Result } from '../../src/index.js';

/** Host ConfigMaps with this label are copied into every member. */
export const COPY_LABEL = 'fleet-test/copy';
/** The host object's annotation a member's reconcile writes: `copied.fleet-test/<cluster>` = the data it copied. */
export const reportKey = (cluster: string): string => `copied.fleet-test/${cluster}`;

/**
 * The fleet controller the tests run: every labelled ConfigMap of the host
 * is copied, under the same namespace and name, into every member; a member's
 * edit of its copy is put back; each member reports what it copied in an
 * annotation of the host's object (a member's state enqueuing nothing in the
 * host, but written there). `onReconcile` may slow a cluster down.
 */
export function registerCopyController(fleet: Fleet, ns: string, options: { onReconcile?: (cluster: string, signal: AbortSignal) => Promise<void> } = {}): void {
  fleet
    .controller()
    .named('copy')
    .for(ConfigMap, { predicates: [labelSelectorPredicate(`${COPY_LABEL}=true`)] })
    .watchesHost(ConfigMap, (event, origin) => (event.object.metadata?.namespace === ns && event.object.metadata.labels?.[COPY_LABEL] === 'true'
      ? origin.clusters().map((cluster) => ({ cluster, namespace: ns, name: event.object.metadata!.name! }))
      : []))
    .complete(async (req, ctx) => {
      await options.onReconcile?.(req.cluster, ctx.signal);
      let source: Awaited<ReturnType<typeof ctx.host.client.get<typeof ConfigMap>>>;
      try {
        source = await ctx.host.client.get(ConfigMap, { namespace: req.namespace!, name: req.name });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // the host's cache may lag the member's watch (a just-created source, a loaded machine); a delete is confirmed by
        // a live read first, as a controller whose member may be the host itself must (CI, 2026-12-08: the copy
        // controller of fleet-registry.test.ts, member and host one plane, deleted the source it had not cached yet)
        const live = await ctx.host.apiReader.get(ConfigMap, { namespace: req.namespace!, name: req.name }).catch((e: unknown) => {
          if (isNotFound(e)) return undefined;
          throw e;
        });
        if (live) return Result.requeueAfter(100);
        await ctx.client.delete(ConfigMap, { namespace: req.namespace!, name: req.name }).catch((e: unknown) => {
          if (!isNotFound(e)) throw e;
        });
        return Result.done();
      }
      await ctx.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: req.namespace! } }).catch((e: unknown) => {
        if (!isAlreadyExists(e)) throw e;
      });
      const want = { ...source.data };
      const key = { namespace: req.namespace!, name: req.name };
      let copy: typeof source | undefined;
      try {
        copy = await ctx.client.get(ConfigMap, key);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (!copy) {
        await ctx.client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...key, labels: { [COPY_LABEL]: 'true' } }, data: want });
      } else if (JSON.stringify(sorted(copy.data ?? {})) !== JSON.stringify(sorted(want))) {
        await ctx.client.patch(ConfigMap, key, mergePatch({ data: Object.fromEntries<string | null>([...Object.keys(copy.data ?? {}).map((k): [string, null] => [k, null]), ...Object.entries(want)]) }));
      }
      ctx.log.info('copy up to date');
      const report = JSON.stringify(sorted(want));
      if (source.metadata?.annotations?.[reportKey(req.cluster)] !== report) {
        await ctx.host.client.patch(ConfigMap, key, mergePatch({ metadata: { annotations: { [reportKey(req.cluster)]: report } } }));
      }
      return Result.done();
    });
}

function sorted(data: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).sort(([a], [b]) => a.localeCompare(b)));
}

/** A member's copy's data, or undefined when it has none. */
export async function copyIn(client: Client, ns: string, name: string): Promise<Record<string, string> | undefined> {
  try {
    const cm = await client.get(ConfigMap, { namespace: ns, name });
    return { ...cm.data };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** A client of a member plane (close its transport when done). */
export function memberClient(kubeConfig: KubeConfigLike): Client {
  return createClient({ kubeConfig, fieldOwner: 'fleet-test-writer' });
}

/** Established TCP connections of this process to `port` (its sockets in /proc/self/fd, matched by inode in /proc/net/tcp). */
export function connectionsTo(port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  let n = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const remote = cols[2]!;
      if (cols[3] === '01' && parseInt(remote.slice(remote.lastIndexOf(':') + 1), 16) === port && inodes.has(cols[9]!)) n++;
    }
  }
  return n;
}
