/**
 * `Warning` headers as the real API server writes them: a CRD version's
 * `deprecationWarning` is any printable text of up to 256 characters (quotes,
 * backslashes, commas, non-ASCII included), and every request for that
 * version answers with it. fast-check generates the texts; the transport
 * must hand each to `onWarning` exactly as the CRD says.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createTransport, loadKubeConfig } from '../src/index.js';
import type { ApiWarning, Client } from '../src/index.js';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { builtinScheme } from '@kubeloop/scheme';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';
import { parseWarningHeader } from '../src/warnings.js';

let env: Environment;
let client: Client;
let group: string;
let crdName: string;
const seen: ApiWarning[] = [];

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  group = `${uniqueName('wh')}.kubeloop.dev`;
  const crd = testCRD(group, 'Gadget', { versions: [{ name: 'v1', storage: true }, { name: 'v1beta1', storage: false }] });
  crdName = crd.metadata.name;
  await env.installCRDs([crd]);
  const kubeConfig = loadKubeConfig({ path: testKubeconfigPath() });
  client = createClient({ kubeConfig, scheme: builtinScheme, fieldOwner: 'warnings-test', transport: createTransport(kubeConfig, { onWarning: (w) => seen.push(w) }) });
});

afterAll(async () => {
  client?.transport.close();
  await env?.stop();
});

/** Make v1beta1 deprecated with `text`, then list it until the server answers with that text (the CRD handler reloads asynchronously). */
async function warningFor(text: string): Promise<string[]> {
  const crd = (await client.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, { name: crdName })) as unknown as { spec: { versions: Record<string, unknown>[] } };
  const versions = crd.spec.versions.map((v) => (v['name'] === 'v1beta1' ? { ...v, deprecated: true, deprecationWarning: text } : v));
  await client.update({ ...crd, spec: { ...crd.spec, versions } } as never);
  const deadline = Date.now() + 10_000;
  for (;;) {
    seen.length = 0;
    await client.list({ apiVersion: `${group}/v1beta1`, kind: 'Gadget' }, { namespace: 'default' });
    const texts = seen.map((w) => w.text);
    if (texts.includes(text) || Date.now() > deadline) return texts;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Printable text as a CRD's deprecationWarning allows it: no control characters, at most 256. */
const printable = fc
  .array(fc.oneof(fc.constantFrom('"', '\\', ',', ' ', 'é', 'ß', '日本', '🙂', "'", ';', '='), fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 6 })), { minLength: 1, maxLength: 12 })
  // eslint-disable-next-line no-control-regex
  .map((parts) => parts.join('').replace(/[\u0000-\u001f\u007f]/g, 'x').trim())
  .filter((t) => t.length > 0 && [...t].length <= 256);

describe('Warning headers from the API server', () => {
  it('a deprecation warning of any printable text reaches onWarning exactly as written (generated texts)', async () => {
    await fc.assert(
      fc.asyncProperty(printable, async (text) => {
        expect(await warningFor(text)).toEqual([text]);
      }),
      { numRuns: 12, seed: 23 },
    );
  });

  it('several warnings in one header, and a value that does not parse is kept whole', () => {
    expect(parseWarningHeader('299 - "a, \\"b\\"", 299 - "c"').map((w) => w.text)).toEqual(['a, "b"', 'c']);
    expect(parseWarningHeader(['299 - "x"', 'not a warning']).map((w) => w.text)).toEqual(['x', 'not a warning']);
  });
});
