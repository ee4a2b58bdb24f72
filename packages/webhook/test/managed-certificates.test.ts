/**
 * Managed certificates against the real API server: two replicas racing to
 * create the Secret end up serving one certificate; the caBundle is
 * injected into webhook configurations and a CRD's conversion; forced
 * rotations (serving certificate, CA) are conflict-safe between replicas;
 * certificates due for renewal, an unusable Secret and changed hosts are
 * replaced.
 */
import { X509Certificate } from 'node:crypto';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs } from '@kubeloop/envtest';
import { parseCertificates } from '@kubeloop/pki';
import { CustomResourceDefinition, MutatingWebhookConfiguration, Secret, ValidatingWebhookConfiguration } from '@kubeloop/scheme';
import { createWebhookServer, isWebhookError, managedCertificates } from '../src/index.js';
import type { ManagedCertificates, ManagedCertificatesOptions, ServingCertificate } from '../src/index.js';
import { testCRD } from '../../../test/support/crds.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const kc = testKubeConfig();
const ns = uniqueName('certs');
const group = `${uniqueName('mc')}.webhook.kubeloop.dev`;
let client: Client;

beforeAll(async () => {
  client = createClient({ kubeConfig: kc, fieldOwner: 'webhook-test' });
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await installCRDs(kc, [testCRD(group, 'Widget', { versions: [{ name: 'v1' }, { name: 'v2', storage: false }] })]);
});

const hooks = ['127.0.0.1', 'webhook.system.svc'];
const started: AbortController[] = [];
afterAll(() => {
  for (const ac of started) ac.abort();
});

function source(secretName: string, extra: Partial<ManagedCertificatesOptions> = {}): ManagedCertificates {
  return managedCertificates({ client, secret: { namespace: ns, name: secretName }, hosts: hooks, caPropagationDelayMs: 300, ...extra });
}

/** Start a source as the server would; collect what it hands over. */
async function run(src: ManagedCertificates): Promise<{ first: ServingCertificate; updates: ServingCertificate[] }> {
  const ac = new AbortController();
  started.push(ac);
  const updates: ServingCertificate[] = [];
  const first = await src.start(ac.signal, (c) => updates.push(c));
  return { first, updates };
}

const serialOf = (pem: string): string => new X509Certificate(pem).serialNumber;
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined): string => Buffer.from(s ?? '', 'base64').toString();

async function stored(name: string): Promise<{ bundle: X509Certificate[]; serving: X509Certificate; resourceVersion: string; data: Record<string, string> }> {
  const secret = await client.apiReader.get(Secret, { namespace: ns, name });
  const data = secret.data ?? {};
  return { bundle: parseCertificates(unb64(data['ca.crt'])), serving: new X509Certificate(unb64(data['tls.crt'])), resourceVersion: secret.metadata!.resourceVersion!, data };
}

