/**
 * `kubeloop create api`: add a kind to a project made by `pnpm create
 * kubeloop`, as kubebuilder's `create api` does: the schema-first kind, a
 * controller that reports Ready, a sample, a unit test on the fake API
 * server, and its registration at the `kubeloop:scaffold:*` markers (the
 * kind in src/main.ts's `kinds`, the controller in src/controllers/index.ts's
 * `setupControllers` with its options, from which `pnpm generate` writes the
 * RBAC role).
 * Every edit is checked before anything is written, so a project without
 * the markers, or with the kind already there, is left untouched.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CliError } from './errors.js';

/** Options for {@link createApi}. */
export interface CreateApiOptions {
  /** The API group, e.g. `demo.example.com`. */
  readonly group: string;
  /** The version, e.g. `v1`. */
  readonly version: string;
  /** The kind, UpperCamelCase, e.g. `Blog`. */
  readonly kind: string;
  /** The plural resource name. Default: the kind lower-cased plus `s` (`es` after s, x, z, ch, sh; `ies` after a consonant + y). */
  readonly plural?: string;
  /** Cluster-scoped instead of namespaced. Default: false. */
  readonly clusterScoped?: boolean;
  /** The project directory. */
  readonly cwd: string;
  /** Write nothing; report what would be written. Default: false. */
  readonly dryRun?: boolean;
}

/** What {@link createApi} wrote (or would write). */
export interface CreateApiResult {
  /** Files created, relative to the project. */
  readonly created: readonly string[];
  /** Files changed, relative to the project. */
  readonly changed: readonly string[];
}

export const KIND = /^[A-Z][A-Za-z0-9]{0,62}$/;
export const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
export const GROUP = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;
const PLURAL = /^[a-z][a-z0-9-]{0,62}$/;

/** The plural kubebuilder would pick for most English kinds. */
export function pluralOf(kind: string): string {
  const lower = kind.toLowerCase();
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  return `${lower}s`;
}

/** An import line of a generated file (written so, it is never taken for one of this file's own imports). */
export function use(names: string, from: string): string {
  return `import ${names} from '${from}';`;
}

