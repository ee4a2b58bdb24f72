/**
 * The `kubeloop` command line: a table of commands (`generate crds`,
 * `generate types`, `generate rbac`, `generate webhooks`, `generate helm`, `create api`, `create webhook`, `deploy`, `dev`,
 * `shards`, `inspect`, `profile`), each with its flags,
 * parsed with node:util's parseArgs. A new command is one more entry in the
 * table.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { readConfig } from './config.js';
import type { KubeloopConfig } from './config.js';
import { CliError, isCliError } from './errors.js';
import type { ProfileKind } from './profile.js';
import { readFile } from 'node:fs/promises';

/** Where a command writes: lines for the user (stdout) and diagnostics (stderr). */
export interface CliIO {
  /** Normal output. Default: process.stdout. */
  readonly out: (text: string) => void;
  /** Diagnostics and errors. Default: process.stderr. */
  readonly err: (text: string) => void;
}

/** What a command gets besides its parsed flags. */
export interface CommandContext extends CliIO {
  /** The project directory (`--cwd`, default the process's). */
  readonly cwd: string;
  /** The project's `"kubeloop"` settings from its package.json. */
  readonly config: KubeloopConfig;
}

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | string[] | boolean[] | undefined>;

/** One subcommand. */
export interface Command {
  /** The words that name it: `['generate', 'crds']`. */
  readonly path: readonly string[];
  /** One line for the command list. */
  readonly summary: string;
  /** Its flags, for the help text: `--module <path>  ...`. */
  readonly help: string;
  /** Its flags for parseArgs. */
  readonly options: Options;
  /** What follows `--` reaches `run` as positionals (flags for another program). Default: false (a `--` is dropped). */
  readonly passThrough?: boolean;
  /** Runs it; resolves to the exit code. Throws {@link CliError} for expected failures. */
  run(values: Values, positionals: readonly string[], context: CommandContext): Promise<number>;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : []);

const generateCrdsCommand: Command = {
  path: ['generate', 'crds'],
  summary: 'write the CRDs of the schema-first kinds a project exports (--check: fail with a diff when the files are stale)',
  help: [
    '  --module <path>   a built module exporting kinds (repeatable); default: package.json "kubeloop".crds.modules',
    '  --out <dir>       where CRD files go; default: "kubeloop".crds.outDir, else crd',
    '  --check           write nothing; exit 1 and print a diff when the files differ from what would be generated',
  ].join('\n'),
  options: { module: { type: 'string', multiple: true }, out: { type: 'string' }, check: { type: 'boolean', default: false } },
  async run(values, _positionals, ctx) {
    const modules = strings(values['module']).length > 0 ? strings(values['module']) : [...(ctx.config.crds?.modules ?? [])];
    const outDir = typeof values['out'] === 'string' ? values['out'] : (ctx.config.crds?.outDir ?? 'crd');
    const check = values['check'] === true;
    const { generateCrds } = await import('./generate-crds.js');
    const result = await generateCrds({ modules, outDir, check, cwd: ctx.cwd });
    const names = result.crds.map((c) => c.metadata.name).join(', ');
    const foreign = [...new Set(result.foreign.map((k) => `${k.kind}.${k.group}`))];
    if (foreign.length > 0) ctx.err(`kubeloop: no CRD for ${foreign.join(', ')}: marked crd.foreign (another project's; vendor its CRD for tests)`);
    if (check) {
      if (result.changed.length > 0 || result.orphaned.length > 0) {
        ctx.out(result.diff);
        throw new CliError('Stale', `CRDs in ${outDir} are stale (${[...result.changed, ...result.orphaned].length} file(s)); run: kubeloop generate crds`);
      }
      ctx.err(`kubeloop: ${result.crds.length} CRD(s) up to date in ${outDir} (${names})`);
      return 0;
    }
    ctx.err(`kubeloop: ${result.changed.length} written, ${result.unchanged.length} unchanged in ${outDir} (${names})`);
    for (const o of result.orphaned) ctx.err(`kubeloop: ${o} was generated earlier but nothing generates it now; delete it if it is obsolete`);
    return 0;
  },
};

