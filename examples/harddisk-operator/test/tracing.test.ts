/**
 * Tracing end to end, as docs/tracing.md turns it on, with real parts only:
 * kube-apiserver (envtest) started with `--tracing-config-file` (every
 * request sampled) and the operator (dist/main.js, serving its admission
 * and conversion webhooks) with `OTEL_EXPORTER_OTLP_ENDPOINT`, both sending
 * OTLP to a real Jaeger built from the Go module proxy. After `kubectl
 * apply` of a HardDisk, Jaeger's query API holds one trace with the API
 * server's span for the request and, as its descendants, the operator's
 * webhook spans (the API server's traceparent continued); and the
 * operator's reconcile of the disk, with its API requests as children and
 * the API server's own spans under those (traceparent sent on every
 * request). With the variables set, the OpenTelemetry SDK is loaded (the
 * counterpart of main.test.ts, where it is not).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAllYaml } from '@kubernetes/client-node';
import { createClient, isInvalid } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, installWebhooks } from '@kubeloop/envtest';
import type { Environment, InstalledWebhooks, WebhookConfigurationLike } from '@kubeloop/envtest';
import { builtinScheme } from '@kubeloop/scheme';
import { HardDisk } from '../src/index.js';
import { kubectl } from '../../../test/support/kubectl.js';
import { parentOf, startJaeger, tag } from '../../../test/support/jaeger.js';
import type { Jaeger, JaegerSpan, JaegerTrace } from '../../../test/support/jaeger.js';
import { startLogged } from '../../../test/support/logged-process.js';
import type { Running } from '../../../test/support/logged-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SERVICE = 'harddisk-operator';

let jaeger: Jaeger;
let env: Environment;
let hooks: InstalledWebhooks;
let client: Client;
let operator: Running;
let dir: string;

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const last = await read();
    if (ok(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)?.slice(0, 800)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

beforeAll(async () => {
  jaeger = await startJaeger();
  dir = await mkdtemp(join(tmpdir(), 'harddisk-tracing-'));
  const tracingConfig = join(dir, 'tracing.yaml');
  // kube-apiserver's tracing (APIServerTracing): OTLP over gRPC, every request sampled.
  await writeFile(tracingConfig, `apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: ${jaeger.otlpGrpc}\nsamplingRatePerMillion: 1000000\n`);
  env = createEnvironment({ apiServerFlags: { 'tracing-config-file': tracingConfig } });
  await env.start();
  // The operator installs its CRD itself (as it does on a cluster); admission goes to this process. Everything here is
  // read and written at v1, the storage version: no conversion is asked for.
  hooks = await installWebhooks(env.kubeConfig, {
    configurations: loadAllYaml(readFileSync(join(root, 'webhook', 'manifests.yaml'), 'utf8')) as WebhookConfigurationLike[],
  });
  client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(HardDisk), fieldOwner: 'e2e-tracing' });
  operator = startLogged(join(root, 'dist', 'main.js'), [
    '--kubeconfig', env.kubeconfigPath, '--no-sample',
    '--metrics-bind-address', '0', '--health-probe-bind-address', '0',
    '--webhook-cert-dir', hooks.certDir, '--webhook-host', hooks.host, '--webhook-port', String(hooks.port),
  ], {
    nodeArgs: ['--import', join(root, 'test', 'fixtures', 'record-modules.mjs')],
    // What docs/tracing.md tells users to set; a short batch delay so the test need not wait 5 s.
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpHttp, OTEL_SERVICE_NAME: SERVICE, OTEL_BSP_SCHEDULE_DELAY: '200', KUBELOOP_MODULE_LOG: join(dir, 'modules.log') },
  });
  await operator.until((l) => l['msg'] === 'caches synced; starting workers');
  // The API server has loaded the configurations once a bad disk is refused.
  await eventually(
    () => client.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'probe', namespace: 'default' }, spec: { size: 'x' } }, { dryRun: true }).then(() => undefined, (e: unknown) => e),
    (err) => isInvalid(err),
    'the validating webhook to answer',
  );
}, 1_800_000); // a cold build of Jaeger takes many minutes

afterAll(async () => {
  operator?.kill();
  await operator?.exited;
  client?.transport.close();
  await hooks?.uninstall().catch(() => undefined);
  await env?.stop();
  await jaeger?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const service = (t: JaegerTrace, s: JaegerSpan): string | undefined => t.processes[s.processID]?.serviceName;
/** The validating webhook's span for kubectl's create of traced-disk (the operator's own updates of it are reviewed too). */
const isCreateReview = (s: JaegerSpan): boolean =>
  s.operationName.startsWith('webhook /validate-') && tag(s, 'kubeloop.object.name') === 'traced-disk' && tag(s, 'kubeloop.admission.operation') === 'CREATE' && tag(s, 'kubeloop.admission.dry_run') === false;

