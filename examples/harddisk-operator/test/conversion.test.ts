/**
 * HardDisk v1 and v2 through the real kube-apiserver, with the operator's
 * webhook server converting between them (installed by envtest's
 * installWebhooks as a user's test would): kubectl creates disks at either
 * version, `kubectl get harddisks.v1.crd-demo.io` and `.v2.` list every
 * object in its own shape, before and after the storage version moves from
 * v1 to v2; a size v2 cannot express comes back unchanged; the operator
 * (which reads v1) binds disks created at v2 and after the switch.
 *
 * Its own control plane: the storage switch changes the CRD every other
 * example test uses.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAllYaml } from '@kubernetes/client-node';
import { createClient, isInvalid } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, installWebhooks } from '@kubeloop/envtest';
import type { Environment, InstalledWebhooks, WebhookConfigurationLike } from '@kubeloop/envtest';
import { createLogger, createManager } from '@kubeloop/manager';
import { CustomResourceDefinition, builtinScheme } from '@kubeloop/scheme';
import { conversionWebhook, silentLogger, watchCertificateFiles } from '@kubeloop/webhook';
import type { ConversionReview } from '@kubeloop/webhook';
import { HardDisk, V1_SIZE_ANNOTATION, hardDiskConversion, setupHardDiskController, setupHardDiskWebhooks } from '../src/index.js';
import { kubectl, kubectlOk } from '../../../test/support/kubectl.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scheme = builtinScheme.extend(HardDisk);
const ns = 'disks';
const crdName = 'harddisks.crd-demo.io';

let env: Environment;
let client: Client;
let hooks: InstalledWebhooks;
const stop = new AbortController();
let running: Promise<void> | undefined;

function ok(args: string[], stdin?: string): Promise<string> {
  return kubectlOk(args, { kubeconfig: env.kubeconfigPath, ...(stdin === undefined ? {} : { stdin }) });
}

async function eventually<T>(read: () => Promise<T>, good: (v: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await read().catch(() => undefined as T);
    if (last !== undefined && good(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Listed {
  items: { apiVersion: string; metadata: { name: string; annotations?: Record<string, string> }; spec?: { size?: string; capacity?: { value: number; unit: string }; storageClass?: string }; status?: { phase?: string } }[];
}

/** `kubectl get harddisks.<version>.crd-demo.io -o json`, by name. */
async function listAt(version: 'v1' | 'v2'): Promise<Map<string, Listed['items'][number]>> {
  const listed = JSON.parse(await ok(['get', `harddisks.${version}.crd-demo.io`, '-n', ns, '-o', 'json'])) as Listed;
  return new Map(listed.items.map((i) => [i.metadata.name, i]));
}

function v1Disk(name: string, size: string): string {
  return JSON.stringify({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name, namespace: ns }, spec: { size, storageClass: 'fast' } });
}
function v2Disk(name: string, value: number, unit: string): string {
  return JSON.stringify({ apiVersion: 'crd-demo.io/v2', kind: 'HardDisk', metadata: { name, namespace: ns }, spec: { capacity: { value, unit }, storageClass: 'fast' } });
}

beforeAll(async () => {
  env = createEnvironment({ crds: [join(root, 'crd')] });
  await env.start();
  client = createClient({ kubeConfig: env.kubeConfig, scheme, fieldOwner: 'conversion-e2e' });
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  hooks = await installWebhooks(env.kubeConfig, {
    configurations: loadAllYaml(readFileSync(join(root, 'webhook', 'manifests.yaml'), 'utf8')) as WebhookConfigurationLike[],
    conversionCRDs: [crdName],
  });
  const manager = createManager({
    kubeConfig: env.kubeConfig,
    scheme,
    fieldOwner: 'harddisk-operator',
    logger: createLogger({ level: 'silent' }),
    webhook: { host: hooks.host, port: hooks.port, certificates: watchCertificateFiles({ certFile: hooks.certFile, keyFile: hooks.keyFile }) },
  });
  setupHardDiskController(manager);
  setupHardDiskWebhooks(manager);
  running = manager.start(stop.signal);
  // Serving once a bad disk is refused by the validating webhook.
  await eventually(
    () => client.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'probe', namespace: ns }, spec: { size: 'x' } }, { dryRun: true }).then(() => undefined, (e: unknown) => e),
    (err) => isInvalid(err),
    'the webhook server to answer',
  );
}, 120_000);

