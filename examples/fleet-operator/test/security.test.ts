/**
 * A fleet's kubeconfig Secrets are untrusted input: the running example
 * (`--envtest`: a host and one member control plane) is attacked as
 * docs/multicluster.md "Security" describes, each attack a Secret created
 * and labelled with kubectl as the README registers a member. None of them
 * runs a command, reads a local file, reaches a server through a proxy,
 * skips TLS checks, or engages the host's own API server or a metadata
 * address: each is one log line naming the Secret and the field, and a
 * loopback server standing for the attacker's sees none of the operator's
 * secrets. A member whose server answers with a body shows only the class
 * of its failure in the unauthenticated `/readyz?verbose`. The real member
 * keeps converging.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLogged } from '../../../test/support/logged-process.js';
import type { Running } from '../../../test/support/logged-process.js';

const root = join(import.meta.dirname, '..', '..', '..');
const main = join(root, 'examples', 'fleet-operator', 'dist', 'main.js');

/** A kubeconfig with one cluster and one user. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'x', clusters: [{ name: 'c', cluster }], users: [{ name: 'u', user }], contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }] });
}

describe('kubeconfig Secrets written by someone else', () => {
  let running: Running | undefined;
  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    if (running) {
      running.kill();
      await running.exited;
    }
    for (const close of closers) await close();
  });

  it('run no command, read no file, use no proxy or insecure TLS, engage neither the host nor a metadata address, and echo no member body in /readyz', async () => {
    const work = mkdtempSync(join(tmpdir(), 'kubeloop-fleet-attacks-'));
    // The attacker's server: records every request that reaches it, answers 403 with a body only it knows.
    const seen: { method: string; url: string; authorization: string | undefined }[] = [];
    const evil = createServer((req, res) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization });
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 403, reason: 'Forbidden', message: 'BODY-FROM-AN-INTERNAL-SERVICE' }));
    });
    evil.on('connect', (req, socket) => {
      seen.push({ method: 'CONNECT', url: req.url ?? '', authorization: req.headers['proxy-authorization'] });
      socket.destroy();
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    closers.push(async () => {
      evil.closeAllConnections();
      await new Promise((r) => evil.close(r));
    });
    const evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;

    const op = startLogged(main, ['--envtest', '--members', '1', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], { cwd: root, env: { KUBECONFIG: '' } });
    running = op;
    const synced = (l: Record<string, unknown>): boolean => l['msg'] === 'sample status' && JSON.stringify(l['members']) === '["member-1:1:True"]';
    await op.until(synced);
    const hostKubeconfig = String((await op.until((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('host ready')))['kubeconfig']);
    const health = String((await op.until((l) => l['msg'] === 'health probes listening'))['url']);
    const hostServer = new URL(/server: (\S+)/.exec(readFileSync(hostKubeconfig, 'utf8'))![1]!);

    // Files of the operator's machine a Secret's author would like: a token (as the pod's service-account token) and a key pair.
    const operatorToken = join(work, 'operator-token');
    writeFileSync(operatorToken, 'OPERATOR-SERVICE-ACCOUNT-TOKEN');
    const marker = join(work, 'exec-ran');
    const attacks: { name: string; text: string; field: string }[] = [
      { name: 'exec-plugin', text: kubeconfig({ server: evilUrl }, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'sh', args: ['-c', `touch ${marker}`] } }), field: 'users["u"].exec.command' },
      { name: 'gcp-cmd-path', text: kubeconfig({ server: evilUrl }, { 'auth-provider': { name: 'gcp', config: { 'cmd-path': 'sh', 'cmd-args': `-c "touch ${marker}"` } } }), field: 'users["u"].auth-provider' },
      { name: 'token-file', text: kubeconfig({ server: evilUrl }, { tokenFile: operatorToken }), field: 'users["u"].tokenFile' },
      { name: 'client-cert-files', text: kubeconfig({ server: evilUrl }, { 'client-certificate': operatorToken, 'client-key': operatorToken }), field: 'users["u"].client-certificate' },
      { name: 'proxy', text: kubeconfig({ server: 'http://127.0.0.1:1', 'proxy-url': evilUrl }, { token: 'attacker-own-token' }), field: 'clusters["c"].proxy-url' },
      { name: 'insecure', text: kubeconfig({ server: evilUrl.replace('http:', 'https:'), 'insecure-skip-tls-verify': true }), field: 'clusters["c"].insecure-skip-tls-verify' },
      // The host's own API server, written as localhost: the member would write into the host.
      { name: 'host-server', text: kubeconfig({ server: `https://localhost:${hostServer.port}` }, { tokenFile: operatorToken }), field: 'clusters["c"].server' },
      { name: 'metadata', text: kubeconfig({ server: 'http://169.254.169.254/latest/meta-data' }), field: 'clusters["c"].server' },
    ];
    // As the README registers a member: kubectl create secret generic --from-file, then kubectl label.
    const kubectl = (script: string): void => {
      const r = spawnSync('bash', ['-c', script], { cwd: work, encoding: 'utf8', env: { ...process.env, KUBECONFIG: hostKubeconfig } });
      expect(r.status, r.stderr).toBe(0);
    };
    const register = (name: string, text: string): void => {
      writeFileSync(join(work, `${name}.kubeconfig`), text);
      kubectl(`kubectl -n fleet-system create secret generic ${name} --from-file=kubeconfig=${name}.kubeconfig && kubectl -n fleet-system label secret ${name} fleet.kubeloop.dev/kubeconfig=true`);
    };
    for (const a of attacks) register(a.name, a.text);
    // And one that is allowed as a destination (a loopback server that is not the host): it engages, and fails.
    register('internal', kubeconfig({ server: evilUrl }, { token: 'attacker-own-token' }));

    for (const a of attacks) {
      const line = await op.until((l) => l['secret'] === `fleet-system/${a.name}` && String(l['msg']).startsWith('kubeconfig refused'));
      expect(line, a.name).toMatchObject({ key: 'kubeconfig', field: a.field, cluster: a.name });
      expect(String(line['msg'])).toContain(`Secret fleet-system/${a.name} key kubeconfig: ${a.field}:`);
    }
    // /readyz?verbose (no authentication) shows the class of internal's failure, never its body.
    const deadline = Date.now() + 60_000;
    let ready = '';
    while (!/\[\+\]cluster-internal ok: not ready: .*ClientError Forbidden \(HTTP 403\)/.test(ready)) {
      if (Date.now() > deadline) throw new Error(`internal's readiness never showed its failure class:\n${ready}`);
      await new Promise((r) => setTimeout(r, 250));
      ready = await (await fetch(`${health}/readyz?verbose`)).text();
    }
    expect(ready).not.toContain('BODY-FROM-AN-INTERNAL-SERVICE');
    expect(ready).toContain('[+]cluster-member-1 ok: engaged');

    // Each refusal is one line; no command ran; the attacker's server saw only internal's requests, with its own token.
    for (const a of attacks) expect(op.lines.filter((l) => l['secret'] === `fleet-system/${a.name}`), a.name).toHaveLength(1);
    expect(existsSync(marker)).toBe(false);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((s) => s.method === 'CONNECT' || s.url.startsWith('http'))).toEqual([]); // nothing came through it as a proxy
    expect(new Set(seen.map((s) => s.authorization))).toEqual(new Set(['Bearer attacker-own-token']));
    expect(JSON.stringify(op.lines)).not.toContain('OPERATOR-SERVICE-ACCOUNT-TOKEN');

    // The real member goes on: the sample changes and member-1 converges on it.
    kubectl(`kubectl patch fleetconfig sample --type merge -p '{"spec":{"data":{"extra":"1"}}}'`);
    await op.until((l) => l['msg'] === 'sample status' && JSON.stringify(l['members']) === '["member-1:2:True"]');

    op.kill();
    expect(await op.exited).toBe(0);
  }, 240_000);
});
