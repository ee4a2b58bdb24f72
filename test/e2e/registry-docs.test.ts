/**
 * Every command of the walkthrough docs (getting-started, rbac, schema, the
 * scaffold's README, ...), exactly as written, in a new project made from
 * the packages the run's registry serves (test/support/registry-setup.ts
 * publishes them once; registry.test.ts walks its own project against the
 * same registry, side by side with this file). A command that runs for good
 * (`pnpm start`, `pnpm run dev`) runs until what its block needs is there.
 *
 * Each step's wall time is printed at the end and written to
 * .tmp/e2e-registry-docs-times.json. Slow (minutes), so it runs only when
 * KUBELOOP_E2E_REGISTRY=1 (scripts/test.sh sets it); otherwise its test is
 * reported skipped, under a suite name that says what turns it on.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { LONG_RUNNING, NOT_IN_WALKTHROUGH, WALKTHROUGH_FILES, WALKTHROUGH_PROJECT, commandsOf } from '../support/doc-commands.js';
import type { DocCommand } from '../support/doc-commands.js';
import { holdDocumentedPorts } from '../support/fixed-ports.js';
import { MINUTE, ok, publishedRegistry, reportSteps, run, stepTimer, userEnv } from '../support/registry.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const enabled = process.env['KUBELOOP_E2E_REGISTRY'] === '1';
const { steps, timed } = stepTimer();
/** cert-manager's Certificate CRD, a kind the project does not own, vendored as docs/schema.md says (the same file registry.test.ts vendors). */
const vendoredCrd = join(root, 'packages', 'create-kubeloop', 'test', 'fixtures', 'crds', 'certificates.cert-manager.io.yaml');