const generateTypesCommand: Command = {
  path: ['generate', 'types'],
  summary: 'write typed kinds (interfaces + descriptors) from CRD manifests, the CRDs installed in a cluster, or an OpenAPI v3 document',
  help: [
    '  <file|dir>...         CRD manifests (YAML or JSON, several documents per file) or OpenAPI v3 documents (JSON)',
    '  --cluster             read the CRDs installed in the cluster instead (KUBECONFIG, or --kubeconfig)',
    '  --kubeconfig <path>   the kubeconfig for --cluster',
    '  --group <group>       only CRDs of this API group (repeatable)',
    '  --out <dir>           where the .ts files go (required)',
    '  --check               write nothing; exit 1 with a diff when the files differ',
  ].join('\n'),
  options: {
    cluster: { type: 'boolean', default: false },
    kubeconfig: { type: 'string' },
    group: { type: 'string', multiple: true },
    out: { type: 'string' },
    check: { type: 'boolean', default: false },
  },
  async run(values, positionals, ctx) {
    if (typeof values['out'] !== 'string') throw new CliError('Usage', 'generate types needs --out <dir>');
    const fromCluster = values['cluster'] === true;
    if (!fromCluster && positionals.length === 0) throw new CliError('Usage', 'generate types needs CRD or OpenAPI files (or --cluster)');
    const { generateTypes } = await import('./generate-types.js');
    const result = await generateTypes({
      inputs: positionals,
      ...(fromCluster ? { cluster: { ...(typeof values['kubeconfig'] === 'string' ? { kubeconfigPath: values['kubeconfig'] } : {}) } } : {}),
      groups: strings(values['group']),
      outDir: values['out'],
      check: values['check'] === true,
      cwd: ctx.cwd,
    });
    if (values['check'] === true && (result.changed.length > 0 || result.orphaned.length > 0)) {
      ctx.out(result.diff);
      throw new CliError('Stale', `types in ${values['out']} are stale; run: kubeloop generate types`);
    }
    ctx.err(`kubeloop: ${result.kinds.length} kind(s); ${result.changed.length} file(s) ${values['check'] === true ? 'differ' : 'written'}, ${result.unchanged.length} unchanged in ${values['out']}`);
    return 0;
  },
};

const generateRbacCommand: Command = {
  path: ['generate', 'rbac'],
  summary: 'write the ClusterRole (and namespaced Roles) the manager needs, from what its controllers watch and declare, and with fleets the member clusters\' role in member-role.yaml beside it (--check: fail with a diff when a file is stale)',
  help: [
    '  --setup <module#export>        the built module and function that registers the controllers on a manager; default: "kubeloop".rbac.setup',
    '  --name <name>                  the roles\' name; default: "kubeloop".rbac.name, else <package>-manager',
    '  --out <file>                   default: "kubeloop".rbac.outFile, else config/rbac/role.yaml',
    '  --leader-election-namespace <ns>  the manager runs with leader election, its Lease in <ns>; default: "kubeloop".rbac.leaderElectionNamespace',
    '  --shard-ring-namespace <ns>    the manager runs sharded (ringLeadership), its member Leases in <ns>; default: "kubeloop".rbac.shardRingNamespace',
    '  --secure-metrics               the manager serves secure metrics (TokenReview, SubjectAccessReview); default: "kubeloop".rbac.secureMetrics',
    '  --namespace <ns>               a namespace the manager is restricted to (repeatable): Roles there, not a ClusterRole',
    '  --namespace-selector <sel>     the cache follows the namespaces this label selector chooses (list, watch namespaces); default: "kubeloop".rbac.namespaceSelector',
    '  --check                        write nothing; exit 1 and print a diff when the file differs',
  ].join('\n'),
  options: {
    setup: { type: 'string' },
    name: { type: 'string' },
    out: { type: 'string' },
    'leader-election-namespace': { type: 'string' },
    'shard-ring-namespace': { type: 'string' },
    'secure-metrics': { type: 'boolean' },
    namespace: { type: 'string', multiple: true },
    'namespace-selector': { type: 'string' },
    check: { type: 'boolean', default: false },
  },
  async run(values, _positionals, ctx) {
    const config = ctx.config.rbac ?? {};
    const setup = typeof values['setup'] === 'string' ? values['setup'] : config.setup;
    if (!setup) throw new CliError('Usage', 'generate rbac needs --setup dist/controllers/index.js#setupControllers, or "kubeloop": { "rbac": { "setup": ... } } in package.json');
    const name = typeof values['name'] === 'string' ? values['name'] : (config.name ?? (ctx.config.packageName ? `${ctx.config.packageName.replace(/^@[^/]+\//, '')}-manager` : undefined));
    if (!name) throw new CliError('Usage', 'generate rbac needs --name <role name> (or a package.json name)');
    const outFile = typeof values['out'] === 'string' ? values['out'] : (config.outFile ?? 'config/rbac/role.yaml');
    const leaderElectionNamespace = typeof values['leader-election-namespace'] === 'string' ? values['leader-election-namespace'] : config.leaderElectionNamespace;
    const shardRingNamespace = typeof values['shard-ring-namespace'] === 'string' ? values['shard-ring-namespace'] : config.shardRingNamespace;
    const namespaces = strings(values['namespace']).length > 0 ? strings(values['namespace']) : [...(config.namespaces ?? [])];
    const namespaceSelector = typeof values['namespace-selector'] === 'string' ? values['namespace-selector'] : config.namespaceSelector;
    const check = values['check'] === true;
    const { generateRbac, MEMBER_ROLE_FILE } = await import('./generate-rbac.js');
    const result = await generateRbac({
      setup,
      name,
      outFile,
      kindModules: ctx.config.crds?.modules ?? [],
      ...(leaderElectionNamespace !== undefined ? { leaderElectionNamespace } : {}),
      ...(shardRingNamespace !== undefined ? { shardRingNamespace } : {}),
      secureMetrics: typeof values['secure-metrics'] === 'boolean' ? values['secure-metrics'] : (config.secureMetrics ?? false),
      namespaces,
      ...(namespaceSelector !== undefined ? { namespaceSelector } : {}),
      check,
      cwd: ctx.cwd,
    });
    const describe = (roles: typeof result.roles): string => roles.map((r) => `${r.kind} ${r.metadata.namespace ? `${r.metadata.namespace}/` : ''}${r.metadata.name} (${r.rules.length} rules)`).join(', ');
    const summary = `${describe(result.roles)}${result.memberRoles.length > 0 ? `; member clusters (${MEMBER_ROLE_FILE} beside it): ${describe(result.memberRoles)}` : ''}`;
    return reportGenerated(ctx, 'rbac', outFile, check, result, summary);
  },
};

