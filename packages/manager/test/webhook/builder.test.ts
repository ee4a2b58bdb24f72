/**
 * The manager's webhook server, through the real kube-apiserver: envtest
 * installs webhook configurations pointing at this process; a manager that
 * does not lead (another identity holds the Lease) still answers
 * admissions; `/readyz` includes the server; `/metrics` has
 * controller-runtime's webhook metrics; mistakes in registration are typed;
 * conversions of several kinds share one `/convert` (served through the API
 * server in examples/harddisk-operator/test/conversion.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isClientError, isInvalid } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs, installWebhooks } from '@kubeloop/envtest';
import type { InstalledWebhooks, WebhookConfigurationLike } from '@kubeloop/envtest';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { defineConversion, fieldError, mutatePath, spoke, validatePath, watchCertificateFiles } from '@kubeloop/webhook';
import { formatMicroTime } from '@kubeloop/leaderelection';
import { isManagerError, webhook } from '../../src/index.js';
import type { Manager } from '../../src/index.js';
import { testCRD } from '../../../../test/support/crds.js';
import { uniqueName } from '../../../../test/support/env.js';
import { eventually, newNamespace, readyz, run, testClient, testManager } from '../support.js';
import type { Running } from '../support.js';

const group = `${uniqueName('mgrhook')}.webhook.kubeloop.dev`;

interface Volume extends KubeObject {
  apiVersion?: string;
  kind?: 'Volume';
  spec: { size: number; tier?: string };
}
const Volume = defineKind<Volume>({ group, version: 'v1', kind: 'Volume', plural: 'volumes', namespaced: true, listKind: 'VolumeList' });

function configurations(): WebhookConfigurationLike[] {
  const common = { admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Fail', timeoutSeconds: 5 };
  const rules = [{ apiGroups: [group], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['volumes'] }];
  return [
    { kind: 'ValidatingWebhookConfiguration', metadata: { name: `${group}-v` }, webhooks: [{ name: `vvolume.${group}`, ...common, rules, clientConfig: { service: { name: 'w', namespace: 'system', path: validatePath(Volume) } } }] },
    { kind: 'MutatingWebhookConfiguration', metadata: { name: `${group}-m` }, webhooks: [{ name: `mvolume.${group}`, ...common, rules, clientConfig: { service: { name: 'w', namespace: 'system', path: mutatePath(Volume) } } }] },
  ];
}

let client: Client;
let ns: string;
let hooks: InstalledWebhooks;
let manager: Manager;
let running: Running;

function volume(name: string, size: number, tier?: string): Volume & { apiVersion: string; kind: 'Volume' } {
  return { apiVersion: `${group}/v1`, kind: 'Volume', metadata: { name, namespace: ns }, spec: { size, ...(tier ? { tier } : {}) } };
}

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'mgrhook');
  const kc = (await import('../../../../test/support/env.js')).testKubeConfig();
  await installCRDs(kc, [testCRD(group, 'Volume')]);
  hooks = await installWebhooks(kc, { configurations: configurations() });
  // Someone else leads: the webhook server must serve anyway.
  const lease = uniqueName('held');
  const now = Date.now();
  await client.create({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: lease, namespace: ns },
    spec: { holderIdentity: 'someone-else', leaseDurationSeconds: 600, acquireTime: formatMicroTime(now), renewTime: formatMicroTime(now), leaseTransitions: 0 },
  });
  manager = testManager(ns, {
    metricsBindAddress: '127.0.0.1:0',
    healthProbeBindAddress: '127.0.0.1:0',
    leaderElection: { name: lease, namespace: ns, identity: 'me' },
    webhook: { host: hooks.host, port: hooks.port, certificates: watchCertificateFiles({ certFile: hooks.certFile, keyFile: hooks.keyFile }) },
  });
  manager
    .webhook(Volume)
    .withDefaulter((v) => {
      v.spec.tier ??= 'standard';
    })
    .withValidator({
      validateCreate: (v) => (v.spec.size > 0 ? undefined : [fieldError.invalid('spec.size', v.spec.size, 'must be positive')]),
      validateUpdate: (v, old) => (v.spec.size < old.spec.size ? [fieldError.forbidden('spec.size', 'a volume cannot shrink')] : undefined),
    })
    .complete();
  running = run(manager);
  // The API server picks up new webhook configurations through an informer: wait for a denial.
  await eventually(
    () => client.create(volume('probe', -1), { dryRun: true }).then(() => undefined, (e: unknown) => e),
    (err) => isInvalid(err),
    'the webhook configuration to take effect',
  );
});

afterAll(async () => {
  await running?.stop();
  await hooks?.uninstall();
});

describe('a manager with a webhook server', () => {
  it('serves admissions while another replica leads: invalid objects denied with the field path, defaults stored', async () => {
    expect(manager.isLeader()).toBe(false);
    const err: unknown = await client.create(volume('bad', -3)).catch((e: unknown) => e);
    expect(isInvalid(err)).toBe(true);
    expect(isClientError(err) && err.message).toContain(`Volume.${group} "bad" is invalid: spec.size: Invalid value: -3: must be positive`);

    const created = await client.create(volume('good', 5));
    expect(created.spec.tier).toBe('standard');
    const shrink: unknown = await client.update({ ...created, spec: { ...created.spec, size: 1 } }).catch((e: unknown) => e);
    expect(isClientError(shrink) && shrink.message).toContain('spec.size: Forbidden: a volume cannot shrink');
  });

  it('/readyz names the webhook check; /metrics has the webhook metrics by path', async () => {
    const ready = await fetch(`${manager.healthUrl}/readyz?verbose`);
    const text = await ready.text();
    expect(text).toContain('webhook ok');
    const metrics = await (await fetch(`${manager.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`controller_runtime_webhook_requests_total\\{webhook="${validatePath(Volume)}",code="200"\\} [1-9]`));
    expect(metrics).toContain(`controller_runtime_webhook_latency_seconds_bucket{le="0.005",webhook="${mutatePath(Volume)}"}`);
    expect(metrics).toContain('controller_runtime_webhook_requests_in_flight');
  });

  it('registration mistakes are typed: no server configured, nothing to register, a kind registered twice', () => {
    const plain = testManager(ns);
    expect(plain.webhookServer).toBeUndefined();
    expect(() => plain.webhook(Volume)).toThrow(/needs a webhook server: set createManager\(\{ webhook/);
    const m = testManager(ns, { webhook: { port: 0, certificates: watchCertificateFiles({ certFile: hooks.certFile, keyFile: hooks.keyFile }) } });
    const nothing: unknown = (() => {
      try {
        m.webhook(Volume).complete();
      } catch (e) {
        return e;
      }
    })();
    expect(isManagerError(nothing) && nothing.reason).toBe('InvalidRegistration');
    m.webhook(Volume).withValidator({}).complete();
    expect(() => m.webhook(Volume).withValidator({}).complete()).toThrow(/webhook\(Volume\.v1\..*\): .*already/);
  });

  it('admission classes through DI: built from the container, validator and defaulter found by their methods; mistakes typed', () => {
    const m = testManager(ns, { webhook: { port: 0, certificates: watchCertificateFiles({ certFile: hooks.certFile, keyFile: hooks.keyFile }) } });
    const LIMIT = Symbol('limit');
    m.container.registerInstance(LIMIT, 10);
    const built: number[] = [];
    class VolumeAdmission {
      constructor(readonly limit: number) {
        built.push(limit);
      }
      validateCreate(v: Volume) {
        return v.spec.size > this.limit ? [fieldError.invalid('spec.size', v.spec.size, `at most ${this.limit}`)] : undefined;
      }
      default(v: Volume) {
        v.spec.tier ??= 'standard';
      }
    }
    webhook({ for: Volume, inject: [LIMIT] })(VolumeAdmission);
    m.registerWebhook(VolumeAdmission);
    expect(built).toEqual([10]);
    // Both paths are taken now: the builder refuses them again.
    expect(() => m.webhook(Volume).withValidator({}).complete()).toThrow(/already/);
    expect(() => m.webhook(Volume).withDefaulter(() => undefined).complete()).toThrow(/already/);
    const fail = (fn: () => void): unknown => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      return undefined;
    };
    class Undecorated {
      validateCreate() {
        return undefined;
      }
    }
    const undecorated = fail(() => m.registerWebhook(Undecorated));
    expect(isManagerError(undecorated) && undecorated.message).toBe('Undecorated has no @webhook({ for }) decoration and no registration was given');
    class Nothing {}
    const nothing = fail(() => m.registerWebhook(Nothing, { for: Volume, inject: [] }));
    expect(isManagerError(nothing) && nothing.message).toBe('Nothing has no validateCreate, validateUpdate, validateDelete or default method');
    const unresolved = fail(() => m.registerWebhook(VolumeAdmission, { for: Volume, inject: [Symbol('missing')] }));
    expect(isManagerError(unresolved) && unresolved.reason).toBe('Resolution');
  });

  it('registeredWebhooks lists what the API server must be told: type, kind, path, the operations a validator has methods for', () => {
    const m = testManager(ns, { webhook: { port: 0, certificates: watchCertificateFiles({ certFile: hooks.certFile, keyFile: hooks.keyFile }) } });
    const VolumeV2 = defineKind<Volume>({ group, version: 'v2', kind: 'Volume', plural: 'volumes', namespaced: true, listKind: 'VolumeList' });
    m.webhook(Volume)
      .withValidator({ validateUpdate: () => undefined, validateDelete: () => undefined })
      .withDefaulter(() => undefined)
      .withConversion(defineConversion(Volume, [spoke(VolumeV2, { toHub: (v: Volume) => v, fromHub: (v: Volume) => v })]))
      .withOptions({ validate: { path: '/check-volumes' } })
      .complete();
    expect(m.registeredWebhooks().map((w) => ({ ...w, kind: `${w.kind.kind}.${w.kind.version}` }))).toEqual([
      { type: 'conversion', kind: 'Volume.v1', path: '/convert', operations: [] },
      { type: 'mutating', kind: 'Volume.v1', path: mutatePath(Volume), operations: ['CREATE', 'UPDATE'] },
      { type: 'validating', kind: 'Volume.v1', path: '/check-volumes', operations: ['UPDATE', 'DELETE'] },
    ]);
    // A copy: the caller cannot change what the manager knows.
    m.registeredWebhooks().pop();
    expect(m.registeredWebhooks()).toHaveLength(3);
    expect(testManager(ns).registeredWebhooks()).toEqual([]);
  });

  it('a webhook server with nothing registered does not start: no certificate asked for, /readyz passes', async () => {
    let asked = 0;
    const m = testManager(ns, {
      healthProbeBindAddress: '127.0.0.1:0',
      webhook: { port: 0, certificates: { start: () => ((asked += 1), Promise.reject(new Error('no certificate here'))) } },
    });
    const idle = run(m);
    try {
      const ready = await eventually(() => readyz(m), (r) => r.status === 200, '/readyz to pass');
      expect(ready.body).toContain('[+]webhook ok');
      expect(asked).toBe(0);
    } finally {
      await idle.stop();
    }
  });

  it('conversions: one /convert for every kind; one per kind, of that kind', () => {
    const m = testManager(ns, { webhook: { port: 0, certificates: watchCertificateFiles({ certFile: hooks.certFile, keyFile: hooks.keyFile }) } });
    interface Disk extends KubeObject {
      apiVersion?: string;
      kind?: 'Disk';
    }
    const VolumeV2 = defineKind<Volume>({ group, version: 'v2', kind: 'Volume', plural: 'volumes', namespaced: true, listKind: 'VolumeList' });
    const Disk = defineKind<Disk>({ group, version: 'v1', kind: 'Disk', plural: 'disks', namespaced: true, listKind: 'DiskList' });
    const DiskV2 = defineKind<Disk>({ group, version: 'v2', kind: 'Disk', plural: 'disks', namespaced: true, listKind: 'DiskList' });
    const same = { toHub: (v: Volume) => v, fromHub: (v: Volume) => v };
    const sameDisk = { toHub: (v: Disk) => v, fromHub: (v: Disk) => v };
    m.webhook(Volume).withConversion(defineConversion(Volume, [spoke(VolumeV2, same)])).complete();
    // A second kind joins the same endpoint (a second registration at /convert would be refused by the server).
    m.webhook(Disk).withConversion(defineConversion(Disk, [spoke(DiskV2, sameDisk)])).complete();
    const again: unknown = (() => {
      try {
        m.webhook(VolumeV2).withConversion(defineConversion(Volume, [spoke(VolumeV2, same)])).complete();
      } catch (e) {
        return e;
      }
    })();
    expect(isManagerError(again) && again.message).toMatch(/has a conversion already/);
    expect(() => m.webhook(Disk).withConversion(defineConversion(Volume, [spoke(VolumeV2, same)]) as never).complete()).toThrow(/the conversion is of Volume\..*, not of this kind/);
  });
});
