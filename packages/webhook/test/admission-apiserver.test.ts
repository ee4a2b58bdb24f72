/**
 * Admission through the real kube-apiserver: envtest installs the webhook
 * configurations pointing at this process, the API server calls the webhook
 * server, and what the client sees is checked: invalid objects denied at
 * create with the field path, defaults in the stored object, the old object
 * on update, deletes, and a throwing validator answered clearly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isClientError, isForbidden, isInvalid } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs, installWebhooks } from '@kubeloop/envtest';
import type { InstalledWebhooks, WebhookConfigurationLike } from '@kubeloop/envtest';
import { builtinScheme, defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { Admission, createWebhookServer, fieldError, mutatePath, mutatingWebhook, validatePath, validatingWebhook, watchCertificateFiles } from '../src/index.js';
import { testCRD } from '../../../test/support/crds.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const group = `${uniqueName('adm')}.webhook.kubeloop.dev`;

interface Disk extends KubeObject {
  apiVersion?: string;
  kind?: 'Disk';
  spec: { size: number; storageClass?: string; fail?: boolean };
}
const Disk = defineKind<Disk>({ group, version: 'v1', kind: 'Disk', plural: 'disks', namespaced: true, listKind: 'DiskList' });

const kc = testKubeConfig();
let client: Client;
let hooks: InstalledWebhooks;
const ac = new AbortController();
let serving: Promise<void>;
const ns = uniqueName('adm');

function configurations(): WebhookConfigurationLike[] {
  const common = { admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Fail', timeoutSeconds: 5 };
  const rules = (operations: string[]) => [{ apiGroups: [group], apiVersions: ['v1'], operations, resources: ['disks'] }];
  return [
    {
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: `${group}-validating` },
      webhooks: [{ name: `vdisk.${group}`, ...common, rules: rules(['CREATE', 'UPDATE', 'DELETE']), clientConfig: { service: { name: 'webhook', namespace: 'system', path: validatePath(Disk) } } }],
    },
    {
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: `${group}-mutating` },
      webhooks: [{ name: `mdisk.${group}`, ...common, rules: rules(['CREATE', 'UPDATE']), clientConfig: { service: { name: 'webhook', namespace: 'system', path: mutatePath(Disk) } } }],
    },
  ];
}

beforeAll(async () => {
  await installCRDs(kc, [testCRD(group, 'Disk')]);
  hooks = await installWebhooks(kc, { configurations: configurations() });
  const server = createWebhookServer({ host: hooks.host, port: hooks.port, certificates: watchCertificateFiles({ certFile: hooks.certFile, keyFile: hooks.keyFile }) });
  server.register(
    validatingWebhook(Disk, {
      validateCreate(disk) {
        if (disk.spec.fail) throw new Error('the validator has a bug');
        const errors = [];
        if (!(disk.spec.size > 0)) errors.push(fieldError.invalid('spec.size', disk.spec.size, 'must be positive'));
        if (!['standard', 'fast'].includes(disk.spec.storageClass ?? '')) errors.push(fieldError.notSupported('spec.storageClass', disk.spec.storageClass, ['standard', 'fast']));
        return errors;
      },
      validateUpdate: (disk, old) => (disk.spec.size < old.spec.size ? [fieldError.forbidden('spec.size', `a disk cannot shrink (from ${old.spec.size})`)] : undefined),
      validateDelete: (disk) => (disk.metadata?.labels?.['protected'] === 'true' ? Admission.deny(`disk ${disk.metadata.name} is protected`) : undefined),
    }),
  );
  server.register(
    mutatingWebhook(Disk, (disk) => {
      disk.spec.storageClass ??= 'standard';
    }),
  );
  serving = server.start(ac.signal);
  await server.listening();
  client = createClient({ kubeConfig: kc, scheme: builtinScheme.extend(Disk), fieldOwner: 'webhook-test' });
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  // The API server loads new webhook configurations through an informer: wait until a denial comes back.
  const deadline = Date.now() + 20_000;
  for (;;) {
    const err: unknown = await client.create(disk('probe', -1), { dryRun: true }).then(() => undefined, (e: unknown) => e);
    if (isInvalid(err) || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
});

afterAll(async () => {
  ac.abort();
  await serving;
  await hooks?.uninstall();
});

function disk(name: string, size: number, extra: Partial<Disk['spec']> = {}, labels?: Record<string, string>): Disk & { apiVersion: string; kind: 'Disk' } {
  return { apiVersion: `${group}/v1`, kind: 'Disk', metadata: { name, namespace: ns, ...(labels ? { labels } : {}) }, spec: { size, ...extra } };
}

describe('admission through the API server', () => {
  it('denies an invalid object at create with the field path, as the API server shows it', async () => {
    const err: unknown = await client.create(disk('bad', -5, { storageClass: 'tape' })).catch((e: unknown) => e);
    expect(isInvalid(err)).toBe(true);
    expect(isClientError(err) && err.status).toMatchObject({
      code: 422,
      reason: 'Invalid',
      message: `admission webhook "vdisk.${group}" denied the request: Disk.${group} "bad" is invalid: [spec.size: Invalid value: -5: must be positive, spec.storageClass: Unsupported value: "tape": supported values: "standard", "fast"]`,
      details: {
        name: 'bad',
        group,
        kind: 'Disk',
        causes: [
          { reason: 'FieldValueInvalid', message: 'Invalid value: -5: must be positive', field: 'spec.size' },
          { reason: 'FieldValueNotSupported', message: 'Unsupported value: "tape": supported values: "standard", "fast"', field: 'spec.storageClass' },
        ],
      },
    });
    await expect(client.get(Disk, { namespace: ns, name: 'bad' })).rejects.toThrow(/not found/);
  });

  it('stores the defaults the mutating webhook adds (and validation sees them)', async () => {
    const created = await client.create(disk('defaulted', 10));
    expect(created.spec.storageClass).toBe('standard');
    expect((await client.get(Disk, { namespace: ns, name: 'defaulted' })).spec).toEqual({ size: 10, storageClass: 'standard' });
    const fast = await client.create(disk('fast', 10, { storageClass: 'fast' }));
    expect(fast.spec.storageClass).toBe('fast');
  });

  it('gives the validator the old object on update', async () => {
    const stored = await client.create(disk('grow', 10));
    const err: unknown = await client.update({ ...stored, spec: { ...stored.spec, size: 5 } }).catch((e: unknown) => e);
    expect(isInvalid(err)).toBe(true);
    expect((err as Error).message).toContain(`Disk.${group} "grow" is invalid: spec.size: Forbidden: a disk cannot shrink (from 10)`);
    const grown = await client.update({ ...stored, spec: { ...stored.spec, size: 20 } });
    expect(grown.spec.size).toBe(20);
  });

  it('validates deletes against the object being deleted', async () => {
    await client.create(disk('keep', 1, {}, { protected: 'true' }));
    const err: unknown = await client.delete(Disk, { namespace: ns, name: 'keep' }).catch((e: unknown) => e);
    expect(isForbidden(err)).toBe(true);
    expect((err as Error).message).toContain(`admission webhook "vdisk.${group}" denied the request: disk keep is protected`);
    await client.create(disk('gone', 1));
    await client.delete(Disk, { namespace: ns, name: 'gone' });
  });

  it('a validator that throws: the request is refused with the error, and the server keeps serving', async () => {
    const err: unknown = await client.create(disk('buggy', 1, { fail: true })).catch((e: unknown) => e);
    expect(isClientError(err) && err.status).toMatchObject({
      code: 500,
      message: `admission webhook "vdisk.${group}" denied the request: the webhook handler failed: the validator has a bug`,
    });
    await expect(client.create(disk('after-bug', 1))).resolves.toMatchObject({ spec: { size: 1, storageClass: 'standard' } });
  });
});