/** Usage error unless every one of `flags` was given a value. */
function requireFlags(values: Values, flags: readonly string[], command: string): void {
  for (const flag of flags) if (typeof values[flag] !== 'string') throw new CliError('Usage', `${command} needs --${flag}`);
}

/** List a scaffolding command's files, as written or (dry run) as they would be. */
function listWritten(ctx: CommandContext, result: { created: readonly string[]; changed: readonly string[] }, dryRun: boolean): void {
  for (const f of result.created) ctx.out(`${dryRun ? 'would create' : 'created'} ${f}`);
  for (const f of result.changed) ctx.out(`${dryRun ? 'would change' : 'changed'} ${f}`);
}

/**
 * The end of `generate rbac|webhooks`: with --check, a stale file prints its
 * diff and fails; otherwise say what was written.
 */
function reportGenerated(ctx: CommandContext, command: string, outFile: string, check: boolean, result: { changed: readonly unknown[]; diff: string }, summary: string): number {
  if (check) {
    if (result.changed.length > 0) {
      ctx.out(result.diff);
      throw new CliError('Stale', `${outFile} is stale; run: kubeloop generate ${command}`);
    }
    ctx.err(`kubeloop: ${outFile} up to date: ${summary}`);
    return 0;
  }
  ctx.err(`kubeloop: ${result.changed.length > 0 ? 'wrote' : 'unchanged'} ${outFile}: ${summary}`);
  return 0;
}

