/**
 * `kubeloop shards` against a real API server: a ring of three members as
 * createShardRing keeps it, read back from its Leases as a table and as
 * JSON: every member live, disjoint holdings covering every bucket, the
 * split each is given, the hash ranges held; a member that stopped
 * renewing shows as not live with its buckets held by no live member. The
 * command docs/sharding.md shows is run exactly as written.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, loadKubeConfig } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createShardRing, formatMicroTime, memberLeaseName, SHARD_BUCKETS_ANNOTATION, SHARD_HELD_ANNOTATION, SHARD_RING_LABEL } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import { documentedCommands } from '../../../test/support/doc-commands.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { describeShards, isCliError, runCli } from '../src/index.js';
import type { ShardRingView } from '../src/index.js';
import { io } from './support.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300, buckets: 16 };

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs members of a ring until stopped. */
function ringOf(client: Client, namespace: string, name: string, ids: readonly string[]): { rings: ShardRing[]; stop: () => Promise<void> } {
  const ac = new AbortController();
  const rings = ids.map((identity) => createShardRing({ client, namespace, name, identity, ...TIMING }));
  const done = rings.map((r) => r.run(ac.signal));
  return { rings, stop: async () => (ac.abort(), void (await Promise.all(done))) };
}

const covered = (rings: readonly ShardRing[]): boolean => rings.map((r) => r.active().size).reduce((a, b) => a + b, 0) === TIMING.buckets && rings.every((r) => r.active().size > 0);

