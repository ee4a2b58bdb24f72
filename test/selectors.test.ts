/**
 * One selector grammar: the client's parser (which the informer cache, the
 * predicates and the fake API server use) gives the real API server's
 * answers. A table of label and field selectors, malformed ones included,
 * and generated ones (fast-check) are each asked of the API server (a live
 * list), of the parser in memory, of the informer cache and of the fake:
 * the same accept or refuse, the same matches, and a refusal that says
 * which selector and why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createClient, isClientError, matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createInformerCache } from '@kubeloop/cache';
import type { InformerCache } from '@kubeloop/cache';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createFakeApiServer } from '@kubeloop/testing';
import type { FakeApiServer } from '@kubeloop/testing';
import { testKubeconfigPath, uniqueName } from './support/env.js';

/**
 * The generated cases' seed and count: fixed in CI (a finding there is a new conformance row, not a flaky run); a
 * wider search is `KUBELOOP_FUZZ_SEED=random KUBELOOP_FUZZ_RUNS=3000 pnpm -s exec vitest run test/selectors.test.ts`,
 * whose failure prints the seed that reproduces it.
 */
const SEED = process.env['KUBELOOP_FUZZ_SEED'] === 'random' ? Date.now() % 2_147_483_647 : Number(process.env['KUBELOOP_FUZZ_SEED'] ?? 24);
const RUNS = process.env['KUBELOOP_FUZZ_RUNS'] === undefined ? undefined : Number(process.env['KUBELOOP_FUZZ_RUNS']);

/** The ConfigMaps every backend holds, by name: their labels. */
const OBJECTS: Record<string, Record<string, string>> = {
  a: { app: 'web', tier: 'front', n: '1' },
  b: { app: 'web', tier: 'back', n: '5' },
  c: { app: 'db', n: '10', 'example.com/role': 'primary' },
  d: { app: 'db', n: '007', flag: '' },
  e: { n: 'x', tier: 'front', in: 'in' },
  f: {},
  g: { n: '9223372036854775807', app: 'batch' },
  h: { n: '99999999999999999999' },
};

const LABEL_SELECTORS = [
  // accepted
  '',
  'app=web',
  'app==web',
  'app!=web',
  'missing!=x',
  'app in (web,db)',
  'app in (web, db)',
  'app notin (web)',
  'app notin ()',
  'app in (web,,db)',
  'app in (web,,)', // an empty value before the close: the server accepts it (found by a generated case)
  'flag in ()',
  'flag=',
  'flag==',
  'app=,tier',
  'tier',
  '!tier',
  '! tier',
  'tier,!app',
  '  app = web  ',
  'app=web,tier=front',
  'example.com/role=primary',
  'example.com/role',
  'in in (in)',
  'in',
  'n>4',
  'n<6',
  'n > 4',
  'n>007',
  'n<10',
  'n>9223372036854775806',
  'n<9223372036854775807',
  'tier>1',
  'tier>1,tier<3',
  'app>0',
  'app\tin\t(web)',
  // refused
  'app in web',
  'app in (web',
  'app in (web db)',
  'app in web)',
  'app=web=x',
  'app=web x',
  'a b',
  '=x',
  '!',
  '!!app',
  '!app=web',
  'app,,tier',
  ',app',
  'app,',
  'app=not valid!',
  'app=(web)',
  'app!',
  'app<=5',
  'app>=5',
  'n>x',
  'n>',
  'n>-1',
  'n>+1',
  'n<99999999999999999999',
  'n>1.5',
  '-app',
  'Example.com/role',
  'a/b/c',
  '/app',
  'example.com/',
  'a'.repeat(64),
  `app=${'v'.repeat(64)}`,
  'app in (web,-db)',
  'app in (,-1)', // the set's values are checked sorted: "-1" is values[1] (found by the generated cases, seed 2054946944)
  'app in (-b,x,-a)', // two bad values: one aggregate, in sorted order
  'app=we\u00e9b',
  'app notin',
  'app in ()x',
];