export function kebab(kind: string): string {
  return kind.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

const MARKERS = {
  imports: '// kubeloop:scaffold:imports',
  kinds: '/* kubeloop:scaffold:kinds */',
  controllers: '// kubeloop:scaffold:controllers',
} as const;

/** The markers each file must carry. */
const NEEDED = {
  main: [MARKERS.imports, MARKERS.kinds],
  controllersIndex: [MARKERS.imports, MARKERS.controllers],
} as const;

function kindFile(o: Required<Pick<CreateApiOptions, 'group' | 'version' | 'kind' | 'plural'>> & { namespaced: boolean }): string {
  return `/**
 * The ${o.kind} kind (${o.group}/${o.version}), defined by its schema: the
 * TypeScript type is inferred from it and \`pnpm generate\` (kubeloop generate
 * crds) writes its CRD. Change the schema, then run \`pnpm generate\`.
 */
${use('{ defineKind }', '@kubeloop/scheme')}
${use('type { ObjectOf }', '@kubeloop/scheme')}
${use('{ Type, k8s }', '@kubeloop/scheme/schema')}

export const ${o.kind} = defineKind({
  group: '${o.group}',
  version: '${o.version}',
  kind: '${o.kind}',
  plural: '${o.plural}',
  namespaced: ${o.namespaced},
  schema: {
    spec: Type.Object({
      message: Type.String({ minLength: 1, description: 'What this ${o.kind} says (replace with your fields).' }),
    }),
    status: Type.Object({
      observedGeneration: Type.Optional(Type.Integer()),
      conditions: Type.Optional(k8s.Conditions()),
    }),
  },
  crd: {
    subresources: { status: true },
    printerColumns: [{ name: 'Message', type: 'string', jsonPath: '.spec.message' }],
  },
});

/** A ${o.kind} object, inferred from the schema above. */
export type ${o.kind} = ObjectOf<typeof ${o.kind}>;
`;
}

function controllerFile(o: { kind: string; name: string; namespaced: boolean; sharded: boolean }): string {
  return `/**
 * The ${o.kind} controller: reconciles each ${o.kind} and reports it Ready
 * for the generation it saw. Put what the ${o.kind} should make happen in
 * the cluster where the comment says; declare each write it makes with
 * \`.withPermissions(...)\` and run \`pnpm generate\` (kubeloop generate rbac
 * derives the reads from what it watches and writes config/rbac/role.yaml).
 */
${use('{ isNotFound, mergeFrom, mutableCopy }', '@kubeloop/client')}
${use('{ Result, generationChanged, setStatusCondition }', '@kubeloop/manager')}
${use('type { Manager }', '@kubeloop/manager')}
import { ${o.kind} } from '../apis/index.js';
${o.sharded ? `${use('type { SetupOptions }', './index.js')}\n` : ''}
/**
 * Registers the ${o.kind} controller with a manager${o.sharded ? `: only this replica's share of the\n * ${o.kind}s when \`shard\` is given (main.ts passes it with --shard-ring)` : ''}.
 *
 * @example
 * \`\`\`ts
 * setup${o.kind}Controller(manager);
 * \`\`\`
 */
export function setup${o.kind}Controller(manager: Manager${o.sharded ? ', { shard }: SetupOptions = {}' : ''}): void {
  manager
    .controller()
    .named('${o.name}')
    .for(${o.kind}, { predicates: [generationChanged()] })${o.sharded ? '\n    .withOptions(shard ? { shard } : {})' : ''}
    .complete(async (request, ctx) => {
      const key = ${o.namespaced ? '{ namespace: request.namespace!, name: request.name }' : '{ name: request.name }'};
      const obj = await manager.client.get(${o.kind}, key).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (!obj) return Result.done(); // deleted

      // Make the cluster match obj.spec here (create or update owned objects with createOrUpdate).
      ctx.log.debug({ message: obj.spec.message }, 'reconciling');

      const status = mutableCopy(obj.status ?? {});
      const generation = obj.metadata?.generation;
      let changed = status.observedGeneration !== generation;
      if (generation !== undefined) status.observedGeneration = generation;
      changed =
        setStatusCondition((status.conditions ??= []), {
          type: 'Ready',
          status: 'True',
          reason: 'Reconciled',
          message: 'the spec is in effect',
          ...(generation !== undefined ? { observedGeneration: generation } : {}),
        }) || changed;
      if (changed) await manager.client.status().patch(obj, mergeFrom({ status: obj.status ?? {} }, { status }));
      return Result.done();
    });
}
`;
}

function testFile(o: { kind: string; group: string; version: string; file: string; namespaced: boolean }): string {
  const ns = o.namespaced ? ", namespace: 'default'" : '';
  const key = o.namespaced ? "{ namespace: 'default', name: 'first' }" : "{ name: 'first' }";
  return `/**
 * The ${o.kind} controller on the fake API server of @kubeloop/testing.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
${use('type { Client }', '@kubeloop/client')}
${use('{ builtinScheme }', '@kubeloop/scheme')}
${use('{ createFakeApiServer, eventually }', '@kubeloop/testing')}
${use('type { FakeApiServer }', '@kubeloop/testing')}
${use('{ startTestManager }', '@kubeloop/testing/manager')}
${use('type { TestManager }', '@kubeloop/testing/manager')}
import { ${o.kind} } from '../src/apis/index.js';
import { setup${o.kind}Controller } from '../src/controllers/index.js';

const scheme = builtinScheme.extend(${o.kind});
let fake: FakeApiServer;
let client: Client;
let tm: TestManager;

beforeAll(async () => {
  fake = createFakeApiServer();
  fake.register(${o.kind}, { status: true });
  client = fake.client({ scheme, fieldOwner: '${o.file}-test' });
  tm = await startTestManager({ backend: fake, scheme, setup: (manager) => setup${o.kind}Controller(manager) });
});

afterAll(async () => {
  await tm.stop();
  await fake.close();
});

describe('the ${o.kind} controller (fake API server)', () => {
  it('reports a new ${o.kind} Ready for its generation', async () => {
    await client.create({ apiVersion: '${o.group}/${o.version}', kind: '${o.kind}', metadata: { name: 'first'${ns} }, spec: { message: 'hello' } });
    await eventually(async () => {
      const obj = await client.get(${o.kind}, ${key});
      expect(obj.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(obj.status?.observedGeneration).toBe(obj.metadata?.generation);
    });
  });
});
`;
}

function sampleFile(o: { kind: string; group: string; version: string; file: string; namespaced: boolean }): string {
  return `apiVersion: ${o.group}/${o.version}
kind: ${o.kind}
metadata:
  name: ${o.file}-sample${o.namespaced ? '\n  namespace: default' : ''}
spec:
  message: Hello from ${o.kind}
`;
}

/** Insert `text` before the line holding `marker`. */
export function before(source: string, marker: string, text: string): string {
  const i = source.indexOf(marker);
  const lineStart = source.lastIndexOf('\n', i) + 1;
  return `${source.slice(0, lineStart)}${text}${source.slice(lineStart)}`;
}

/**
 * Add `item` to the argument list that ends at `marker` (`extend(A /* marker *\/)`):
 * after a comma when the list has items, alone when it is empty (the example kind deleted).
 */
function addToList(source: string, marker: string, item: string): string {
  const at = source.indexOf(marker);
  const head = source.slice(0, at).trimEnd();
  const separator = head.endsWith('(') || head.endsWith('[') ? '' : head.endsWith(',') ? ' ' : ', ';
  return `${head}${separator}${item} ${source.slice(at)}`;
}

/**
 * Add a kind to a project made by `pnpm create kubeloop`.
 *
 * @throws {@link CliError} `Usage` for a malformed group, version, kind or
 *   plural; `InvalidInput` when the project lacks a file or a
 *   `kubeloop:scaffold:*` marker, or the kind's files exist already
 *   (nothing is written then).
 * @example
 * ```ts
 * const { created, changed } = await createApi({ group: 'demo.example.com', version: 'v1', kind: 'Blog', cwd: '.' });
 * ```
 */
export async function createApi(options: CreateApiOptions): Promise<CreateApiResult> {
  const { group, version, kind, cwd } = options;
  if (!GROUP.test(group ?? '')) throw new CliError('Usage', `--group ${JSON.stringify(group)} is not an API group: a DNS subdomain with at least one dot, e.g. demo.example.com`);
  if (!VERSION.test(version ?? '')) throw new CliError('Usage', `--version ${JSON.stringify(version)} is not a Kubernetes version: v1, v2, v1beta1, v1alpha2`);
  if (!KIND.test(kind ?? '')) throw new CliError('Usage', `--kind ${JSON.stringify(kind)} is not a kind: UpperCamelCase letters and digits, e.g. Blog`);
  const plural = options.plural ?? pluralOf(kind);
  if (!PLURAL.test(plural)) throw new CliError('Usage', `--plural ${JSON.stringify(plural)} is not a resource name: lower-case letters, digits and dashes`);
  const namespaced = options.clusterScoped !== true;
  const file = kebab(kind);
  const name = kind.toLowerCase();

  const paths = {
    main: 'src/main.ts',
    apisIndex: 'src/apis/index.ts',
    controllersIndex: 'src/controllers/index.ts',
    kind: `src/apis/${file}.ts`,
    controller: `src/controllers/${file}-controller.ts`,
    test: `test/${file}-controller.unit.test.ts`,
    sample: `config/samples/${file}.yaml`,
  };
  const read = async (rel: string): Promise<string> => {
    try {
      return await readFile(join(cwd, rel), 'utf8');
    } catch {
      throw new CliError('InvalidInput', `${rel} not found in ${cwd}: create api works in a project made by \`pnpm create kubeloop\` (run it in the project's directory, or pass --cwd)`);
    }
  };
  // One after another: when several are missing, the first of them is the one reported (Promise.all would name whichever read failed first).
  const main = await read(paths.main);
  const apisIndex = await read(paths.apisIndex);
  const controllersIndex = await read(paths.controllersIndex);
  for (const [file, text] of [['main', main], ['controllersIndex', controllersIndex]] as const) {
    const missing = NEEDED[file].filter((m) => !text.includes(m)).map((m) => m.trim());
    if (missing.length > 0) {
      throw new CliError('InvalidInput', `${paths[file]} has no ${missing.join(', ')} marker: add them where kubeloop should register new kinds and controllers (see a new project's ${paths[file]}), or register ${kind} by hand`);
    }
  }
  for (const rel of [paths.kind, paths.controller, paths.test, paths.sample]) {
    if (existsSync(join(cwd, rel))) throw new CliError('InvalidInput', `${rel} exists already: ${kind} seems to be there; nothing was written`);
  }
  if (new RegExp(`\\b${kind}\\b`).test(apisIndex)) throw new CliError('InvalidInput', `${paths.apisIndex} exports ${kind} already; nothing was written`);

  // A project whose setupControllers takes options (main.ts's shard ring) passes them on to the new controller;
  // one made before that registers it as its other controllers are.
  const sharded = /export function setupControllers\(manager: Manager, options: SetupOptions\b/.test(controllersIndex);
  const o = { group, version, kind, plural, namespaced, file, name, sharded };
  const created: [string, string][] = [
    [paths.kind, kindFile(o)],
    [paths.controller, controllerFile(o)],
    [paths.test, testFile(o)],
    [paths.sample, sampleFile(o)],
  ];
  let nextMain = before(main, MARKERS.imports, `import { ${kind} } from './apis/index.js';\n`);
  nextMain = addToList(nextMain, MARKERS.kinds, kind);
  let nextControllers = before(controllersIndex, MARKERS.imports, `import { setup${kind}Controller } from './${file}-controller.js';\n`);
  nextControllers = before(nextControllers, MARKERS.controllers, `  setup${kind}Controller(manager${sharded ? ', options' : ''});\n`);
  nextControllers = `${nextControllers.trimEnd()}\n\nexport { setup${kind}Controller } from './${file}-controller.js';\n`;
  const changed: [string, string][] = [
    [paths.main, nextMain],
    [paths.apisIndex, `${apisIndex.trimEnd()}\nexport { ${kind} } from './${file}.js';\n`],
    [paths.controllersIndex, nextControllers],
  ];
  // The CRD `pnpm generate` will write, listed where deploy and install:crds find it (kubebuilder's create api does the same).
  const crdKustomization = 'config/crd/kustomization.yaml';
  if (existsSync(join(cwd, crdKustomization))) {
    const text = await read(crdKustomization);
    const list = /^resources:[ \t]*\n((?:[ \t]*-[^\n]*\n?)*)/m.exec(text);
    const entry = `${plural}.${group}.yaml`;
    if (list && !list[1]!.split('\n').some((line) => line.replace(/^[ \t]*-[ \t]*/, '').trim() === entry)) {
      const end = list.index + list[0].length;
      const indent = /^([ \t]*)-/.exec(list[1]!)?.[1] ?? '  ';
      const head = text.slice(0, end);
      changed.push([crdKustomization, `${head}${head.endsWith('\n') ? '' : '\n'}${indent}- ${entry}\n${text.slice(end)}`]);
    }
  }
  if (options.dryRun !== true) {
    for (const [rel, text] of [...created, ...changed]) {
      await mkdir(dirname(join(cwd, rel)), { recursive: true });
      await writeFile(join(cwd, rel), text);
    }
  }
  return { created: created.map(([rel]) => rel), changed: changed.map(([rel]) => rel) };
}
