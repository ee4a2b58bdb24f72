/**
 * This example's README, run as written from the repository root on real
 * control planes: the main job (`--envtest`: a host and two member control
 * planes, each member a kubeconfig Secret in the host, the sample applied)
 * until both members report the sample synced, then the "another shell"
 * block with the host's kubeconfig path it logged in place of `XXXX`:
 * deleting member-2's Secret takes member-2 out of the fleet and its status
 * entry out of the FleetConfig. SIGTERM then stops it cleanly (exit 0).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandsOf } from '../../../test/support/doc-commands.js';
import { startLogged } from '../../../test/support/logged-process.js';
import type { Running } from '../../../test/support/logged-process.js';

const root = join(import.meta.dirname, '..', '..', '..');
const readme = commandsOf('examples/fleet-operator/README.md', readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8'));

describe('the fleet-operator README, as written', () => {
  let running: Running | undefined;
  afterAll(async () => {
    if (!running) return;
    running.kill();
    await running.exited;
  });

  it('runs the operator on a host and two members, and a member whose Secret is deleted leaves the status', async () => {
    const [first, ...shell] = readme;
    const main = first!;
    expect(main.text).toBe('node examples/fleet-operator/dist/main.js --envtest');
    expect(shell.every((c) => c.block === 1)).toBe(true);
    const [node, script, ...args] = main.text.split(' ');
    expect(node).toBe('node');
    const op = startLogged(script!, args, { cwd: root, env: { KUBECONFIG: '' } });
    running = op;
    const synced = (members: string[]) => (l: Record<string, unknown>) => l['msg'] === 'sample status' && JSON.stringify(l['members']) === JSON.stringify(members);

    await op.until(synced(['member-1:1:True', 'member-2:1:True']));
    const hostLine = await op.until((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('host ready'));
    const kubeconfig = String(hostLine['kubeconfig']);

    // The other shell: the README's block with the logged path, run by bash.
    const block = shell.map((c) => c.text.replace('/tmp/kubeloop-envtest-XXXX/kubeconfig', kubeconfig)).join('\n');
    expect(block).toContain(`export KUBECONFIG=${kubeconfig}`);
    const last = shell.at(-1)!.text;
    const run = (text: string): { code: number | null; stdout: string; stderr: string } => {
      const r = spawnSync('bash', ['-c', text], { cwd: root, encoding: 'utf8' });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const before = op.lines.length; // what follows is logged after this
    const after = (match: (l: Record<string, unknown>) => boolean) => (l: Record<string, unknown>) => op.lines.indexOf(l) >= before && match(l);
    const ran = run(block);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/^sample\s/m); // kubectl get fleetconfigs
    expect(ran.stdout).toContain('secret "member-2" deleted');
    await op.until(after((l) => l['msg'] === 'member disengaged' && l['cluster'] === 'member-2'));
    await op.until(after(synced(['member-1:1:True']))); // member-2's status entry gone
    // The block's last command, again, as the user would: member-1 alone.
    const again = run(`export KUBECONFIG=${kubeconfig}\n${last}`);
    expect(again.stdout.trim()).toBe('member-1');

    op.kill();
    expect(await op.exited).toBe(0);
    expect(op.lines.some((l) => l['msg'] === 'operator stopped')).toBe(true);
  }, 180_000);

  it('a flag it cannot use ends it with one line saying what to fix, exit status 2', async () => {
    const op = startLogged(join(root, 'examples', 'fleet-operator', 'dist', 'main.js'), ['--members', '9']);
    expect(await op.exited).toBe(2);
    expect(op.stderr()).toBe('fleet-operator: --members must be a whole number from 1 to 5, not 9\n');
  });
});
