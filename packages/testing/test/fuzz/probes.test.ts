/**
 * The hand-written differential probes (probes.ts): each runs on the fake
 * (raw requests in memory, kubectl over its loopback HTTP server) and on the
 * real kube-apiserver envtest started, in a namespace of its own; the
 * normalised answers must agree, or the probe is listed in DOCUMENTED with
 * the row of docs/testing-fake.md that says why they differ.
 *
 *   pnpm -s exec vitest run packages/testing/test/fuzz/probes.test.ts
 *   KUBELOOP_PROBES_REPORT=/tmp/probes.txt pnpm -s exec vitest run packages/testing/test/fuzz/probes.test.ts   # every difference to a file
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import type { CustomResourceDefinitionLike, Environment } from '@kubeloop/envtest';
import { createFakeApiServer } from '../../src/index.js';
import type { FakeApiServer } from '../../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../../test/support/env.js';
import { kubectl } from '../../../../test/support/kubectl.js';
import type { KubectlResult } from '../../../../test/support/kubectl.js';
import { send } from './answers.js';
import type { Backend } from './answers.js';
import { PROBE_CRD, PROBES } from './probes.js';
import type { ProbeStep } from './probes.js';
import { normalise } from './requests.js';

const REPORT = process.env['KUBELOOP_PROBES_REPORT'];

/**
 * Probes whose answers differ for a reason docs/testing-fake.md gives
 * (the row named); every other probe must agree.
 */
const VALIDATION = 'validation of built-in kinds';
/** Documented differences that depend on timing, so may agree in a run (none now: a Scale write's entry has no time, on both). */
const MAY_AGREE = new Set<string>([]);
const DOCUMENTED: Readonly<Record<string, string>> = {
  'podtemplate: defaults': 'kinds outside @kubeloop/scheme',
  'secret: tls type and stringData': VALIDATION,
  'smp: env by name, set and delete': VALIDATION,
  'smp: tolerations replaced (no merge key)': VALIDATION,
  'smp: Recreate without retainKeys': VALIDATION,
  'apply: container ports without protocol': VALIDATION,
  'apply: env removed by its only applier': VALIDATION,
  'delete: a pod dry run': 'graceful deletion of Pods',
  'delete: a pod with grace period': 'graceful deletion of Pods',
  'kubectl: get pods (a table)': 'Tables',
  'cr: preserved subtree keeps unknown fields': 'CEL rules of custom resources (embedded resources)',
};

/** What a service's IP allocator picked, which two servers never pick alike. */
function allocated(text: string): string {
  return text.replace(/\b10\.0\.0\.\d{1,3}\b/g, '<ip>').replace(/"web-[a-z0-9]{5}"/g, '"web-<random>"').replace(/"nodePort":\d+/g, '"nodePort":"<port>"');
}

/** kubectl's output in comparable form: JSON normalised as answers are, ages and times masked. */
function normaliseKubectl(r: KubectlResult, namespace: string): string {
  let out: string;
  try {
    out = normalise({ status: r.code ?? -1, body: JSON.parse(r.stdout) as unknown, warning: undefined }, namespace, undefined);
  } catch {
    out = JSON.stringify({ code: r.code, stdout: r.stdout.replace(/\b\d+(s|m|h|d)\b/g, '<age>') });
  }
  const stderr = r.stderr.replace(/^.*(memcache|couldn't get current server API group list|Warning: resource .* is missing the kubectl.kubernetes.io).*$/gm, '').trim();
  return allocated(`${out} ${stderr}`.replaceAll(namespace, '<ns>')).replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, '<time>');
}

interface Side {
  readonly backend: Backend;
  readonly kubeconfig: string;
}

async function runProbe(side: Side, steps: readonly ProbeStep[]): Promise<string[]> {
  const namespace = uniqueName('pr');
  const b = side.backend;
  await b.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const out: string[] = [];
  try {
    for (const step of steps) {
      if ('kubectl' in step) {
        out.push(normaliseKubectl(await kubectl(['-n', namespace, ...step.kubectl], { kubeconfig: side.kubeconfig, ...(step.stdin === undefined ? {} : { stdin: JSON.stringify(step.stdin) }) }), namespace));
        continue;
      }
      const fill = (s: string): string => s.replaceAll('{ns}', namespace);
      const body = step.body === undefined ? undefined : fill(typeof step.body === 'string' ? step.body : JSON.stringify(step.body));
      const answer = await send(b, { method: step.method, path: fill(step.path), ...(step.query ? { query: step.query } : {}), ...(body === undefined ? {} : { body }), ...(step.contentType ? { contentType: step.contentType } : {}) });
      const m = (answer.body as { metadata?: { resourceVersion?: string; generation?: number } }).metadata;
      out.push(allocated(normalise(answer, namespace, undefined)) + (m?.generation === undefined ? '' : ` generation=${m.generation}`));
    }
  } finally {
    await b.client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: namespace }).catch(() => undefined);
  }
  return out;
}

describe('hand-written probes answer alike on the fake and on kube-apiserver', () => {
  let fakeServer: FakeApiServer;
  let env: Environment;
  let fake: Side;
  let real: Side;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubeloop-probes-'));
    fakeServer = createFakeApiServer();
    await fakeServer.installCRDs([PROBE_CRD]);
    const endpoint = await fakeServer.listen();
    writeFileSync(join(dir, 'fake.yaml'), endpoint.kubeconfig);
    env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    await env.installCRDs([PROBE_CRD as unknown as CustomResourceDefinitionLike]);
    const client: Client = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'probe', transportOptions: { qps: 0 } });
    fake = { backend: { name: 'fake', client: fakeServer.client({ fieldOwner: 'probe' }), rvs: new Map() }, kubeconfig: join(dir, 'fake.yaml') };
    real = { backend: { name: 'envtest', client, rvs: new Map() }, kubeconfig: testKubeconfigPath() };
  });
  afterAll(async () => {
    await fakeServer?.close();
    await env?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`${PROBES.length} probes: each agrees or is documented`, async () => {
    const differ: { name: string; step: number; fake: string; envtest: string }[] = [];
    for (const probe of PROBES) {
      const [f, e] = [await runProbe(fake, probe.steps), await runProbe(real, probe.steps)];
      const i = f.findIndex((x, k) => x !== e[k]);
      if (i >= 0) differ.push({ name: probe.name, step: i, fake: f[i]!, envtest: e[i]! });
    }
    const text = differ.map((d) => `${d.name}${DOCUMENTED[d.name] ? ` (documented: ${DOCUMENTED[d.name]})` : ''}\n  step ${d.step}\n  fake:    ${d.fake}\n  envtest: ${d.envtest}`).join('\n');
    if (REPORT) writeFileSync(REPORT, text);
    const undocumented = differ.filter((d) => DOCUMENTED[d.name] === undefined);
    console.log(`probes: ${PROBES.length}, agree ${PROBES.length - differ.length}, differ as documented ${differ.length - undocumented.length}, undocumented ${undocumented.length}`);
    expect(undocumented.map((d) => d.name), text).toEqual([]);
    // a documented difference that went away is taken off the list
    const stale = Object.keys(DOCUMENTED).filter((n) => !differ.some((d) => d.name === n) && !MAY_AGREE.has(n));
    expect(stale).toEqual([]);
  }, 300_000);
});