describe.skipIf(!enabled)('the docs, command by command, from a registry (KUBELOOP_E2E_REGISTRY=1)', () => {
  let work: string;
  let env: NodeJS.ProcessEnv;
  let plane: Environment | undefined;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'kubeloop-e2e-docs-'));
    const registry = await publishedRegistry();
    env = userEnv({ npm_config_userconfig: registry.npmrc, npm_config_registry: registry.url, npm_config_cache_dir: join(work, 'pnpm-cache') });
  }, 25 * MINUTE);

  afterAll(async () => {
    await plane?.stop();
    reportSteps(root, 'e2e-registry-docs-times.json', 'e2e registry, the docs', steps);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it(`every command of ${WALKTHROUGH_FILES.join(', ')}, exactly as written, in a new project (${WALKTHROUGH_PROJECT})`, async () => {
    // A user's machine: ~/.kube/config is a control plane of the walk's own, so `--kubeconfig ~/.kube/config`
    // and kubectl reach it; ~/.cache is the real one (envtest's binaries, pnpm's metadata), the pnpm store too.
    // Its own: files side by side install kinds of the same plural in other groups on the shared plane
    // (`websites.shard-....example.com`), and the docs' `kubectl get websites` would resolve to one of those.
    plane = createEnvironment();
    await plane.start();
    const home = join(work, 'doc-home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeFileSync(join(home, '.kube', 'config'), readFileSync(plane.kubeconfigPath));
    symlinkSync(join(homedir(), '.cache'), join(home, '.cache'));
    const store = (await ok('pnpm', ['store', 'path'], { cwd: work, env, timeoutMs: MINUTE })).trim();
    const docEnv: NodeJS.ProcessEnv = { ...env, HOME: home, npm_config_store_dir: store };
    const users = join(work, 'doc-user');
    mkdirSync(users);
    // What the docs say is there before their commands: kinds we do not own, their CRDs vendored
    // (schema.md: `generate types vendor/crds/`) and installed in the cluster (`--cluster --group cert-manager.io`).
    const setup: Record<string, (dir: string) => Promise<void>> = {
      'docs/schema.md': async (dir) => {
        mkdirSync(join(dir, 'vendor', 'crds'), { recursive: true });
        writeFileSync(join(dir, 'vendor', 'crds', 'certificates.cert-manager.io.yaml'), readFileSync(vendoredCrd));
        await ok('kubectl', ['apply', '--server-side', '-f', join(dir, 'vendor', 'crds')], { cwd: dir, env: docEnv, timeoutMs: MINUTE });
      },
    };
    // What the cluster would do after a command, where envtest cannot: it runs no pods, so the operator that
    // `pnpm run deploy` installed never runs, and `pnpm run undeploy` leaves the Websites it finalized (the sample)
    // holding their finalizer and the deleted CRD Terminating for good. On a cluster the deployed operator
    // finalizes them as its Deployment goes; here the walk does it for the operator, and waits until the CRD is
    // gone, so the next block (`pnpm run dev` installing the CRD again) starts from what a cluster would have.
    const after: Record<string, (dir: string) => Promise<void>> = {
      'pnpm run undeploy': async (dir) => {
        const crd = 'customresourcedefinition/websites.website-operator.example.com';
        const names = await run('kubectl', ['get', 'websites.website-operator.example.com', '-A', '-o', "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{'\\n'}{end}"], { cwd: dir, env: docEnv, timeoutMs: MINUTE });
        for (const line of names.code === 0 ? names.output.split('\n').filter((l) => l.includes('/')) : []) {
          const [namespace, name] = line.trim().split('/');
          await run('kubectl', ['-n', namespace!, 'patch', 'websites.website-operator.example.com', name!, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], { cwd: dir, env: docEnv, timeoutMs: MINUTE });
        }
        const gone = await run('kubectl', ['wait', '--for=delete', crd, '--timeout=120s'], { cwd: dir, env: docEnv, timeoutMs: 3 * MINUTE });
        expect(gone.code, `after pnpm run undeploy, ${crd} was not deleted:\n${gone.output}`).toBe(0);
      },
    };
    // Commands another doc repeats that run again all the same: what they make is gone by then (the sample,
    // after `pnpm run undeploy` took its CRD), and the block that repeats them needs it (the README's webhook
    // block reads the sample as v2). Idempotent, so running them twice on an unchanged cluster is harmless.
    const RUN_AGAIN = new Set(['kubectl apply -f config/samples/website.yaml']);
    // What a command's output must show, besides exiting 0.
    const expected: Record<string, RegExp> = {
      'pnpm test': /Tests\s+\d+ passed/,
      'kubectl auth can-i patch websites.website-operator.example.com --subresource=status --as system:serviceaccount:website-operator-system:website-operator-manager -A': /^yes/m,
      'kubectl auth can-i get /metrics --as system:serviceaccount:monitoring:prometheus-k8s': /^yes/m,
      // The API server converted the sample (stored as v1) through the local operator's /convert.
      'kubectl get websites.v2.website-operator.example.com website-sample -o yaml': /^apiVersion: website-operator\.example\.com\/v2$/m,
      "kubectl -n website-operator-system get deployment website-operator-manager -o jsonpath='{.spec.template.spec.containers[0].image}'": /^registry\.example\.com\/website-operator:0\.1\.0$/,
      'pnpm exec kubeloop generate types vendor/crds/ --out src/generated': /1 kind\(s\)/,
    };
    let cwd = users;
    const ran = new Map<string, string>();
    const stopGroup = async (child: ChildProcess): Promise<void> => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const closed = new Promise((r) => child.once('close', r));
      process.kill(-child.pid!, 'SIGTERM');
      const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 40_000);
      await closed;
      clearTimeout(timer);
    };
    for (const file of WALKTHROUGH_FILES) {
      // The scaffold's README as the new project has it (the published template, rendered).
      const source = file.includes('/templates/') ? join(users, WALKTHROUGH_PROJECT, 'README.md') : join(root, file);
      const commands = commandsOf(file, readFileSync(source, 'utf8'));
      await setup[file]?.(join(users, WALKTHROUGH_PROJECT));
      const blocks = new Map<number, DocCommand[]>();
      for (const c of commands) blocks.set(c.block, [...(blocks.get(c.block) ?? []), c]);
      for (const block of blocks.values()) {
        const background: { child: ChildProcess; output: () => string; command: DocCommand }[] = [];
        // `pnpm start` and `pnpm run dev` bind the scaffold's 127.0.0.1:8443 and :8081, as the docs show: from the
        // first of them to the end of its block, other files binding a documented port wait (test/support/fixed-ports.ts).
        let ports: (() => Promise<void>) | undefined;
        try {
          for (const command of block) {
            const where = `${command.file}:${command.line}: ${command.text}`;
            if (command.text in NOT_IN_WALKTHROUGH) continue;
            const cd = /^cd (\S+)$/.exec(command.text);
            if (cd) {
              cwd = resolve(cwd, cd[1]!);
              continue;
            }
            // Run once per walk when another doc repeats it (the scaffold's README repeats getting-started);
            // within one doc every step runs, state changes between them (pnpm generate after create api).
            // A long-running command runs again: the rest of its block needs it (`pnpm run dev` serving the webhooks).
            const long = LONG_RUNNING[command.text];
            const before = ran.get(command.text);
            if (before !== undefined && before !== command.file && !long && !RUN_AGAIN.has(command.text)) continue;
            if (long) {
              ports ??= await holdDocumentedPorts('test/e2e/registry-docs.test.ts');
              const child = spawn('bash', ['-c', command.text], { cwd, env: docEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
              let output = '';
              child.stdout.on('data', (d: Buffer) => (output += d.toString()));
              child.stderr.on('data', (d: Buffer) => (output += d.toString()));
              background.push({ child, output: () => output, command });
              await timed(`doc: ${command.text}`, async () => {
                const deadline = Date.now() + 3 * MINUTE;
                while (!long.ready.test(stripVTControlCharacters(output))) {
                  if (child.exitCode !== null) throw new Error(`${where} exited ${child.exitCode}:\n${output.slice(-4000)}`);
                  if (Date.now() > deadline) throw new Error(`${where} did not print ${long.ready} within 3 minutes:\n${output.slice(-4000)}`);
                  await new Promise((r) => setTimeout(r, 200));
                }
              });
              ran.set(command.text, command.file);
              continue;
            }
            const result = await timed(`doc: ${command.text}`, () => run('bash', ['-c', command.text], { cwd, env: docEnv, timeoutMs: 10 * MINUTE }));
            expect(result.code, `${where} (in ${cwd}):\n${result.output.slice(-6000)}`).toBe(0);
            const want = expected[command.text];
            if (want) expect(stripVTControlCharacters(result.output), where).toMatch(want);
            await after[command.text]?.(cwd);
            ran.set(command.text, command.file);
          }
          // A block that started the operator and applied the sample: the sample is reconciled before the operator stops.
          if (background.some((b) => b.command.text.includes('pnpm start')) && block.some((c) => c.text.includes('config/samples/website.yaml'))) {
            const deadline = Date.now() + 2 * MINUTE;
            // Its page, not only its name: registry.test.ts's demo project has a Website kind too, with a sample of the same name.
            const page = async (): Promise<string> => (await run('kubectl', ['get', 'configmap', 'website-sample-site', '-n', 'default', '-o', "jsonpath={.data['index\\.html']}"], { cwd, env: docEnv, timeoutMs: MINUTE })).output;
            while (!(await page()).includes(`Hello from ${WALKTHROUGH_PROJECT}`)) {
              if (Date.now() > deadline) throw new Error(`the operator started by the docs did not reconcile the sample:\n${background.map((b) => b.output()).join('\n').slice(-4000)}`);
              await new Promise((r) => setTimeout(r, 250));
            }
          }
        } finally {
          for (const b of background.reverse()) await stopGroup(b.child);
          await ports?.();
        }
      }
    }
    // Everything the walkthrough files ask for ran, but for what NOT_IN_WALKTHROUGH says why not.
    const asked = WALKTHROUGH_FILES.flatMap((f) => commandsOf(f, readFileSync(f.includes('/templates/') ? join(users, WALKTHROUGH_PROJECT, 'README.md') : join(root, f), 'utf8')));
    expect(asked.filter((c) => !ran.has(c.text) && !(c.text in NOT_IN_WALKTHROUGH) && !c.text.startsWith('cd ')).map((c) => `${c.file}:${c.line}: ${c.text}`)).toEqual([]);
  }, 40 * MINUTE);
});
