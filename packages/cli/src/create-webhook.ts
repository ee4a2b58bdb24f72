/**
 * `kubeloop create webhook`: admission webhooks for a kind of a project made
 * by `pnpm create kubeloop`, as kubebuilder's `create webhook --defaulting
 * --programmatic-validation` and `--conversion --spoke` do: the webhook class
 * (src/webhooks/<kind>-webhook.ts), or for a conversion the spoke versions'
 * kinds (src/apis/<kind>-<spoke>.ts), the hub's CRD pointed at the webhook
 * Service's /convert and the hub ⇄ spoke functions
 * (src/webhooks/<kind>-conversion.ts); its registration in `setupWebhooks`
 * (src/webhooks/index.ts, called by main.ts and by `kubeloop generate
 * webhooks`), the webhook Service and kustomization (config/webhook), the
 * deploy kustomization's reference to it, and the project's "kubeloop"
 * webhook settings and `generate` scripts. Every edit is checked before
 * anything is written.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { GROUP, KIND, VERSION, before, kebab, use } from './create-api.js';
import { CliError } from './errors.js';
import { webhookNames } from './generate-webhooks.js';

/** Options for {@link createWebhook}. */
export interface CreateWebhookOptions {
  /** The kind's API group, e.g. `demo.example.com`. */
  readonly group: string;
  /** The kind's version, e.g. `v1`. */
  readonly version: string;
  /** The kind, exported by that name from src/apis/index.ts (`kubeloop create api` makes it so). */
  readonly kind: string;
  /** A defaulter: a mutating webhook on CREATE and UPDATE. Default: false. */
  readonly defaulting?: boolean;
  /** A validator: a validating webhook on CREATE and UPDATE. Default: false. At least one of defaulting, validation and conversion is required. */
  readonly validation?: boolean;
  /**
   * A conversion webhook between `version`, the hub (the storage version,
   * the one controllers use), and each of `spokes`: every spoke is defined
   * as a copy of the hub's schema to change, both versions' CRD stanza call
   * the webhook Service at /convert, and the hub ⇄ spoke functions start as
   * a copy of the fields. Default: false.
   */
  readonly conversion?: boolean;
  /** The spoke versions of a conversion, e.g. `['v2']`. Required with `conversion`, refused without. Default: none. */
  readonly spokes?: readonly string[];
  /** The project directory. */
  readonly cwd: string;
  /** Write nothing; report what would be written. Default: false. */
  readonly dryRun?: boolean;
}

/** What {@link createWebhook} wrote (or would write). */
export interface CreateWebhookResult {
  /** Files created, relative to the project. */
  readonly created: readonly string[];
  /** Files changed, relative to the project. */
  readonly changed: readonly string[];
}

const MARKERS = {
  imports: '// kubeloop:scaffold:imports',
  webhooks: '// kubeloop:scaffold:webhooks',
} as const;

function classFile(o: { kind: string; group: string; version: string; defaulting: boolean; validation: boolean }): string {
  const implemented = [...(o.defaulting ? [`Defaulter<${o.kind}>`] : []), ...(o.validation ? [`Validator<${o.kind}>`] : [])];
  const types = [...(o.defaulting ? ['Defaulter'] : []), ...(o.validation ? ['FieldError', 'Validator'] : [])].join(', ');
  const defaulter = `  /**
   * Sets what a user may leave out, on CREATE and UPDATE, before the object
   * is validated and stored: change \`obj\` in place (the API server gets the
   * JSON patch of what changed), e.g. \`obj.spec.replicas ??= 1;\`.
   */
  default(obj: ${o.kind}): void {
    void obj; // nothing to default yet
  }
`;
  const validator = `  /** Checks a new ${o.kind}: each field error denies the create, with its field's path. */
  validateCreate(obj: ${o.kind}): FieldError[] {
    return this.errors(obj);
  }

  /** Checks a changed ${o.kind} (\`old\` is the stored one: refuse changes that must not happen). */
  validateUpdate(obj: ${o.kind}, old: ${o.kind}): FieldError[] {
    void old;
    return this.errors(obj);
  }

  // Add validateDelete(obj) to check deletes too, then run \`pnpm generate\` (the webhook is then called on DELETE).

  /**
   * What is wrong with a ${o.kind}, beyond what its schema already refuses,
   * e.g. \`if (obj.spec.replicas > 10) errors.push(fieldError.invalid('spec.replicas', obj.spec.replicas, 'at most 10'));\`
   * (\`fieldError\` from @kubeloop/webhook writes the API server's messages).
   */
  private errors(obj: ${o.kind}): FieldError[] {
    const errors: FieldError[] = [];
    void obj; // no checks yet
    return errors;
  }
`;
  return `/**
 * The admission webhooks of ${o.kind} (${o.group}/${o.version}): the API server
 * calls them before it stores a ${o.kind}${o.defaulting ? ' (default, a mutating webhook)' : ''}${o.validation ? ' (validate*, a validating webhook)' : ''}.
 * setupWebhooks (./index.ts) registers the class; \`pnpm generate\` (kubeloop
 * generate webhooks) writes config/webhook/manifests.yaml from the methods it
 * has. Constructor parameters are resolved from the manager's container.
 */
${use('{ webhook }', '@kubeloop/manager')}
${use(`type { ${types} }`, '@kubeloop/webhook')}
import { ${o.kind} } from '../apis/index.js';

@webhook({ for: ${o.kind} })
export class ${o.kind}Webhook implements ${implemented.join(', ')} {
${[...(o.defaulting ? [defaulter] : []), ...(o.validation ? [validator] : [])].join('\n')}}
`;
}