afterAll(async () => {
  stop.abort();
  await running;
  await hooks?.uninstall();
  await env?.stop();
});

describe('HardDisk v1 and v2', () => {
  it('kubectl sees every disk at both versions, in each version’s shape', async () => {
    await ok(['apply', '-f', '-'], v1Disk('twenty', '20Gi'));
    await ok(['apply', '-f', '-'], v1Disk('fraction', '1500Mi'));
    await ok(['apply', '-f', '-'], v1Disk('decimal', '1.5Gi'));
    await ok(['apply', '-f', '-'], v2Disk('big', 3, 'Ti'));
    const v1 = await listAt('v1');
    const v2 = await listAt('v2');
    expect([...v1.keys()].sort()).toEqual(['big', 'decimal', 'fraction', 'twenty']);
    expect([...v2.keys()].sort()).toEqual(['big', 'decimal', 'fraction', 'twenty']);
    expect(v1.get('big')?.spec).toEqual({ size: '3Ti', storageClass: 'fast' });
    expect(v2.get('twenty')?.spec).toEqual({ capacity: { value: 20, unit: 'Gi' }, storageClass: 'fast' });
    expect(v2.get('fraction')?.spec?.capacity).toEqual({ value: 1500, unit: 'Mi' });
    // 1.5Gi has no whole-number v2 form: no capacity, the v1 size kept in an annotation.
    expect(v2.get('decimal')?.spec).toEqual({ storageClass: 'fast' });
    expect(v2.get('decimal')?.metadata.annotations?.[V1_SIZE_ANNOTATION]).toBe('1.5Gi');
    expect([...v2.values()].every((d) => d.apiVersion === 'crd-demo.io/v2')).toBe(true);
    // The operator reads v1: the disk created at v2 is bound like the others.
    await eventually(() => listAt('v1'), (m) => [...m.values()].every((d) => d.status?.phase === 'Bound'), 'every disk Bound');
    // kubectl's default is the preferred version, v2, with its own columns.
    const table = await ok(['get', 'harddisks', '-n', ns]);
    expect(table.split('\n')[0]).toMatch(/^NAME\s+VALUE\s+UNIT\s+PHASE/);
    expect(table).toMatch(/\nbig\s+3\s+Ti\s+Bound/);
  });

  it('2^53 + 1 round-trips exactly: a v1 size labelled through v2 is stored unchanged; a v2 value reads back exact at v1 and v2', async () => {
    const exact = 'disks-int64'; // its own namespace: the other cases list every disk of theirs
    await ok(['create', 'namespace', exact]);
    const at = (version: 'v1' | 'v2', name: string, path: string): Promise<string> => ok(['get', `harddisks.${version}.crd-demo.io`, name, '-n', exact, '-o', `jsonpath=${path}`]);
    // Created at v1 (the storage version), then changed through kubectl's default version, v2: read v1 → v2, written v2 → v1.
    await ok(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'huge-v1', namespace: exact }, spec: { size: '9007199254740993Gi', storageClass: 'fast' } }));
    expect(await at('v2', 'huge-v1', '{.spec.capacity.value}')).toBe('9007199254740993');
    await ok(['label', 'harddisks', 'huge-v1', '-n', exact, 'touched=yes']);
    expect(await at('v1', 'huge-v1', '{.metadata.labels.touched} {.spec.size}')).toBe('yes 9007199254740993Gi');
    // Created at v2 with the value as a JSON integer past 2^53 (JSON.stringify cannot write it: the digits go in as text).
    const v2Text = `{"apiVersion":"crd-demo.io/v2","kind":"HardDisk","metadata":{"name":"huge-v2","namespace":"${exact}"},"spec":{"capacity":{"value":9007199254740993,"unit":"Ti"},"storageClass":"fast"}}`;
    await ok(['apply', '-f', '-'], v2Text);
    expect(await at('v1', 'huge-v2', '{.spec.size}')).toBe('9007199254740993Ti');
    expect(await at('v2', 'huge-v2', '{.spec.capacity.value}')).toBe('9007199254740993');
    // The client reads it as a bigint, exact.
    const read = (await client.get({ apiVersion: 'crd-demo.io/v2', kind: 'HardDisk' }, { namespace: exact, name: 'huge-v2' })) as { spec?: { capacity?: { value?: unknown } } };
    expect(read.spec?.capacity?.value).toBe(9007199254740993n);
    // A size past int64 has no v2 form: kept in the annotation, given back unchanged at v1.
    await ok(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'past-int64', namespace: exact }, spec: { size: '9223372036854775808Gi', storageClass: 'fast' } }));
    expect(await at('v2', 'past-int64', `{.metadata.annotations.crd-demo\\.io/v1-size}|{.spec.capacity}`)).toBe('9223372036854775808Gi|');
    await ok(['label', 'harddisks', 'past-int64', '-n', exact, 'touched=yes']);
    expect(await at('v1', 'past-int64', '{.spec.size}')).toBe('9223372036854775808Gi');
  });

  it('a v2 disk v1 cannot be made from is refused by the conversion, naming the field, not stored with a made-up size', async () => {
    const r = await kubectl(['apply', '-f', '-'], {
      kubeconfig: env.kubeconfigPath,
      stdin: JSON.stringify({ apiVersion: 'crd-demo.io/v2', kind: 'HardDisk', metadata: { name: 'no-capacity', namespace: ns }, spec: { storageClass: 'fast' } }),
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/HardDisk (disks\/)?no-capacity\).*spec\.capacity: Required value/);
    expect((await kubectl(['get', 'harddisks.v1.crd-demo.io', 'no-capacity', '-n', ns], { kubeconfig: env.kubeconfigPath })).code).not.toBe(0);
    // The webhook itself, on a review the API server would not send (capacity without value or unit): Failure naming both fields.
    const answer = await conversionWebhook([hardDiskConversion]).handle(
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'u', desiredAPIVersion: 'crd-demo.io/v1', objects: [{ apiVersion: 'crd-demo.io/v2', kind: 'HardDisk', metadata: { name: 'm', namespace: ns }, spec: { capacity: {} } }] } },
      { signal: stop.signal, log: silentLogger },
    );
    expect((answer.body as ConversionReview).response?.result).toEqual({
      status: 'Failure',
      message: 'converting object 1 of 1 (HardDisk disks/m) from crd-demo.io/v2 to crd-demo.io/v1 failed: spec.capacity.value: Required value: how many units; spec.capacity.unit: Required value: Mi, Gi or Ti',
    });
  });

  it('after the storage version moves to v2, both versions still list every disk, unchanged', async () => {
    const crd = await client.get(CustomResourceDefinition, { name: crdName });
    const versions = (crd.spec.versions ?? []).map((v) => ({ ...v, storage: v.name === 'v2' }));
    await client.update({ ...crd, spec: { ...crd.spec, versions } });
    // Written after the switch: stored as v2. The annotated disk goes through v2 storage and back.
    await ok(['apply', '-f', '-'], v1Disk('after', '5Gi'));
    await ok(['annotate', 'harddisks.v1.crd-demo.io', 'decimal', '-n', ns, 'touched=yes']);
    await ok(['annotate', 'harddisks.v1.crd-demo.io', 'twenty', '-n', ns, 'touched=yes']);
    const stored = await eventually(() => client.get(CustomResourceDefinition, { name: crdName }), (c) => (c.status?.storedVersions ?? []).includes('v2'), 'v2 among the stored versions');
    expect(stored.status?.storedVersions).toEqual(['v1', 'v2']);
    const v1 = await listAt('v1');
    const v2 = await listAt('v2');
    expect([...v1.keys()].sort()).toEqual(['after', 'big', 'decimal', 'fraction', 'twenty']);
    expect([...v2.keys()].sort()).toEqual(['after', 'big', 'decimal', 'fraction', 'twenty']);
    expect(v1.get('decimal')?.spec?.size).toBe('1.5Gi');
    expect(Object.keys(v1.get('decimal')?.metadata.annotations ?? {})).not.toContain(V1_SIZE_ANNOTATION); // v2's alone
    expect(v1.get('decimal')?.metadata.annotations?.['touched']).toBe('yes');
    expect(v1.get('twenty')?.spec?.size).toBe('20Gi');
    expect(v2.get('after')?.spec?.capacity).toEqual({ value: 5, unit: 'Gi' });
    // The operator, still on v1, binds the disk stored at v2.
    await eventually(() => listAt('v1'), (m) => m.get('after')?.status?.phase === 'Bound', 'the disk written after the switch Bound');
  });
});