const generateWebhooksCommand: Command = {
  path: ['generate', 'webhooks'],
  summary: 'write config/webhook/manifests.yaml (webhook configurations and the certificate roles) from the webhooks the project registers (--check: fail with a diff when the file is stale)',
  help: [
    '  --setup <module#export>   the built module and function that registers the webhooks on a manager; default: "kubeloop".webhooks.setup',
    '  --name <name>             names the configurations, Service and Secret (<name>-webhook-service...); default: "kubeloop".webhooks.name, else the package name',
    '  --namespace <ns>          the operator\'s namespace (the Service\'s); default: "kubeloop".webhooks.namespace',
    '  --certificates <who>      managed (the operator makes them: roles included) or provided (cert-manager, a mounted Secret); default: "kubeloop".webhooks.certificates, else managed',
    '  --out <file>              default: "kubeloop".webhooks.outFile, else config/webhook/manifests.yaml',
    '  --check                   write nothing; exit 1 and print a diff when the file differs',
  ].join('\n'),
  options: { setup: { type: 'string' }, name: { type: 'string' }, namespace: { type: 'string' }, certificates: { type: 'string' }, out: { type: 'string' }, check: { type: 'boolean', default: false } },
  async run(values, _positionals, ctx) {
    const config = ctx.config.webhooks ?? {};
    const setup = typeof values['setup'] === 'string' ? values['setup'] : config.setup;
    if (!setup) throw new CliError('Usage', 'generate webhooks needs --setup dist/webhooks/index.js#setupWebhooks, or "kubeloop": { "webhooks": { "setup": ... } } in package.json (kubeloop create webhook sets it)');
    const name = typeof values['name'] === 'string' ? values['name'] : (config.name ?? ctx.config.packageName?.replace(/^@[^/]+\//, ''));
    if (!name) throw new CliError('Usage', 'generate webhooks needs --name <name> (or a package.json name)');
    const namespace = typeof values['namespace'] === 'string' ? values['namespace'] : config.namespace;
    if (!namespace) throw new CliError('Usage', `generate webhooks needs --namespace <the operator's namespace>, or "kubeloop": { "webhooks": { "namespace": ... } } in package.json`);
    const certificates = typeof values['certificates'] === 'string' ? values['certificates'] : (config.certificates ?? 'managed');
    if (certificates !== 'managed' && certificates !== 'provided') throw new CliError('Usage', `--certificates must be managed or provided, not ${JSON.stringify(certificates)}`);
    const outFile = typeof values['out'] === 'string' ? values['out'] : (config.outFile ?? 'config/webhook/manifests.yaml');
    const check = values['check'] === true;
    const { generateWebhooks } = await import('./generate-webhooks.js');
    const result = await generateWebhooks({ setup, name, namespace, certificates, outFile, kindModules: ctx.config.crds?.modules ?? [], ...(ctx.config.rbac?.name ? { serviceAccount: ctx.config.rbac.name } : {}), check, cwd: ctx.cwd });
    const summary = `${result.webhooks.length} webhook(s)${result.webhooks.length > 0 ? ` (${result.webhooks.map((w) => `${w.type} ${w.kind.kind}`).join(', ')})` : ''}`;
    return reportGenerated(ctx, 'webhooks', outFile, check, result, summary);
  },
};

const generateHelmCommand: Command = {
  path: ['generate', 'helm'],
  summary: 'write a Helm chart (dist/chart) from what deploy applies (config/default built by kubectl kustomize): CRDs, RBAC, webhooks, the Deployment with values for image, replicas, resources, leader election and sharding, cert-manager, ServiceMonitor and network policies behind values (--check: fail with a diff when the chart is stale)',
  help: [
    '  --out <dir>           the chart directory; default: dist/chart',
    '  --dir <dir>           the kustomize directory it is made from; default: config/default',
    '  --check               write nothing; exit 1 and print a diff when the chart differs',
  ].join('\n'),
  options: { out: { type: 'string' }, dir: { type: 'string' }, check: { type: 'boolean', default: false } },
  async run(values, _positionals, ctx) {
    const outDir = typeof values['out'] === 'string' ? values['out'] : 'dist/chart';
    const check = values['check'] === true;
    const { generateHelm } = await import('./generate-helm.js');
    const result = await generateHelm({ cwd: ctx.cwd, outDir, check, ...(typeof values['dir'] === 'string' ? { dir: values['dir'] } : {}) });
    if (check && (result.changed.length > 0 || result.orphaned.length > 0)) {
      ctx.out(result.diff);
      throw new CliError('Stale', `the chart in ${outDir} is stale (${result.changed.length + result.orphaned.length} file(s)); run: kubeloop generate helm`);
    }
    ctx.err(`kubeloop: chart ${result.chart} in ${outDir}: ${result.templates.length} template(s); ${result.changed.length} file(s) ${check ? 'differ' : 'written'}, ${result.unchanged.length} unchanged`);
    for (const o of result.orphaned) ctx.err(`kubeloop: ${o} was generated earlier but nothing generates it now; delete it if it is obsolete`);
    return 0;
  },
};

const createWebhookCommand: Command = {
  path: ['create', 'webhook'],
  summary: 'add a validating, defaulting and/or conversion webhook for a kind of the project: its class (or the spoke kinds and conversion), its registration (src/webhooks/index.ts), the webhook manifests\' kustomization and the "kubeloop".webhooks settings',
  help: [
    '  --group <group>               the kind\'s API group (required)',
    '  --version <version>           the kind\'s version (required)',
    '  --kind <Kind>                 the kind, exported from src/apis (required)',
    '  --defaulting                  a defaulter (a mutating webhook)',
    '  --programmatic-validation     a validator (a validating webhook)',
    '  --conversion                  a conversion webhook: --version is the hub (stored), each --spoke another version',
    '  --spoke <version>             a spoke version of the conversion (repeatable; required with --conversion)',
    '  --dry-run                     write nothing; list what would be written',
  ].join('\n'),
  options: {
    group: { type: 'string' },
    version: { type: 'string' },
    kind: { type: 'string' },
    defaulting: { type: 'boolean', default: false },
    'programmatic-validation': { type: 'boolean', default: false },
    conversion: { type: 'boolean', default: false },
    spoke: { type: 'string', multiple: true },
    'dry-run': { type: 'boolean', default: false },
  },
  async run(values, _positionals, ctx) {
    requireFlags(values, ['group', 'version', 'kind'], 'create webhook');
    const dryRun = values['dry-run'] === true;
    const { createWebhook } = await import('./create-webhook.js');
    const result = await createWebhook({
      group: values['group'] as string,
      version: values['version'] as string,
      kind: values['kind'] as string,
      defaulting: values['defaulting'] === true,
      validation: values['programmatic-validation'] === true,
      conversion: values['conversion'] === true,
      spokes: (values['spoke'] as string[] | undefined) ?? [],
      cwd: ctx.cwd,
      dryRun,
    });
    listWritten(ctx, result, dryRun);
    if (!dryRun && values['conversion'] === true) ctx.err('kubeloop: next, change the spoke schema(s) and the conversion functions together, run `pnpm generate` (both versions in one CRD that converts through the webhook Service), then `pnpm test`');
    if (!dryRun && (values['defaulting'] === true || values['programmatic-validation'] === true)) ctx.err('kubeloop: next, fill in the webhook class, run `pnpm generate` (build, write the CRDs, the role and config/webhook/manifests.yaml), then `pnpm test`');
    return 0;
  },
};

const createApiCommand: Command = {
  path: ['create', 'api'],
  summary: 'add a kind to a project made by pnpm create kubeloop: its schema, a controller, a sample, a unit test, its registration (src/main.ts, src/controllers/index.ts)',
  help: [
    '  --group <group>       the API group, e.g. demo.example.com (required)',
    '  --version <version>   the version, e.g. v1 (required)',
    '  --kind <Kind>         the kind, UpperCamelCase, e.g. Blog (required)',
    '  --plural <plural>     the resource name; default: the kind lower-cased, pluralized',
    '  --cluster-scoped      a cluster-scoped kind (default: namespaced)',
    '  --dry-run             write nothing; list what would be written',
  ].join('\n'),
  options: {
    group: { type: 'string' },
    version: { type: 'string' },
    kind: { type: 'string' },
    plural: { type: 'string' },
    'cluster-scoped': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
  },
  async run(values, _positionals, ctx) {
    requireFlags(values, ['group', 'version', 'kind'], 'create api');
    const dryRun = values['dry-run'] === true;
    const { createApi } = await import('./create-api.js');
    const result = await createApi({
      group: values['group'] as string,
      version: values['version'] as string,
      kind: values['kind'] as string,
      ...(typeof values['plural'] === 'string' ? { plural: values['plural'] } : {}),
      clusterScoped: values['cluster-scoped'] === true,
      cwd: ctx.cwd,
      dryRun,
    });
    listWritten(ctx, result, dryRun);
    if (!dryRun) ctx.err('kubeloop: next, run `pnpm generate` (build, write the CRD and the RBAC role), then `pnpm test`');
    return 0;
  },
};

const deployCommand: Command = {
  path: ['deploy'],
  summary: 'apply config/default (built by kubectl kustomize; kubectl apply --server-side, Namespaces first) with the operator image set at deploy time (kustomize images:, the project\'s files unchanged)',
  help: [
    '  --image <ref>         the image to run, registry/name:tag or name@sha256:...; default: $IMG, else the manifests\' own',
    '  --image-name <name>   the image name in the manifests that --image replaces; default: the package name',
    '  --dir <dir>           the kustomize directory; default: config/default',
    '  --dry-run <mode>      server or client: kubectl\'s dry run, nothing changed (server: the objects of a namespace not created yet are checked in default)',
    '  --kubeconfig <path>   passed to kubectl; default: kubectl\'s (KUBECONFIG, ~/.kube/config)',
  ].join('\n'),
  options: { image: { type: 'string' }, 'image-name': { type: 'string' }, dir: { type: 'string' }, 'dry-run': { type: 'string' }, kubeconfig: { type: 'string' } },
  async run(values, _positionals, ctx) {
    const dryRun = values['dry-run'];
    if (dryRun !== undefined && dryRun !== 'server' && dryRun !== 'client') throw new CliError('Usage', `--dry-run must be server or client, not ${JSON.stringify(dryRun)}`);
    const image = typeof values['image'] === 'string' ? values['image'] : process.env['IMG'] || undefined;
    const imageName = typeof values['image-name'] === 'string' ? values['image-name'] : ctx.config.packageName?.replace(/^@[^/]+\//, '');
    const { deploy } = await import('./deploy.js');
    const code = await deploy({
      cwd: ctx.cwd,
      ...(image !== undefined ? { image } : {}),
      ...(imageName !== undefined ? { imageName } : {}),
      ...(typeof values['dir'] === 'string' ? { dir: values['dir'] } : {}),
      ...(dryRun !== undefined ? { dryRun } : {}),
      ...(typeof values['kubeconfig'] === 'string' ? { kubeconfig: values['kubeconfig'] } : {}),
      output: ctx.out,
    });
    if (code !== 0) throw new CliError('CommandFailed', `kubectl apply exited ${code}`);
    return 0;
  },
};

const devCommand: Command = {
  path: ['dev'],
  summary: 'the inner loop: a cluster (yours, or a local control plane when none is configured), the CRDs installed (again whenever pnpm generate rewrites them), tsc --watch, the operator restarted after every clean build, and its webhooks served from this machine when the API server can call it',
  help: [
    '  --envtest             start a local control plane even when a cluster is configured',
    '  --kubeconfig <path>   the cluster; default: KUBECONFIG, else ~/.kube/config',
    '  --crds <dir>          CRDs installed before each start; default: config/crd',
    '  --main <file>         the built entry point; default: dist/main.js',
    '  -- <flags>            flags for the operator (after --kubeconfig), e.g. -- --leader-elect; -- --no-webhooks: no webhooks served nor installed',
  ].join('\n'),
  options: { envtest: { type: 'boolean', default: false }, kubeconfig: { type: 'string' }, crds: { type: 'string' }, main: { type: 'string' } },
  passThrough: true,
  async run(values, positionals, ctx) {
    const { dev } = await import('./dev.js');
    await dev({
      cwd: ctx.cwd,
      envtest: values['envtest'] === true,
      ...(typeof values['kubeconfig'] === 'string' ? { kubeconfig: values['kubeconfig'] } : {}),
      ...(typeof values['crds'] === 'string' ? { crdDir: values['crds'] } : {}),
      ...(typeof values['main'] === 'string' ? { main: values['main'] } : {}),
      args: positionals,
      log: (line) => ctx.err(`kubeloop dev: ${line}`),
    });
    return 0;
  },
};

const shardsCommand: Command = {
  path: ['shards'],
  summary: 'show a shard ring: its members, whether each is live, the buckets and hash ranges each holds, and buckets nobody holds',
  help: [
    '  --ring <name>         the ring (its Leases are labelled kubeloop.dev/shard-ring=<name>); required',
    '  -n, --namespace <ns>  where its Leases are; default: the kubeconfig context\'s namespace, else default',
    '  --kubeconfig <path>   the cluster; default: KUBECONFIG, else ~/.kube/config',
    '  --json                print the view as JSON',
  ].join('\n'),
  options: { ring: { type: 'string' }, namespace: { type: 'string', short: 'n' }, kubeconfig: { type: 'string' }, json: { type: 'boolean', default: false } },
  async run(values, _positionals, ctx) {
    if (typeof values['ring'] !== 'string') throw new CliError('Usage', 'shards needs --ring <name> (the shard ring\'s name, as given to createShardRing)');
    const { describeShards, renderShards } = await import('./shards.js');
    const view = await describeShards({
      ring: values['ring'],
      ...(typeof values['namespace'] === 'string' ? { namespace: values['namespace'] } : {}),
      ...(typeof values['kubeconfig'] === 'string' ? { kubeconfigPath: values['kubeconfig'] } : {}),
    });
    ctx.out(values['json'] === true ? `${JSON.stringify(view, (_k, v: unknown) => (v === Infinity ? null : v), 2)}\n` : renderShards(view));
    return 0;
  },
};

const inspectCommand: Command = {
  path: ['inspect'],
  summary: 'look into a running manager (its metrics server\'s /inspect): `kubeloop inspect <url> [controller] [namespace/name]` prints its controllers\' queues, one controller\'s keys in flight, in backoff and self-triggering, or one key\'s triggers and last reconciles',
  help: [
    '  --token <token>             a bearer token allowed get (and post, to pause) on /inspect and /inspect/*',
    '  --token-file <path>         read the bearer token from a file',
    '  --certificate-authority <path>  the PEM CA of the server\'s certificate; default: the system\'s',
    '  --insecure-skip-tls-verify  do not check the server\'s certificate',
    '  --pause, --resume           pause or resume the controller named (needs secure metrics\' authorization)',
    '  --json                      print the answer as JSON',
  ].join('\n'),
  options: {
    token: { type: 'string' },
    'token-file': { type: 'string' },
    'certificate-authority': { type: 'string' },
    'insecure-skip-tls-verify': { type: 'boolean', default: false },
    pause: { type: 'boolean', default: false },
    resume: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
  async run(values, positionals, ctx) {
    const [url, controller, key, ...extra] = positionals;
    if (url === undefined || extra.length > 0) throw new CliError('Usage', 'inspect needs the metrics server\'s URL, then optionally a controller and a key: kubeloop inspect <url> [controller] [namespace/name]');
    if (values['pause'] === true && values['resume'] === true) throw new CliError('Usage', 'inspect: --pause or --resume, not both');
    const action = values['pause'] === true ? 'pause' : values['resume'] === true ? 'resume' : undefined;
    const { fetchInspection, renderInspection } = await import('./inspect.js');
    const inspection = await fetchInspection({
      url,
      ...(controller === undefined ? {} : { controller }),
      ...(key === undefined ? {} : { key }),
      ...(action === undefined ? {} : { action }),
      ...(typeof values['token'] === 'string' ? { token: values['token'] } : {}),
      ...(typeof values['token-file'] === 'string' ? { tokenFile: values['token-file'] } : {}),
      ...(typeof values['certificate-authority'] === 'string' ? { caFile: values['certificate-authority'] } : {}),
      insecureSkipTlsVerify: values['insecure-skip-tls-verify'] === true,
    });
    ctx.out(values['json'] === true ? `${JSON.stringify(inspection.data, null, 2)}\n` : renderInspection(inspection));
    return 0;
  },
};

/** Every command `kubeloop` knows, in help order. */
const profileCommand: Command = {
  path: ['profile'],
  summary: 'fetch a CPU profile, a heap snapshot or a sampling heap profile from a running manager\'s metrics server (ManagerOptions.profiling)',
  help: [
    '  <url>                        the metrics server, such as https://127.0.0.1:8443',
    '  --cpu <duration>             a CPU profile of that long (30s, 2m): a .cpuprofile for Chrome DevTools or speedscope',
    '  --heap                       a heap snapshot (.heapsnapshot); the manager pauses while V8 writes it',
    '  --heap-sampling <duration>   a sampling heap profile of that long (.heapprofile)',
    '  -o, --out <file>             where it goes; default: kubeloop-<time> with the kind\'s suffix',
    '  --token <token>              a bearer token allowed to get /debug/profile/* (nonResourceURLs)',
    '  --token-file <path>          the token, read from a file',
    '  --certificate-authority <p>  PEM of the CA that signed the server\'s certificate',
    '  --insecure-skip-tls-verify   do not verify the server\'s certificate (a self-signed one)',
  ].join('\n'),
  options: {
    cpu: { type: 'string' },
    heap: { type: 'boolean', default: false },
    'heap-sampling': { type: 'string' },
    out: { type: 'string', short: 'o' },
    token: { type: 'string' },
    'token-file': { type: 'string' },
    'certificate-authority': { type: 'string' },
    'insecure-skip-tls-verify': { type: 'boolean', default: false },
  },
  async run(values, positionals, ctx) {
    const [url, ...extra] = positionals;
    if (url === undefined || extra.length > 0) throw new CliError('Usage', 'profile takes one URL, the metrics server\'s: kubeloop profile https://127.0.0.1:8443 --cpu 30s -o x.cpuprofile');
    const chosen = [typeof values['cpu'] === 'string', values['heap'] === true, typeof values['heap-sampling'] === 'string'].filter(Boolean).length;
    if (chosen !== 1) throw new CliError('Usage', 'profile needs exactly one of --cpu <duration>, --heap, --heap-sampling <duration>');
    const { fetchProfile, parseSeconds, PROFILE_SUFFIX, tokenFrom } = await import('./profile.js');
    const kind: ProfileKind = typeof values['cpu'] === 'string' ? 'cpu' : values['heap'] === true ? 'heap' : 'heap-sampling';
    const seconds = kind === 'cpu' ? parseSeconds(values['cpu'] as string, '--cpu') : kind === 'heap-sampling' ? parseSeconds(values['heap-sampling'] as string, '--heap-sampling') : undefined;
    const out = resolve(ctx.cwd, typeof values['out'] === 'string' ? values['out'] : `kubeloop-${new Date().toISOString().replace(/[:.]/g, '-')}${PROFILE_SUFFIX[kind]}`);
    const token = await tokenFrom(typeof values['token'] === 'string' ? values['token'] : undefined, typeof values['token-file'] === 'string' ? resolve(ctx.cwd, values['token-file']) : undefined);
    const caFile = typeof values['certificate-authority'] === 'string' ? resolve(ctx.cwd, values['certificate-authority']) : undefined;
    const caPem = caFile === undefined ? undefined : await readFile(caFile, 'utf8').catch((cause: unknown) => {
      throw new CliError('InvalidInput', `cannot read --certificate-authority ${caFile}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    });
    if (seconds !== undefined) ctx.err(`kubeloop: taking a ${kind === 'cpu' ? 'CPU' : 'sampling heap'} profile for ${seconds} s`);
    const bytes = await fetchProfile({
      url, kind, out,
      ...(seconds !== undefined ? { seconds } : {}),
      ...(token !== undefined ? { token } : {}),
      ...(caPem !== undefined ? { caPem } : {}),
      insecureSkipTlsVerify: values['insecure-skip-tls-verify'] === true,
    });
    ctx.out(`wrote ${out} (${bytes} bytes)\n`);
    return 0;
  },
};

/** Every command `kubeloop` knows, in help order. */
export const COMMANDS: readonly Command[] = [generateCrdsCommand, generateTypesCommand, generateRbacCommand, generateWebhooksCommand, generateHelmCommand, createApiCommand, createWebhookCommand, deployCommand, devCommand, shardsCommand, inspectCommand, profileCommand];

function usage(): string {
  const lines = ['usage: kubeloop <command> [flags]', '', 'commands:'];
  for (const c of COMMANDS) lines.push(`  kubeloop ${c.path.join(' ')}\n      ${c.summary}\n${c.help.replace(/^/gm, '    ')}`);
  lines.push('', 'common flags:', '  --cwd <dir>   the project directory (default: the current one)', '  --help        this text', '  --version     the version of @kubeloop/cli (also: kubeloop version)');
  return lines.join('\n');
}

const defaultIO: CliIO = {
  out: (text) => process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
};

/**
 * Runs `kubeloop` with the given arguments and resolves to the exit code:
 * 0 on success, 1 when a command fails (a stale `--check`, a schema the API
 * server would refuse, ...), 2 for a usage error. Messages go to `io`.
 *
 * @example
 * ```ts
 * import { runCli } from '@kubeloop/cli';
 *
 * process.exitCode = await runCli(['generate', 'crds', '--check', '--cwd', 'examples/harddisk-operator']);
 * ```
 */
export async function runCli(args: readonly string[], io: CliIO = defaultIO): Promise<number> {
  const end = args.indexOf('--');
  const words = (end >= 0 ? args.slice(0, end) : args).filter((a) => !a.startsWith('-'));
  const command = COMMANDS.find((c) => c.path.every((p, i) => words[i] === p));
  // `pnpm run deploy -- --image X` hands the `--` on: it ends nothing, except for a
  // command that passes what follows it on (`kubeloop dev -- --leader-elect`).
  const argv = command?.passThrough ? args : args.filter((a) => a !== '--');
  if (!command && (argv.includes('--version') || argv[0] === 'version')) {
    const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    io.out(`kubeloop ${manifest.version}\n`);
    return 0;
  }
  if (argv.includes('--help') || argv.includes('-h') || argv.length === 0) {
    io.out(usage());
    return argv.length === 0 ? 2 : 0;
  }
  try {
    if (!command) throw new CliError('Usage', `unknown command "${words.join(' ')}"\n\n${usage()}`);
    let parsed;
    try {
      parsed = parseArgs({ args: [...argv], options: { ...command.options, cwd: { type: 'string' } }, allowPositionals: true, strict: true });
    } catch (cause) {
      throw new CliError('Usage', `${cause instanceof Error ? cause.message : String(cause)}\n\n${usage()}`, { cause });
    }
    const positionals = parsed.positionals.slice(command.path.length);
    const cwd = resolve(typeof parsed.values['cwd'] === 'string' ? parsed.values['cwd'] : process.cwd());
    const config = await readConfig(cwd);
    return await command.run(parsed.values, positionals, { ...io, cwd, config });
  } catch (err) {
    if (isCliError(err)) {
      io.err(`kubeloop: ${err.message}`);
      return err.exitCode;
    }
    io.err(`kubeloop: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}