describe('managed certificates', () => {
  it('two replicas racing to create the Secret serve the same certificate', async () => {
    const [a, b] = await Promise.all([run(source('race')), run(source('race'))]);
    expect(serialOf(a.first.certPem)).toBe(serialOf(b.first.certPem));
    const { bundle, serving, data } = await stored('race');
    expect(Object.keys(data).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    expect(serving.serialNumber).toBe(serialOf(a.first.certPem));
    expect(bundle).toHaveLength(1);
    expect(serving.checkIssued(bundle[0]!)).toBe(true);
    expect(serving.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serving.checkHost('webhook.system.svc')).toBe('webhook.system.svc');
    const secret = await client.apiReader.get(Secret, { namespace: ns, name: 'race' });
    expect(secret.type).toBe('kubernetes.io/tls');
  });

  it('injects the CA bundle into webhook configurations and a CRD conversion, and serves TLS the bundle verifies', async () => {
    const webhook = (name: string) => ({
      name,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Ignore',
      clientConfig: { url: 'https://127.0.0.1:1/x' },
      rules: [{ apiGroups: [group], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] }],
    });
    await client.create({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: `${group}-v` }, webhooks: [webhook(`a.${group}`), webhook(`b.${group}`)] });
    await client.create({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: `${group}-m` }, webhooks: [webhook(`m.${group}`)] });
    const crd = await client.apiReader.get(CustomResourceDefinition, { name: `widgets.${group}` });
    await client.update({ ...crd, spec: { ...crd.spec, conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://127.0.0.1:1/convert' } } } } });

    const certificates = source('inject', {
      validatingWebhookConfigurations: [`${group}-v`, `${group}-missing`],
      mutatingWebhookConfigurations: [`${group}-m`],
      conversionCRDs: [`widgets.${group}`],
    });
    const server = createWebhookServer({ host: '127.0.0.1', port: 0, certificates });
    const ac = new AbortController();
    started.push(ac);
    const done = server.start(ac.signal);
    const { port } = await server.listening();
    const bundle = certificates.caBundle!;
    expect(bundle).toMatch(/BEGIN CERTIFICATE/);

    const v = await client.apiReader.get(ValidatingWebhookConfiguration, { name: `${group}-v` });
    expect(v.webhooks?.map((w) => w.clientConfig.caBundle)).toEqual([b64(bundle), b64(bundle)]);
    const m = await client.apiReader.get(MutatingWebhookConfiguration, { name: `${group}-m` });
    expect(m.webhooks?.[0]?.clientConfig.caBundle).toBe(b64(bundle));
    const c = await client.apiReader.get(CustomResourceDefinition, { name: `widgets.${group}` });
    expect(c.spec.conversion?.webhook?.clientConfig?.caBundle).toBe(b64(bundle));

    const authorized = await new Promise<boolean>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port, ca: bundle }, () => {
        resolve(socket.authorized);
        socket.destroy();
      });
      socket.on('error', reject);
    });
    expect(authorized).toBe(true);
    // A configuration re-applied without its caBundle gets it back at the next check.
    const again = await client.apiReader.get(ValidatingWebhookConfiguration, { name: `${group}-v` });
    await client.update({ ...again, webhooks: again.webhooks!.map((w) => ({ ...w, clientConfig: { url: w.clientConfig.url! } })) });
    await certificates.refresh();
    expect((await client.apiReader.get(ValidatingWebhookConfiguration, { name: `${group}-v` })).webhooks?.[0]?.clientConfig.caBundle).toBe(b64(bundle));
    ac.abort();
    await done;
  });

  it('rotates the serving certificate from the same CA; the other replica adopts it; racing rotations make one certificate', async () => {
    const a = source('rotate');
    const b = source('rotate');
    const ra = await run(a);
    const rb = await run(b);
    const before = await stored('rotate');

    await a.rotate();
    const after = await stored('rotate');
    expect(after.serving.serialNumber).not.toBe(before.serving.serialNumber);
    expect(after.bundle.map((c) => c.serialNumber)).toEqual(before.bundle.map((c) => c.serialNumber));
    expect(ra.updates.map((c) => serialOf(c.certPem))).toEqual([after.serving.serialNumber]);
    await b.refresh();
    expect(rb.updates.map((c) => serialOf(c.certPem))).toEqual([after.serving.serialNumber]);

    // Both replicas asked to rotate at once: one writes, the other sees the conflict, re-reads, and adopts.
    await Promise.all([a.rotate(), b.rotate()]);
    const raced = await stored('rotate');
    expect(raced.serving.serialNumber).not.toBe(after.serving.serialNumber);
    expect(serialOf(ra.updates.at(-1)!.certPem)).toBe(raced.serving.serialNumber);
    expect(serialOf(rb.updates.at(-1)!.certPem)).toBe(raced.serving.serialNumber);
    expect(Number(raced.resourceVersion)).toBeGreaterThan(Number(after.resourceVersion));
  });

  it('rotates the CA in two steps: the new CA joins the bundle, then serving moves to it', async () => {
    const a = source('ca-rotate');
    const ra = await run(a);
    const before = await stored('ca-rotate');
    const rotation = a.rotate({ ca: true });
    // Right after step one: two CAs trusted, still serving from the old one.
    await new Promise((r) => setTimeout(r, 150));
    const middle = await stored('ca-rotate');
    expect(middle.bundle).toHaveLength(2);
    expect(middle.bundle[1]!.serialNumber).toBe(before.bundle[0]!.serialNumber);
    expect(middle.serving.serialNumber).toBe(before.serving.serialNumber);
    expect(a.caBundle).toBe(middle.bundle.map((c) => c.toString()).join(''));
    await rotation;
    const after = await stored('ca-rotate');
    expect(after.bundle.map((c) => c.serialNumber)).toEqual(middle.bundle.map((c) => c.serialNumber));
    expect(after.serving.checkIssued(after.bundle[0]!)).toBe(true);
    expect(serialOf(ra.updates.at(-1)!.certPem)).toBe(after.serving.serialNumber);
  });

  it('renews a certificate that is due, and replaces an unusable Secret', async () => {
    // Valid for ~90 s (plus the hour it is backdated): always inside the last third of its life.
    const a = source('due', { certValidDays: 0.001 });
    const ra = await run(a);
    await a.refresh();
    expect(ra.updates).toHaveLength(1);
    expect(serialOf(ra.updates[0]!.certPem)).not.toBe(serialOf(ra.first.certPem));

    const b = source('broken');
    const rb = await run(b);
    const secret = await client.apiReader.get(Secret, { namespace: ns, name: 'broken' });
    await client.update({ ...secret, data: { ...secret.data, 'tls.key': b64('garbage') } });
    await b.refresh();
    const fixed = await stored('broken');
    expect(fixed.data['tls.key']).not.toBe(b64('garbage'));
    expect(serialOf(rb.updates.at(-1)!.certPem)).toBe(fixed.serving.serialNumber);
  });

  it('reissues when the hosts change', async () => {
    await run(source('hosts'));
    const wider = source('hosts', { hosts: [...hooks, 'webhook.system.svc.cluster.local'] });
    const r = await run(wider);
    const cert = new X509Certificate(r.first.certPem);
    expect(cert.checkHost('webhook.system.svc.cluster.local')).toBe('webhook.system.svc.cluster.local');
  });

  it('refuses options that cannot work', () => {
    const reason = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (err) {
        return isWebhookError(err) ? err.reason : String(err);
      }
      return undefined;
    };
    expect(reason(() => managedCertificates({ client, secret: { namespace: ns, name: '' }, hosts: hooks }))).toBe('InvalidOptions');
    expect(reason(() => managedCertificates({ client, secret: { namespace: ns, name: 'x' }, hosts: [] }))).toBe('InvalidOptions');
    expect(reason(() => managedCertificates({ client, secret: { namespace: ns, name: 'x' }, hosts: hooks, renewBeforeFraction: 1 }))).toBe('InvalidOptions');
    expect(reason(() => managedCertificates({ client, secret: { namespace: ns, name: 'x' }, hosts: ['not a host'] }))).toBe('InvalidOptions');
  });
});