/** The spoke version's kind: the hub's module with the version, the names and the CRD stanza changed. */
function spokeFile(hubText: string, o: { kind: string; group: string; version: string; spoke: string; spokeKind: string; hubFile: string }): string {
  let text = hubText
    .replace(`version: '${o.version}'`, `version: '${o.spoke}'`)
    .replace(`export const ${o.kind} = defineKind(`, `export const ${o.spokeKind} = defineKind(`)
    .replace(`export type ${o.kind} = ObjectOf<typeof ${o.kind}>;`, `export type ${o.spokeKind} = ObjectOf<typeof ${o.spokeKind}>;`)
    .replace(/^(\s*)storage: true,\n/m, '');
  text = text.replaceAll(`${o.group}/${o.version})`, `${o.group}/${o.spoke})`);
  return `// ${o.kind} ${o.group}/${o.spoke}, a spoke of ${o.version} (the hub, src/apis/${o.hubFile}.ts): written by
// \`kubeloop create webhook --conversion\` as a copy of the hub, to change; the API server converts
// between the versions through src/webhooks/${o.hubFile}-conversion.ts.
${text}`;
}

function conversionFile(o: { kind: string; group: string; version: string; spokes: readonly { spoke: string; spokeKind: string }[] }): string {
  const spokes = o.spokes.map(
    ({ spoke, spokeKind }) => `  spoke<${spokeKind}, ${o.kind}>(${spokeKind}, {
    // ${spoke} → ${o.version}. The versions start with the same fields: change both functions with ${spokeKind}'s schema,
    // so that ${o.version} → ${spoke} → ${o.version} gives back what was stored (keep what ${spoke} cannot hold in an annotation).
    toHub: (obj) => ({ ...obj, apiVersion: '${o.group}/${o.version}' }),
    // ${o.version} → ${spoke}
    fromHub: (obj) => ({ ...obj, apiVersion: '${o.group}/${spoke}' }),
  }),
`,
  );
  return `/**
 * Conversion of ${o.kind} between ${o.group}/${o.version}, the hub (the storage version, the one
 * the controllers use), and ${o.spokes.map((s) => s.spoke).join(', ')}: the API server sends a ConversionReview to the
 * webhook Service's /convert whenever it reads or writes a version other than the one stored.
 * setupWebhooks (./index.ts) registers it; the CRD's conversion stanza is in each version's
 * \`crd.conversion\` (src/apis), and \`pnpm generate\` checks the two agree.
 */
${use('{ defineConversion, spoke }', '@kubeloop/webhook')}
${use('type { KindConversion }', '@kubeloop/webhook')}
import { ${[o.kind, ...o.spokes.map((s) => s.spokeKind)].join(', ')} } from '../apis/index.js';

/** ${o.kind}'s conversion: hub ${o.version}, spoke${o.spokes.length > 1 ? 's' : ''} ${o.spokes.map((s) => s.spoke).join(', ')}. */
export const ${o.kind.charAt(0).toLowerCase()}${o.kind.slice(1)}Conversion: KindConversion<${o.kind}> = defineConversion(${o.kind}, [
${spokes.join('')}]);
`;
}

