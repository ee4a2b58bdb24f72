/**
 * docs/observability.md as a user runs it, from the repository root: its
 * first command (the example operator on a control plane of its own, tracing
 * on, its log in operator.log) in the background, with a real Jaeger on the
 * ports the page names (OTLP/HTTP 127.0.0.1:4318, query 127.0.0.1:16686);
 * then, once the sample is reconciled and the spans of every exemplar the
 * metrics carry are in Jaeger, the page's other commands (but the profile,
 * which is tracing.md's and test/profiles.test.ts's) exactly as written, in
 * one shell: the exemplars, the trace ID of the slowest, its trace from
 * Jaeger's API, and its log lines. examples/README.md turns tracing on with
 * the same first command (checked here).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandsOf } from './support/doc-commands.js';
import { holdDocumentedPorts } from './support/fixed-ports.js';
import { startJaeger } from './support/jaeger.js';
import type { Jaeger } from './support/jaeger.js';

const root = join(import.meta.dirname, '..');
const MINUTE = 60_000;
const LOG = join(root, 'operator.log');
const commands = commandsOf('docs/observability.md', readFileSync(join(root, 'docs', 'observability.md'), 'utf8'));

/** A user's shell: none of this run's own variables, and no cluster configured. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|VITEST|TEST$|NODE_ENV$|NODE_OPTIONS$|KUBECONFIG$|OTEL_|LOG_LEVEL$|KUBELOOP_LOG_LEVEL$)/i.test(key)) continue;
    env[key] = value;
  }
  return env;
}

function run(script: string): Promise<{ code: number | null; out: string }> {
  const shell = spawn('bash', ['-c', script], { cwd: root, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  shell.stdout.on('data', (d: Buffer) => (out += d.toString()));
  shell.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => shell.once('close', (code) => resolve({ code, out })));
}

describe('docs/observability.md, one slow reconcile end to end', () => {
  let jaeger: Jaeger | undefined;
  let operator: ChildProcess | undefined;

  afterAll(async () => {
    if (operator?.pid !== undefined) {
      // The operator runs in the background of the shell that started it: its process group.
      try {
        process.kill(-operator.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && existsSync(LOG) && !/"msg":"(manager stopped|stopped)"/.test(readFileSync(LOG, 'utf8'))) await new Promise((r) => setTimeout(r, 250));
      try {
        process.kill(-operator.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await jaeger?.stop();
    rmSync(LOG, { force: true });
  }, 2 * MINUTE);

  it('the metric carries exemplars, the slowest names a reconcile trace Jaeger holds, and the log lines found by its ID carry it', async ({ onTestFinished }) => {
    // The example binds 127.0.0.1:8080 and :8081 as the page has it: wait for our turn at the documented ports
    // (the registry walk and the other doc walks bind them too); the timeout allows for the wait.
    onTestFinished(await holdDocumentedPorts('test/observability.test.ts'));
    const start = commands[0]!;
    expect(start.text).toMatch(/^LOG_LEVEL=debug OTEL_EXPORTER_OTLP_ENDPOINT=http:\/\/127\.0\.0\.1:4318 .* &$/);
    expect(commands.at(-1)!.text).toMatch(/^kubeloop profile /);
    // The example's README turns tracing on with the same command.
    expect(commandsOf('examples/README.md', readFileSync(join(root, 'examples', 'README.md'), 'utf8')).map((c) => c.text)).toContain(start.text);
    const steps = commands.slice(1, -1);
    expect(steps.map((c) => c.text.split(' ')[0])).toEqual(['curl', 'TRACE_ID=$(curl', 'curl', 'grep']);

    jaeger = await startJaeger({ otlpHttp: 4318, query: 16686 });
    operator = spawn('bash', ['-c', start.text], { cwd: root, env: userEnv(), stdio: 'ignore', detached: true });
    const deadline = Date.now() + 5 * MINUTE;
    const log = (): string => (existsSync(LOG) ? readFileSync(LOG, 'utf8') : '');
    while (!log().split('\n').some((l) => l.includes('"msg":"sample-disk status"') && l.includes('"phase":"Bound"'))) {
      if (Date.now() > deadline) throw new Error(`the example did not reconcile its sample within 5 minutes:\n${log().slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    // Spans go out in batches (5 s by default): wait until Jaeger holds the trace of every exemplar the metrics carry.
    const exemplarTraces = async (): Promise<string[]> => {
      const text = await (await fetch('http://127.0.0.1:8080/metrics', { headers: { accept: 'application/openmetrics-text' } })).text();
      return [...text.matchAll(/^controller_runtime_reconcile_time_seconds_bucket\{.*# \{trace_id="([0-9a-f]{32})"\}/gm)].map((m) => m[1]!);
    };
    for (;;) {
      const ids = await exemplarTraces();
      const held = await Promise.all(ids.map((id) => jaeger!.trace(id).then((t) => t?.spans.some((s) => s.operationName === 'reconcile harddisk') === true)));
      if (ids.length > 0 && held.every(Boolean)) break;
      if (Date.now() > deadline) throw new Error(`the exemplars' traces (${ids.join(', ')}) did not all reach Jaeger within 5 minutes`);
      await new Promise((r) => setTimeout(r, 500));
    }

    const script = ['set -e', ...steps.map((c) => c.text), 'echo "TRACE_ID=$TRACE_ID"'].join('\n');
    const { code, out } = await run(script);
    expect(code, `${script}\n---\n${out}`).toBe(0);
    // Step 1: the exemplars.
    expect(out).toMatch(/^controller_runtime_reconcile_time_seconds_bucket\{le="[^"]+",controller="harddisk"\} \d+ # \{trace_id="[0-9a-f]{32}"\} /m);
    // Step 2: the slowest bucket's trace ID.
    const traceId = /^TRACE_ID=([0-9a-f]{32})$/m.exec(out)?.[1];
    expect(traceId, out).toBeDefined();
    // Step 3: its spans from Jaeger: the reconcile and its requests.
    expect(out).toMatch(/^\d+ reconcile harddisk$/m);
    expect(out).toMatch(/^\d+ (get|list|create|update|patch) [a-z]+(\/status)?$/m);
    // Step 4: its log lines, each carrying the trace ID.
    const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const l of lines) expect(l['trace_id']).toBe(traceId);
    expect(lines.map((l) => l['msg'])).toEqual(expect.arrayContaining(['reconcile started', 'reconcile finished']));
  }, 25 * MINUTE);
});