describe('kubeloop shards', () => {
  let admin: Client;
  const namespace = uniqueName('shards');

  beforeAll(async () => {
    admin = createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()) });
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  });
  afterAll(async () => {
    await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: namespace }).catch(() => undefined);
  });

  it('shows each member of a running ring live, holding disjoint buckets that cover the hash space', async () => {
    const { rings, stop } = ringOf(admin, namespace, 'disks', ['replica-a', 'replica-b', 'replica-c']);
    try {
      await eventually(() => covered(rings), 'the ring to settle');
      const json = io();
      expect(await runCli(['shards', '--ring', 'disks', '--namespace', namespace, '--kubeconfig', testKubeconfigPath(), '--json'], json.io)).toBe(0);
      const view = JSON.parse(json.out.join('')) as ShardRingView;
      expect(view).toMatchObject({ ring: 'disks', namespace, buckets: TIMING.buckets, unheld: [] });
      expect(view.members.map((m) => [m.identity, m.lease, m.live])).toEqual(['replica-a', 'replica-b', 'replica-c'].map((id) => [id, memberLeaseName('disks', id), true]));
      // What the table says each holds is what each member works on; the split gives each what it holds.
      for (const m of view.members) {
        const ring = rings.find((r) => r.identity === m.identity)!;
        expect(m.held).toEqual([...ring.active()].sort((a, b) => a - b));
        expect(m.assigned).toEqual(m.held);
        expect(m.ranges.length).toBeGreaterThan(0);
      }
      expect(view.members.flatMap((m) => m.held).sort((a, b) => a - b)).toEqual(Array.from({ length: TIMING.buckets }, (_, b) => b));
      const all = view.members.flatMap((m) => m.ranges);
      expect(all.some((r) => r.startsWith('[0x0000000000000000, 0x'))).toBe(true);
      expect(all.some((r) => r.endsWith(', 0x10000000000000000)'))).toBe(true);
      const table = io();
      expect(await runCli(['shards', '--ring', 'disks', '-n', namespace, '--kubeconfig', testKubeconfigPath()], table.io)).toBe(0);
      const text = table.out.join('');
      expect(text).toContain(`shard ring disks in ${namespace}: 3 live of 3 member(s), 16 buckets`);
      expect(text).toMatch(/replica-a\s+yes\s+\d+\.\ds ago\s+\d+\s+\d+\s+[0-9,-]+/);
      expect(text).toContain('every bucket is held by a live member');
    } finally {
      await stop();
    }
  });

  it('shows a member that stopped renewing as not live, its buckets held by no live member', async () => {
    // A Lease as a member cut off a minute ago left it.
    await admin.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: memberLeaseName('stale', 'gone'), namespace, labels: { [SHARD_RING_LABEL]: 'stale' }, annotations: { [SHARD_HELD_ANNOTATION]: '0-3,9', [SHARD_BUCKETS_ANNOTATION]: '16' } },
      spec: { holderIdentity: 'gone', leaseDurationSeconds: 15, renewTime: formatMicroTime(Date.now() - 60_000) },
    });
    const view = await describeShards({ ring: 'stale', namespace, kubeconfigPath: testKubeconfigPath() });
    expect(view.members).toMatchObject([{ identity: 'gone', live: false, held: [0, 1, 2, 3, 9], assigned: [] }]);
    expect(view.members[0]!.renewedAgoMs).toBeGreaterThanOrEqual(59_000);
    expect(view.unheld).toEqual(Array.from({ length: 16 }, (_, b) => b));
    const table = io();
    expect(await runCli(['shards', '--ring', 'stale', '-n', namespace, '--kubeconfig', testKubeconfigPath()], table.io)).toBe(0);
    expect(table.out.join('')).toContain('held by no live member: 0-15 (16;');
    // No such ring: said plainly.
    const none = io();
    expect(await runCli(['shards', '--ring', 'nothing-here', '-n', namespace, '--kubeconfig', testKubeconfigPath()], none.io)).toBe(0);
    expect(none.out.join('')).toContain(`no member Leases labelled ${SHARD_RING_LABEL}=nothing-here in ${namespace}`);
  });

  it('refuses a missing or malformed --ring and an unreadable kubeconfig with what to do', async () => {
    const missing = io();
    expect(await runCli(['shards', '-n', namespace], missing.io)).toBe(2);
    expect(missing.err.join('')).toContain('shards needs --ring <name>');
    await expect(describeShards({ ring: 'Not_A_Label', namespace })).rejects.toSatisfy((e) => isCliError(e) && e.reason === 'Usage' && /must be a shard ring's name/.test(e.message));
    await expect(describeShards({ ring: 'disks', namespace, kubeconfigPath: join(tmpdir(), 'no-such-kubeconfig') })).rejects.toSatisfy((e) => isCliError(e) && e.reason === 'ClusterReadFailed' && /cannot load the kubeconfig/.test(e.message));
  });

  it('runs the command docs/sharding.md shows, exactly as written, through the built bin', async () => {
    const commands = documentedCommands(root).filter((c) => c.file === 'docs/sharding.md' && c.text.startsWith('kubeloop shards'));
    expect(commands.map((c) => c.text)).toEqual(['kubeloop shards --ring harddisk-operator -n harddisk-system']);
    const bin = join(root, 'packages', 'cli', 'dist', 'bin.js');
    expect(existsSync(bin), 'build first (pnpm build)').toBe(true);
    // `kubeloop` on PATH is the built bin, as a global install or `pnpm exec` would have it.
    const dir = mkdtempSync(join(tmpdir(), 'kubeloop-bin-'));
    writeFileSync(join(dir, 'kubeloop'), `#!/bin/sh\nexec "${process.execPath}" "${bin}" "$@"\n`);
    chmodSync(join(dir, 'kubeloop'), 0o755);
    const existed = await admin.get({ apiVersion: 'v1', kind: 'Namespace' }, { name: 'harddisk-system' }).then(() => true, () => false);
    if (!existed) await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'harddisk-system' } });
    const { rings, stop } = ringOf(admin, 'harddisk-system', 'harddisk-operator', [uniqueName('docs-a'), uniqueName('docs-b')]);
    try {
      await eventually(() => covered(rings), 'the ring to settle');
      const { stdout } = await promisify(execFile)('sh', ['-c', commands[0]!.text], { env: { ...process.env, PATH: `${dir}:${process.env['PATH'] ?? ''}`, KUBECONFIG: testKubeconfigPath() } });
      expect(stdout).toContain('shard ring harddisk-operator in harddisk-system: 2 live of 2 member(s), 16 buckets');
      for (const r of rings) expect(stdout).toContain(r.identity);
    } finally {
      await stop();
      if (!existed) await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: 'harddisk-system' }).catch(() => undefined);
    }
  });
});