const FIELD_SELECTORS = [
  // accepted
  '',
  'metadata.name=a',
  'metadata.name==a',
  'metadata.name!=a',
  'metadata.name=a,metadata.name=b',
  'metadata.name!=a,metadata.name!=b',
  'metadata.name=a,',
  ',metadata.name=a',
  'metadata.name=a,,',
  'metadata.name=',
  'metadata.name=\\,',
  'metadata.name=a\\=b',
  'metadata.name=a\\\\',
  'metadata.name=!a',
  'metadata.namespace!=default',
  // refused
  'metadata.name',
  'metadata.name in (a)',
  'metadata.name=a=b',
  'metadata.name=a\\x',
  'metadata.name=a\\',
  ' metadata.name=a',
  'metadata.name = a',
  '=a',
  ' ',
];

type Outcome = { readonly ok: true; readonly names: readonly string[] } | { readonly ok: false; readonly message: string };

async function outcome(run: () => Promise<{ items: readonly { metadata?: { name?: string } }[] }>): Promise<Outcome> {
  try {
    const list = await run();
    return { ok: true, names: list.items.map((o) => o.metadata!.name!).sort() };
  } catch (e) {
    if (!isClientError(e)) throw e;
    return { ok: false, message: `${e.reason}: ${e.message}` };
  }
}

function inMemory(parse: () => (labels: Record<string, string>, name: string) => boolean): Outcome {
  try {
    const match = parse();
    return { ok: true, names: Object.keys(OBJECTS).filter((name) => match(OBJECTS[name]!, name)).sort() };
  } catch (e) {
    if (!isClientError(e)) throw e;
    return { ok: false, message: `${e.reason}: ${e.message}` };
  }
}

let env: Environment;
let live: Client;
let fake: FakeApiServer;
let fakeClient: Client;
let cache: InformerCache;
let ns: string;

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  live = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'selectors-test' });
  fake = createFakeApiServer();
  fakeClient = fake.client({ fieldOwner: 'selectors-test' });
  ns = uniqueName('sel');
  for (const c of [live, fakeClient]) {
    await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    for (const [name, labels] of Object.entries(OBJECTS)) await c.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels } });
  }
  cache = createInformerCache({ client: live, namespaces: [ns] });
  await cache.getInformer(ConfigMap);
});

afterAll(async () => {
  await cache?.stop();
  await live?.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  await fake?.close();
  await env?.stop();
});

/** The four answers to one label selector. */
async function labelAnswers(selector: string): Promise<{ server: Outcome; parser: Outcome; cache: Outcome; fake: Outcome }> {
  return {
    server: await outcome(() => live.list(ConfigMap, { namespace: ns, labelSelector: selector })),
    parser: inMemory(() => {
      const reqs = parseLabelSelector(selector);
      return (labels) => matchesLabels(reqs, labels);
    }),
    cache: await outcome(() => cache.list(ConfigMap, { namespace: ns, labelSelector: selector })),
    fake: await outcome(() => fakeClient.list(ConfigMap, { namespace: ns, labelSelector: selector })),
  };
}

async function fieldAnswers(selector: string): Promise<{ server: Outcome; parser: Outcome; cache: Outcome; fake: Outcome }> {
  return {
    server: await outcome(() => live.list(ConfigMap, { namespace: ns, fieldSelector: selector })),
    parser: inMemory(() => {
      const reqs = parseFieldSelector(selector);
      return (labels, name) => matchesFields(reqs, { metadata: { name, namespace: ns, labels } });
    }),
    cache: await outcome(() => cache.list(ConfigMap, { namespace: ns, fieldSelector: selector })),
    fake: await outcome(() => fakeClient.list(ConfigMap, { namespace: ns, fieldSelector: selector })),
  };
}

/**
 * The same verdict as the server's; a refusal is typed and names the selector (the client's), or, from the fake,
 * with `serverWords`, is the server's own 400 word for word (label selectors: the parse error alone).
 */