function indexFile(): string {
  return `/**
 * The project's admission and conversion webhooks: \`setupWebhooks\`
 * registers every one with a manager. main.ts calls it (unless
 * --no-webhooks); so does \`kubeloop generate webhooks\` (on a manager that
 * never connects), to write config/webhook/manifests.yaml from what is
 * registered.
 */
${use('type { Manager }', '@kubeloop/manager')}
${MARKERS.imports} (\`kubeloop create webhook\` adds imports above this line)

/**
 * Registers the project's webhooks with a manager that has a webhook server.
 *
 * @example
 * \`\`\`ts
 * const manager = createManager({ scheme, webhook: { certificates } });
 * setupWebhooks(manager);
 * \`\`\`
 */
export function setupWebhooks(manager: Manager): void {
  ${MARKERS.webhooks} (\`kubeloop create webhook\` adds webhooks above this line)
}
`;
}

function serviceFile(name: string, namespace: string): string {
  return `# The Service the API server calls the operator's webhooks through (config/webhook/manifests.yaml names it).
apiVersion: v1
kind: Service
metadata:
  name: ${webhookNames(name).service}
  namespace: ${namespace}
  labels:
    app.kubernetes.io/name: ${name}
spec:
  selector:
    app.kubernetes.io/name: ${name}
  ports:
    - name: https
      port: 443
      targetPort: webhook-server
`;
}

const KUSTOMIZATION = `# The webhooks: their configurations and certificate roles (manifests.yaml, written by
# kubeloop generate webhooks) and the Service they call.
resources:
  - manifests.yaml
  - service.yaml
`;

/**
 * Add admission webhooks for a kind to a project made by `pnpm create kubeloop`.
 *
 * @throws {@link CliError} `Usage` for a malformed group, version or kind,
 *   or neither `defaulting` nor `validation`; `InvalidInput` when the
 *   project lacks a file or marker, the kind is not exported from
 *   src/apis/index.ts (or is of another group or version), or its webhook
 *   exists already (nothing is written then).
 * @example
 * ```ts
 * const { created, changed } = await createWebhook({ group: 'demo.example.com', version: 'v1', kind: 'Website', defaulting: true, validation: true, cwd: '.' });
 * ```
 */
