/**
 * Day two with a project, as a user has it: `kubeloop dev` (the built bin,
 * as `pnpm run dev` runs it) against the shared control plane, and while it
 * runs, `kubeloop create api` then `kubeloop create webhook` in another
 * shell, each followed by the project's `pnpm generate` steps. The loop
 * waits for the new kind's CRD instead of starting an operator that cannot
 * watch it, installs it once `generate` writes it (no kubectl by hand),
 * serves the new webhook from this machine (its configuration pointed at
 * the operator with a certificate of the session), kubectl's apply of a bad
 * object is refused by it with the messages docs/webhooks.md shows, a
 * second version added by `create webhook --conversion` is converted
 * through the operator, and Ctrl-C takes the configurations and the
 * certificate away and puts the CRD's conversion back as its file says.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from 'create-kubeloop';
import { kubectl } from '../../../test/support/kubectl.js';
import type { KubectlResult } from '../../../test/support/kubectl.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const bin = join(root, 'packages', 'cli', 'dist', 'bin.js');
const MINUTE = 60_000;
let parent: string;
let path: string;

beforeAll(() => {
  // Inside this package, so the project's imports of @kubeloop/* resolve to the workspace's packages.
  parent = mkdtempSync(join(here, '..', '.tmp-dev-webhooks-'));
  // `kubeloop` on PATH is the built bin, as `pnpm exec` or a project script has it; tsc is the workspace's.
  writeFileSync(join(parent, 'kubeloop'), `#!/bin/sh\nexec "${process.execPath}" "${bin}" "$@"\n`);
  chmodSync(join(parent, 'kubeloop'), 0o755);
  path = `${parent}:${join(root, 'node_modules', '.bin')}:${process.env['PATH'] ?? ''}`;
});
afterAll(() => {
  rmSync(parent, { recursive: true, force: true });
});

describe('kubeloop dev while the project grows a kind and a webhook', () => {
  it('installs the new CRD when generate writes it, serves the new webhook locally (kubectl refused as the docs show), and removes it on exit', async () => {
    expect(existsSync(bin), 'build first (pnpm build)').toBe(true);
    const name = uniqueName('loop');
    const group = `${name}.example.com`;
    const dir = (await createProject({ name, cwd: parent })).directory;
    // main loads pino-pretty on a terminal only, and it is not installed here: a declaration stands in for its types.
    await writeFile(join(dir, 'src', 'pino-pretty.d.ts'), "declare module 'pino-pretty';\n");
    const env = { ...process.env, PATH: path, KUBECONFIG: testKubeconfigPath() };
    const sh = async (command: string): Promise<string> => {
      const { stdout, stderr } = await promisify(execFile)('sh', ['-c', command], { cwd: dir, env, timeout: 5 * MINUTE });
      return stdout + stderr;
    };
    // What `pnpm generate` runs, but the bundle (dist/operator.js, which the loop does not run): read from the project's package.json, as it changes.
    const generate = async (): Promise<string> => {
      const script = (JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['generate']!;
      expect(script).toContain(' && rolldown -c rolldown.config.mjs');
      return sh(script.replace(' && rolldown -c rolldown.config.mjs', ''));
    };

    let output = '';
    const loop: ChildProcess = spawn(process.execPath, [bin, 'dev', '--', '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    loop.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    loop.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => loop.once('close', (code) => r(code)));
    /** Waits until the loop's output after `from` matches; returns where the match ends. */
    const until = async (what: RegExp, from = 0, timeoutMs = 8 * MINUTE): Promise<number> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = what.exec(output.slice(from));
        if (m) return from + m.index + m[0].length;
        if (loop.exitCode !== null) throw new Error(`kubeloop dev exited ${loop.exitCode} before ${what}:\n${output.slice(-6000)}`);
        if (Date.now() > deadline) throw new Error(`kubeloop dev did not print ${what}:\n${output.slice(-6000)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    /** kubectl until `done` holds for its result (three minutes at most), with `between` run after each other try. */
    const retried = async (args: string[], stdin: string | undefined, done: (r: KubectlResult) => boolean, between?: (r: KubectlResult) => Promise<void>): Promise<KubectlResult> => {
      const deadline = Date.now() + 3 * MINUTE;
      for (;;) {
        const r = await kubectl(args, stdin === undefined ? {} : { stdin });
        if (done(r)) return r;
        if (Date.now() > deadline) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}\nkubeloop dev:\n${output.slice(-4000)}`);
        await between?.(r);
        await new Promise((resolveWait) => setTimeout(resolveWait, 500));
      }
    };
    const validating = `${name}-validating-webhook-configuration`;
    const mutating = `${name}-mutating-webhook-configuration`;
    try {
      let at = await until(new RegExp(`"msg":"starting ${name}"`));

      // A kind, mid-session: the build registers it before its CRD exists, so the loop waits for generate.
      await sh(`kubeloop create api --group ${group} --version v1 --kind Blog`);
      at = await until(new RegExp(`config/crd/kustomization\\.yaml lists blogs\\.${group.replaceAll('.', '\\.')}\\.yaml, not written yet: run \`pnpm generate\``), at);
      expect((await kubectl(['get', 'crd', `blogs.${group}`])).stderr).toContain('NotFound');
      await generate();
      at = await until(/config\/crd or the webhook manifests changed: installing them and restarting the operator/, at);
      at = await until(new RegExp(`"msg":"starting ${name}"`), at);
      expect((await kubectl(['get', 'crd', `blogs.${group}`, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'])).stdout).toBe('True');
      // The operator watches Blogs: the sample is reconciled.
      const sample = await kubectl(['apply', '-f', join(dir, 'config', 'samples', 'blog.yaml')]);
      expect(sample.stderr).toBe('');
      const ready = await kubectl(['wait', '--for=condition=Ready', `blogs.${group}/blog-sample`, '-n', 'default', '--timeout=120s']);
      expect(ready.stderr, output.slice(-4000)).toBe('');

      // A webhook, mid-session: the class filled in as its comments say, then generate writes its configurations.
      await sh(`kubeloop create webhook --group ${group} --version v1 --kind Blog --defaulting --programmatic-validation`);
      const classFile = join(dir, 'src', 'webhooks', 'blog-webhook.ts');
      let source = await readFile(classFile, 'utf8');
      source = source.replace("import type { Defaulter, FieldError, Validator } from '@kubeloop/webhook';", "import { Admission, fieldError } from '@kubeloop/webhook';\nimport type { Defaulter, FieldError, Validator } from '@kubeloop/webhook';");
      source = source.replace('void obj; // no checks yet', "if (obj.spec.message.includes('<')) errors.push(fieldError.invalid('spec.message', obj.spec.message, 'must not hold markup'));");
      source = source.replace(/^ {2}\/\/ Add validateDelete\(obj\).*$/m, "  validateDelete(obj: Blog) {\n    return obj.metadata?.labels?.['protected'] === 'true' ? Admission.deny('this Blog is protected') : undefined;\n  }");
      expect(source).toContain('validateDelete(obj: Blog)');
      await writeFile(classFile, source);
      at = await until(/--webhook-cert-dir \S+ --webhook-port \d+/, at);
      await generate();
      at = await until(new RegExp(`webhooks: ${validating}, ${mutating} pointed at https://127\\.0\\.0\\.1:(\\d+) \\(certificate in (\\S+)\\)`), at);
      const [, port, certDir] = new RegExp(`webhooks: ${validating}, ${mutating} pointed at https://127\\.0\\.0\\.1:(\\d+) \\(certificate in (\\S+)\\)`).exec(output)!;
      await until(new RegExp(`webhooks answer at https://127\\.0\\.0\\.1:${port}`), at);
      expect(existsSync(join(certDir!, 'tls.crt'))).toBe(true);
      const url = await kubectl(['get', 'validatingwebhookconfiguration', validating, '-o', 'jsonpath={.webhooks[0].clientConfig.url}']);
      expect(url.stdout).toBe(`https://127.0.0.1:${port}/validate-${group.replaceAll('.', '-')}-v1-blog`);

      // kubectl, refused by the local webhook. The API server reads configurations through an informer, and
      // the webhooks fail closed while the operator restarts: retry until the webhook itself answers, as a user would.
      const bad = JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Blog', metadata: { name: 'markup', namespace: 'default' }, spec: { message: '<b>bold</b>' } });
      const refused = await retried(['apply', '-f', '-'], bad, (r) => r.stderr.includes('must not hold markup'), async (r) => {
        if (r.code === 0) await kubectl(['delete', `blogs.${group}`, 'markup', '-n', 'default', '--wait=false']);
      });
      // As docs/webhooks.md shows a refusal: kubectl writes an Invalid answer's field causes under the object's kind and name.
      expect(refused.stderr.trim()).toBe('The Blog "markup" is invalid: spec.message: Invalid value: "<b>bold</b>": must not hold markup');
      const docs = readFileSync(join(root, 'docs', 'webhooks.md'), 'utf8');
      const invalid = /\n\s*```\n\s*(The HardDisk "[^"]+" is invalid: [^\n]*)\n\s*```/.exec(docs);
      expect(invalid, 'docs/webhooks.md shows an Invalid refusal').not.toBeNull();
      expect(invalid![1]!.replace(/^The HardDisk "bad-size" is invalid: spec\.size: Invalid value: "ten gigs": must be a quantity such as 10Gi$/, 'The Blog "markup" is invalid: spec.message: Invalid value: "<b>bold</b>": must not hold markup')).toBe(refused.stderr.trim());
      expect((await kubectl(['get', `blogs.${group}`, 'markup', '-n', 'default'])).stderr).toContain('NotFound');
      // A denial that is not Invalid: kubectl prints the Status message, which names the webhook, as the docs show.
      const webhookName = (await kubectl(['get', 'validatingwebhookconfiguration', validating, '-o', 'jsonpath={.webhooks[0].name}'])).stdout;
      expect(webhookName).toBe(`vblog-v1.${group}`);
      await retried(['label', `blogs.${group}`, 'blog-sample', '-n', 'default', 'protected=true'], undefined, (r) => r.code === 0);
      const kept = await retried(['delete', `blogs.${group}`, 'blog-sample', '-n', 'default'], undefined, (r) => r.code === 0 || r.stderr.includes('denied the request'));
      expect(kept.code).not.toBe(0);
      const forbidden = /\n\s*```\n\s*(Error from server \(Forbidden\): admission webhook "[^"]+" denied the request: [^\n]*)\n\s*```/.exec(docs);
      expect(forbidden, 'docs/webhooks.md shows a Forbidden refusal').not.toBeNull();
      expect(forbidden![1]!.replace('"vharddisk.crd-demo.io"', `"${webhookName}"`).replace('this disk is protected', 'this Blog is protected')).toBe(kept.stderr.trim());
      // Unprotected, it goes (the running operator removes its finalizer).
      await retried(['label', `blogs.${group}`, 'blog-sample', '-n', 'default', 'protected-'], undefined, (r) => r.code === 0);
      await retried(['delete', `blogs.${group}`, 'blog-sample', '-n', 'default', '--timeout=120s'], undefined, (r) => r.code === 0 && r.stderr === '');

      // A second version, mid-session: generate writes the CRD converting through the webhook Service; the loop points it at the operator.
      await sh(`kubeloop create webhook --group ${group} --version v1 --kind Blog --conversion --spoke v2`);
      await generate();
      at = await until(new RegExp(`webhooks: ${validating}, ${mutating}, the conversion of blogs\\.${group.replaceAll('.', '\\.')} pointed at https://127\\.0\\.0\\.1:${port}`), at);
      await until(new RegExp(`webhooks answer at https://127\\.0\\.0\\.1:${port}`), at);
      const conversionUrl = await kubectl(['get', 'crd', `blogs.${group}`, '-o', 'jsonpath={.spec.conversion.webhook.clientConfig.url}']);
      expect(conversionUrl.stdout).toBe(`https://127.0.0.1:${port}/convert`);
      await retried(['apply', '-f', '-'], JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Blog', metadata: { name: 'plain', namespace: 'default' }, spec: { message: 'hello' } }), (r) => r.code === 0);
      // Read at v2: the API server converts through the operator's /convert (retried while it takes up the CRD's new conversion).
      const readDeadline = Date.now() + MINUTE;
      let asV2 = await kubectl(['get', `blogs.v2.${group}`, 'plain', '-n', 'default', '-o', 'jsonpath={.apiVersion} {.spec.message}']);
      while (asV2.stdout !== `${group}/v2 hello`) {
        if (Date.now() > readDeadline) throw new Error(`no read at v2: ${asV2.stderr}\n${output.slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 500));
        asV2 = await kubectl(['get', `blogs.v2.${group}`, 'plain', '-n', 'default', '-o', 'jsonpath={.apiVersion} {.spec.message}']);
      }
      await retried(['delete', `blogs.${group}`, 'plain', '-n', 'default', '--timeout=120s'], undefined, (r) => r.code === 0 && r.stderr === '');

      // Ctrl-C: the operator stops, the configurations and the certificate go, the CRD's conversion is as its file says again.
      loop.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(output).toContain(`webhooks removed: ${validating}, ${mutating}, the conversion of blogs.${group}`);
      const restored = await kubectl(['get', 'crd', `blogs.${group}`, '-o', 'jsonpath={.spec.conversion.strategy} {.spec.conversion.webhook.clientConfig.service.name} {.spec.conversion.webhook.clientConfig.url}']);
      expect(restored.stdout.trim()).toBe(`Webhook ${name}-webhook-service`);
      expect((await kubectl(['get', 'validatingwebhookconfiguration', validating])).stderr).toContain('NotFound');
      expect((await kubectl(['get', 'mutatingwebhookconfiguration', mutating])).stderr).toContain('NotFound');
      expect(existsSync(certDir!)).toBe(false);
    } finally {
      if (loop.exitCode === null && loop.signalCode === null) {
        loop.kill('SIGTERM');
        await exited;
      }
      await kubectl(['delete', '--ignore-not-found', '--wait=false', 'crd', `blogs.${group}`, `websites.${group}`]);
    }
  }, 25 * MINUTE); // minutes: tsc and generate run three times on a machine shared with other work
});