function agree(selector: string, answers: { server: Outcome; parser: Outcome; cache: Outcome; fake: Outcome }, serverWords = false): void {
  const { server } = answers;
  for (const [who, got] of Object.entries(answers)) {
    if (who === 'server') continue;
    const context = `${who} on ${JSON.stringify(selector)}: server said ${JSON.stringify(server)}, ${who} said ${JSON.stringify(got)}`;
    expect(got.ok, context).toBe(server.ok);
    if (got.ok && server.ok) expect(got.names, context).toEqual(server.names);
    if (!got.ok) {
      expect(got.message, context).toMatch(who === 'fake' ? /^BadRequest: / : /^InvalidRequest: /);
      if (who === 'fake' && serverWords && !server.ok) expect(got.message, context).toBe(server.message);
      else expect(got.message, context).toContain(JSON.stringify(selector));
    }
  }
}

describe('label selectors: the parser, the cache and the fake answer as the API server', () => {
  it.each(LABEL_SELECTORS)('%j', async (selector) => {
    agree(selector, await labelAnswers(selector), true);
  });

  it('on generated selectors too', async () => {
    const key = fc.constantFrom('app', 'tier', 'n', 'flag', 'in', 'notin', 'example.com/role', 'missing', 'Bad/', '-x', 'a.b_c', 'A/b', 'k'.repeat(64), 'é');
    const value = fc.constantFrom('web', 'db', '', '1', '5', '10', '007', 'x', 'in', '-1', '9223372036854775808', 'a b', 'v.1_2', '-b', 'x-', '_', 'v'.repeat(64), 'é', '+1', '-9223372036854775809');
    const op = fc.constantFrom('=', '==', '!=', '>', '<', ' = ', '=>', '!');
    const requirement = fc.oneof(
      key,
      key.map((k) => `!${k}`),
      fc.tuple(key, op, value).map(([k, o, v]) => `${k}${o}${v}`),
      fc.tuple(key, fc.constantFrom(' in ', ' notin ', ' in', 'in '), fc.array(value, { maxLength: 5 })).map(([k, o, vs]) => `${k}${o}(${vs.join(',')})`),
    );
    const structured = fc.array(requirement, { minLength: 1, maxLength: 3 }).map((rs) => rs.join(','));
    const soup = fc
      .array(fc.constantFrom('app', 'n', 'in', 'notin', 'web', '1', '=', '==', '!=', '!', '>', '<', '(', ')', ',', ' ', '\t', 'x/y', '-'), { maxLength: 8 })
      .map((ts) => ts.join(''));
    await fc.assert(
      fc.asyncProperty(fc.oneof(structured, soup), async (selector) => {
        agree(selector, await labelAnswers(selector), true);
      }),
      { numRuns: RUNS ?? 150, seed: SEED },
    );
  });
});

describe('field selectors: the parser, the cache and the fake answer as the API server', () => {
  it.each(FIELD_SELECTORS)('%j', async (selector) => {
    agree(selector, await fieldAnswers(selector));
  });

  it('on generated selectors too', async () => {
    // Fields the server supports for ConfigMaps (any other is refused by the server and compared in memory by kubeloop).
    const field = fc.constantFrom('metadata.name', 'metadata.namespace', ' metadata.name', 'metadata.name ', '');
    const op = fc.constantFrom('=', '==', '!=', '', '!', '=!', '===');
    const value = fc.array(fc.constantFrom('a', 'b', ns, '\\,', '\\=', '\\\\', '\\', '\\x', '=', ' ', '!'), { maxLength: 3 }).map((vs) => vs.join(''));
    // without an operator a value that starts with a name character lengthens the field's name ("metadata.namea="): a field the
    // server does not know, which only the server can refuse (the parser and the cache accept any field), so not generated
    const term = fc
      .tuple(field, op, value)
      .filter(([, o, v]) => o !== '' || !/^[A-Za-z0-9]/.test(v))
      .map(([f, o, v]) => `${f}${o}${v}`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(term, { maxLength: 3 }).map((ts) => ts.join(',')),
        async (selector) => {
          agree(selector, await fieldAnswers(selector));
        },
      ),
      { numRuns: RUNS ?? 100, seed: SEED },
    );
  });
});