describe('one trace from kubectl apply through the API server, the webhooks and the reconcile', () => {
  it('kubectl apply of a HardDisk: the API server\'s request span holds the operator\'s webhook spans; the reconcile holds its requests and the API server\'s spans under them', async () => {
    const applied = await kubectl(['apply', '-f', '-'], { kubeconfig: env.kubeconfigPath, stdin: JSON.stringify({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'traced-disk', namespace: 'default' }, spec: { size: '5Gi', storageClass: 'fast' } }) });
    expect(applied.stderr).toBe('');
    await eventually(() => client.get(HardDisk, { namespace: 'default', name: 'traced-disk' }).then((d) => d.status?.phase), (p) => p === 'Bound', 'the disk to be Bound');

    // 1. The webhook: the operator's span continues the API server's trace of the kubectl request.
    const webhookTrace = await eventually(
      async () => (await jaeger.traces(SERVICE)).find((t) => t.spans.some((s) => isCreateReview(s))),
      (t) => t !== undefined,
      'the validating webhook span of traced-disk in Jaeger',
    );
    // The API server and the operator export in batches of their own, so a trace fills in over a few
    // seconds: wait until it holds the API server's root span, the validating span's parent and the mutating span.
    const complete = (t: JaegerTrace): boolean => {
      const ids = new Set(t.spans.map((s) => s.spanID));
      const validating = t.spans.find(isCreateReview);
      return (
        validating !== undefined &&
        ids.has(parentOf(validating) ?? '') &&
        t.spans.some((s) => parentOf(s) === undefined && service(t, s) !== SERVICE) &&
        t.spans.some((s) => s.operationName.startsWith('webhook /mutate-') && service(t, s) === SERVICE)
      );
    };
    const whole = await eventually(() => jaeger.trace(webhookTrace!.traceID), (t) => t !== undefined && complete(t), 'the API server\'s root span and both webhook spans in the webhook\'s trace');
    const spans = new Map(whole!.spans.map((s) => [s.spanID, s]));
    const validate = whole!.spans.find(isCreateReview)!;
    expect(tag(validate, 'kubeloop.admission.operation')).toBe('CREATE');
    expect(tag(validate, 'kubeloop.admission.allowed')).toBe(true);
    expect(tag(validate, 'http.response.status_code')).toBe(200);
    // Its parent is the API server's (the admission call), and the trace's root is the API server's span of the request.
    const parent = spans.get(parentOf(validate)!);
    expect(parent).toBeDefined();
    expect(service(whole!, parent!)).not.toBe(SERVICE);
    const roots = whole!.spans.filter((s) => parentOf(s) === undefined);
    expect(roots).toHaveLength(1);
    expect(service(whole!, roots[0]!)).not.toBe(SERVICE);
    // The mutating webhook's span is in the same trace.
    expect(whole!.spans.some((s) => s.operationName.startsWith('webhook /mutate-') && service(whole!, s) === SERVICE)).toBe(true);

    // 2. The reconcile: its requests are its children, and the API server continued each request's traceparent.
    const reconcileTrace = await eventually(
      async () => (await jaeger.traces(SERVICE)).find((t) => t.spans.some((s) => s.operationName === 'reconcile harddisk' && tag(s, 'kubeloop.object.name') === 'traced-disk' && t.spans.some((c) => parentOf(c) === s.spanID && c.operationName === 'patch harddisks/status'))),
      (t) => t !== undefined,
      'the reconcile of traced-disk with its status patch in Jaeger',
    );
    // The API server exports its spans in batches of its own: wait until its span of the status patch is there too.
    const apiServerChildOfStatusPatch = (t: JaegerTrace): boolean =>
      t.spans.some((p) => p.operationName === 'patch harddisks/status' && service(t, p) === SERVICE && t.spans.some((s) => parentOf(s) === p.spanID && service(t, s) !== SERVICE));
    const full = await eventually(() => jaeger.trace(reconcileTrace!.traceID), (t) => t !== undefined && apiServerChildOfStatusPatch(t), 'the API server\'s span of the status patch in the reconcile\'s trace');
    const reconcile = full!.spans.find((s) => s.operationName === 'reconcile harddisk' && tag(s, 'kubeloop.object.name') === 'traced-disk')!;
    expect(parentOf(reconcile)).toBeUndefined();
    expect(tag(reconcile, 'kubeloop.controller')).toBe('harddisk');
    expect(tag(reconcile, 'k8s.namespace.name')).toBe('default');
    expect(typeof tag(reconcile, 'kubeloop.reconcile.id')).toBe('string');
    const requests = full!.spans.filter((s) => parentOf(s) === reconcile.spanID && service(full!, s) === SERVICE && tag(s, 'k8s.verb') !== undefined);
    const statusPatch = requests.find((s) => s.operationName === 'patch harddisks/status')!;
    expect(tag(statusPatch, 'http.response.status_code')).toBe(200);
    expect(requests.some((s) => tag(s, 'k8s.resource') === 'configmaps' && ['create', 'patch', 'update'].includes(tag(s, 'k8s.verb') as string))).toBe(true);
    // The API server's span for the status patch is a child of the operator's request span.
    expect(full!.spans.some((s) => parentOf(s) === statusPatch.spanID && service(full!, s) !== SERVICE)).toBe(true);

    // With the variables set, the SDK was loaded (main.test.ts checks that without them it is not).
    const loaded = (await readFile(join(dir, 'modules.log'), 'utf8')).split('\n');
    expect(loaded.some((url) => url.includes('@opentelemetry/sdk-trace'))).toBe(true);
  }, 240_000);
});