export async function createWebhook(options: CreateWebhookOptions): Promise<CreateWebhookResult> {
  const { group, version, kind, cwd } = options;
  if (!GROUP.test(group ?? '')) throw new CliError('Usage', `--group ${JSON.stringify(group)} is not an API group: a DNS subdomain with at least one dot, e.g. demo.example.com`);
  if (!VERSION.test(version ?? '')) throw new CliError('Usage', `--version ${JSON.stringify(version)} is not a Kubernetes version: v1, v2, v1beta1, v1alpha2`);
  if (!KIND.test(kind ?? '')) throw new CliError('Usage', `--kind ${JSON.stringify(kind)} is not a kind: UpperCamelCase letters and digits, e.g. Blog`);
  const defaulting = options.defaulting === true;
  const validation = options.validation === true;
  const conversion = options.conversion === true;
  const spokes = [...(options.spokes ?? [])];
  if (!defaulting && !validation && !conversion) {
    throw new CliError('Usage', 'create webhook needs --defaulting (a mutating webhook), --programmatic-validation (a validating webhook), --conversion with --spoke (a conversion webhook), or several');
  }
  if (conversion && spokes.length === 0) throw new CliError('Usage', `--conversion needs --spoke VERSION: the other version of ${kind}, converted to and from ${version} (the hub, stored), e.g. --spoke v2`);
  if (!conversion && spokes.length > 0) throw new CliError('Usage', '--spoke goes with --conversion: a spoke is a version converted to and from --version');
  for (const spoke of spokes) {
    if (!VERSION.test(spoke)) throw new CliError('Usage', `--spoke ${JSON.stringify(spoke)} is not a Kubernetes version: v1, v2, v1beta1, v1alpha2`);
    if (spoke === version) throw new CliError('Usage', `--spoke ${spoke} is --version, the hub: a spoke is another version of ${kind}`);
  }
  if (new Set(spokes).size !== spokes.length) throw new CliError('Usage', `--spoke names ${spokes.find((s, i) => spokes.indexOf(s) !== i)} twice`);
  const admission = defaulting || validation;
  const file = kebab(kind);
  const paths = {
    packageJson: 'package.json',
    main: 'src/main.ts',
    apisIndex: 'src/apis/index.ts',
    kind: `src/apis/${file}.ts`,
    webhooksIndex: 'src/webhooks/index.ts',
    webhook: `src/webhooks/${file}-webhook.ts`,
    kustomization: 'config/webhook/kustomization.yaml',
    service: 'config/webhook/service.yaml',
    defaultKustomization: 'config/default/kustomization.yaml',
  };
  const read = async (rel: string): Promise<string> => {
    try {
      return await readFile(join(cwd, rel), 'utf8');
    } catch {
      throw new CliError('InvalidInput', `${rel} not found in ${cwd}: create webhook works in a project made by \`pnpm create kubeloop\` (run it in the project's directory, or pass --cwd)`);
    }
  };
  // One after another, so that of several missing files the first is the one reported.
  const packageText = await read(paths.packageJson);
  const main = await read(paths.main);
  const apisIndex = await read(paths.apisIndex);
  const defaultKustomization = await read(paths.defaultKustomization);
  if (!new RegExp(`\\b${kind}\\b`).test(apisIndex)) throw new CliError('InvalidInput', `${paths.apisIndex} does not export ${kind}: add the kind first (kubeloop create api --group ${group} --version ${version} --kind ${kind})`);
  if (existsSync(join(cwd, paths.kind))) {
    const kindText = await read(paths.kind);
    if (!kindText.includes(`group: '${group}'`) || !kindText.includes(`version: '${version}'`)) {
      throw new CliError('InvalidInput', `${paths.kind} does not define ${kind} as ${group}/${version}: pass the kind's own --group and --version`);
    }
  }
  if (admission && existsSync(join(cwd, paths.webhook))) throw new CliError('InvalidInput', `${paths.webhook} exists already: ${kind} has its webhook; nothing was written`);
  const conversionPath = `src/webhooks/${file}-conversion.ts`;
  const spokeKinds = spokes.map((spoke) => ({ spoke, spokeKind: `${kind}${spoke.charAt(0).toUpperCase()}${spoke.slice(1)}`, path: `src/apis/${file}-${spoke}.ts` }));
  if (conversion) {
    if (existsSync(join(cwd, conversionPath))) throw new CliError('InvalidInput', `${conversionPath} exists already: ${kind} has its conversion; nothing was written`);
    for (const s of spokeKinds) if (existsSync(join(cwd, s.path))) throw new CliError('InvalidInput', `${s.path} exists already: ${kind} ${s.spoke} is defined; nothing was written`);
  }
  const missing = [MARKERS.imports, MARKERS.webhooks].filter((m) => !main.includes(m));
  if (missing.length > 0) {
    throw new CliError('InvalidInput', `${paths.main} has no ${missing.join(', ')} marker: add them where kubeloop should register webhooks (see a new project's ${paths.main}), or register ${kind}Webhook by hand`);
  }
  let manifest: Record<string, unknown>;
  try {
    manifest = JSON.parse(packageText) as Record<string, unknown>;
  } catch (cause) {
    throw new CliError('InvalidInput', `${paths.packageJson} is not JSON`, { cause });
  }
  const name = typeof manifest['name'] === 'string' ? manifest['name'].replace(/^@[^/]+\//, '') : undefined;
  if (!name) throw new CliError('InvalidInput', `${paths.packageJson} has no name: the webhook Service and configurations are named after it`);
  const settings = (manifest['kubeloop'] ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const namespace = typeof settings['webhooks']?.['namespace'] === 'string' ? settings['webhooks']['namespace'] : typeof settings['rbac']?.['leaderElectionNamespace'] === 'string' ? settings['rbac']['leaderElectionNamespace'] : `${name}-system`;

  const created: [string, string][] = admission ? [[paths.webhook, classFile({ kind, group, version, defaulting, validation })]] : [];
  const changed: [string, string][] = [];
  let registration = admission ? `  manager.registerWebhook(${kind}Webhook);\n` : '';
  let registrationImports = admission ? `import { ${kind}Webhook } from './${file}-webhook.js';\n` : '';
  if (conversion) {
    const hubText = existsSync(join(cwd, paths.kind)) ? await read(paths.kind) : undefined;
    const shape = (text: string | undefined): string | undefined => {
      if (text === undefined) return `there is no ${paths.kind}`;
      if (text.split(`version: '${version}'`).length !== 2) return `${paths.kind} does not say version: '${version}' once`;
      if (!text.includes(`export const ${kind} = defineKind(`) || !text.includes(`export type ${kind} = ObjectOf<typeof ${kind}>;`)) return `${paths.kind} does not define ${kind} with defineKind and ObjectOf`;
      if (text.split(/^ {2}crd: \{$/m).length !== 2) return `${paths.kind} has no crd: { ... } stanza of its own`;
      if (text.includes('conversion')) return `${paths.kind} has a conversion already`;
      return undefined;
    };
    const problem = shape(hubText);
    if (problem !== undefined) {
      throw new CliError('InvalidInput', `${problem}: create webhook --conversion edits a kind as kubeloop create api writes it; define the spoke kinds and defineConversion by hand (docs/webhooks.md)`);
    }
    const service = `conversion: { service: { namespace: '${namespace}', name: '${webhookNames(name).service}', path: '/convert' } },`;
    // The hub keeps the objects (storage) and both versions call the webhook Service's /convert.
    const hub = hubText!.replace(/^ {2}crd: \{$/m, `  crd: {\n    storage: true,\n    // The API server converts between the versions through the webhook Service (src/webhooks/${file}-conversion.ts).\n    ${service}`);
    changed.push([paths.kind, hub]);
    for (const s of spokeKinds) created.push([s.path, spokeFile(hub, { kind, group, version, spoke: s.spoke, spokeKind: s.spokeKind, hubFile: file })]);
    created.push([conversionPath, conversionFile({ kind, group, version, spokes: spokeKinds })]);
    changed.push([paths.apisIndex, `${apisIndex.trimEnd()}\n${spokeKinds.map((s) => `export { ${s.spokeKind} } from './${file}-${s.spoke}.js';`).join('\n')}\n`]);
    const lower = `${kind.charAt(0).toLowerCase()}${kind.slice(1)}Conversion`;
    registrationImports += `import { ${kind} } from '../apis/index.js';\nimport { ${lower} } from './${file}-conversion.js';\n`;
    registration += `  manager.webhook(${kind}).withConversion(${lower}).complete();\n`;
  }
  const webhooksIndex = existsSync(join(cwd, paths.webhooksIndex)) ? await read(paths.webhooksIndex) : undefined;
  if (webhooksIndex !== undefined && !(webhooksIndex.includes(MARKERS.imports) && webhooksIndex.includes(MARKERS.webhooks))) {
    throw new CliError('InvalidInput', `${paths.webhooksIndex} has no ${MARKERS.imports} and ${MARKERS.webhooks} markers: register ${kind}Webhook by hand (manager.registerWebhook(${kind}Webhook))`);
  }
  let nextIndex = before(webhooksIndex ?? indexFile(), MARKERS.imports, registrationImports);
  nextIndex = before(nextIndex, MARKERS.webhooks, registration);
  (webhooksIndex === undefined ? created : changed).push([paths.webhooksIndex, nextIndex]);
  if (!main.includes("from './webhooks/index.js'")) {
    let nextMain = before(main, MARKERS.imports, "import { setupWebhooks } from './webhooks/index.js';\n");
    nextMain = before(nextMain, MARKERS.webhooks, 'if (values.webhooks) setupWebhooks(manager);\n');
    changed.push([paths.main, nextMain]);
  }
  if (!existsSync(join(cwd, paths.kustomization))) created.push([paths.kustomization, KUSTOMIZATION]);
  if (!existsSync(join(cwd, paths.service))) created.push([paths.service, serviceFile(name, namespace)]);
  if (!/^[ \t]*-[ \t]*\.\.\/webhook[ \t]*$/m.test(defaultKustomization)) {
    const manager = /^([ \t]*)-[ \t]*\.\.\/manager[ \t]*$/m.exec(defaultKustomization);
    if (!manager) throw new CliError('InvalidInput', `${paths.defaultKustomization} lists no ../manager resource to add ../webhook after: add "- ../webhook" to its resources by hand`);
    const end = manager.index + manager[0].length;
    changed.push([paths.defaultKustomization, `${defaultKustomization.slice(0, end)}\n${manager[1]}- ../webhook${defaultKustomization.slice(end)}`]);
  }
  if (settings['webhooks']?.['setup'] === undefined) {
    const scripts = { ...((manifest['scripts'] ?? {}) as Record<string, string>) };
    for (const [script, command] of [['generate', 'kubeloop generate webhooks'], ['generate:check', 'kubeloop generate webhooks --check']] as const) {
      if (typeof scripts[script] === 'string' && !scripts[script].includes('kubeloop generate webhooks')) scripts[script] = `${scripts[script]} && ${command}`;
    }
    const next = { ...manifest, scripts, kubeloop: { ...settings, webhooks: { setup: 'dist/webhooks/index.js#setupWebhooks', namespace, ...settings['webhooks'] } } };
    changed.push([paths.packageJson, `${JSON.stringify(next, null, 2)}\n`]);
  }
  if (options.dryRun !== true) {
    for (const [rel, text] of [...created, ...changed]) {
      await mkdir(dirname(join(cwd, rel)), { recursive: true });
      await writeFile(join(cwd, rel), text);
    }
  }
  return { created: created.map(([rel]) => rel), changed: changed.map(([rel]) => rel) };
}
