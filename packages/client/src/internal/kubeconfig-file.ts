/**
 * Kubeconfig files as kubectl reads them: YAML (or JSON) parsed with
 * js-yaml, checked field by field, relative paths resolved against the file
 * that holds them, several files merged with clientcmd's rules (the first
 * file to name a cluster, user or context wins it; the first non-empty
 * `current-context` wins). Every error names the file and the field.
 */
import { requireOwn } from './own-require.js';
import { dirname, isAbsolute, resolve } from 'node:path';
import type * as JsYaml from 'js-yaml';
import { ClientError } from '../errors.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { readFileSync } = process.getBuiltinModule('node:fs');

/** js-yaml, loaded the first time a file is parsed (an in-cluster process never needs it). */
let yaml: typeof JsYaml | undefined;
function parseYaml(text: string): unknown {
  yaml ??= requireOwn('js-yaml') as typeof JsYaml;
  return yaml.load(text);
}

/** `clusters[].cluster` of a kubeconfig, with paths absolute. */
export interface FileCluster {
  readonly server?: string;
  readonly certificateAuthority?: string;
  readonly certificateAuthorityData?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly tlsServerName?: string;
  readonly proxyUrl?: string;
}

/** `users[].user.exec` of a kubeconfig. */
export interface FileExec {
  readonly apiVersion?: string;
  readonly command?: string;
  readonly args?: readonly string[];
  readonly env?: readonly { readonly name: string; readonly value: string }[];
  readonly installHint?: string;
  readonly provideClusterInfo?: boolean;
  readonly interactiveMode?: string;
}

/** `users[].user` of a kubeconfig, with paths absolute. */
export interface FileUser {
  readonly clientCertificate?: string;
  readonly clientCertificateData?: string;
  readonly clientKey?: string;
  readonly clientKeyData?: string;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly username?: string;
  readonly password?: string;
  readonly as?: string;
  readonly asUid?: string;
  readonly asGroups?: readonly string[];
  readonly asUserExtra?: Readonly<Record<string, readonly string[]>>;
  readonly authProvider?: { readonly name: string; readonly config: Readonly<Record<string, string>> };
  readonly exec?: FileExec;
}

/** `contexts[].context` of a kubeconfig. */
export interface FileContext {
  readonly cluster?: string;
  readonly user?: string;
  readonly namespace?: string;
}

/** An entry and the file it came from (for messages and relative paths). */
export interface Named<T> {
  readonly value: T;
  readonly file: string;
}

/** One or more kubeconfig files, merged. */
export interface MergedKubeconfig {
  readonly files: readonly string[];
  readonly currentContext: string | undefined;
  readonly currentContextFile: string | undefined;
  readonly clusters: ReadonlyMap<string, Named<FileCluster>>;
  readonly users: ReadonlyMap<string, Named<FileUser>>;
  readonly contexts: ReadonlyMap<string, Named<FileContext>>;
}

type Obj = Record<string, unknown>;

class Reader {
  /** `resolvePaths` false: paths stay as written (text with no folder of its own, checked by a policy). */
  constructor(
    readonly file: string,
    readonly resolvePaths = true,
  ) {}

  fail(where: string, message: string, cause?: unknown): never {
    throw new ClientError('InvalidConfig', `kubeconfig ${this.file}: ${where}: ${message}`, cause === undefined ? {} : { cause });
  }

  obj(value: unknown, where: string): Obj | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) this.fail(where, `expected a mapping, got ${describe(value)}`);
    return value as Obj;
  }

  str(o: Obj, key: string, where: string): string | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    return this.fail(`${where}.${key}`, `expected a string, got ${describe(v)}`);
  }

  bool(o: Obj, key: string, where: string): boolean | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'boolean') return v;
    if (v === 'true' || v === 'false') return v === 'true';
    return this.fail(`${where}.${key}`, `expected true or false, got ${describe(v)}`);
  }

  strings(o: Obj, key: string, where: string): string[] | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) this.fail(`${where}.${key}`, `expected a list, got ${describe(v)}`);
    return v.map((item, i) => {
      if (typeof item === 'string') return item;
      if (typeof item === 'number' || typeof item === 'boolean') return String(item);
      return this.fail(`${where}.${key}[${i}]`, `expected a string, got ${describe(item)}`);
    });
  }

  /** A path field: relative paths are relative to the kubeconfig file. */
  path(o: Obj, key: string, where: string): string | undefined {
    const p = this.str(o, key, where);
    if (p === undefined || p === '') return undefined;
    return isAbsolute(p) || !this.resolvePaths ? p : resolve(dirname(this.file), p);
  }

  list(doc: Obj, key: string): { name: string; body: Obj | undefined; where: string }[] {
    const v = doc[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) this.fail(key, `expected a list, got ${describe(v)}`);
    return v.map((entry, i) => {
      const where = `${key}[${i}]`;
      const e = this.obj(entry, where) ?? this.fail(where, 'empty entry');
      const name = this.str(e, 'name', where);
      if (!name) this.fail(where, 'has no name');
      const inner = key.slice(0, -1); // clusters -> cluster
      return { name, body: this.obj(e[inner], `${where}.${inner}`), where: `${where} (${JSON.stringify(name)}).${inner}` };
    });
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${JSON.stringify(v)}`;
}

function cluster(r: Reader, o: Obj | undefined, where: string): FileCluster {
  if (!o) return {};
  const out: Record<string, unknown> = {
    server: r.str(o, 'server', where),
    certificateAuthority: r.path(o, 'certificate-authority', where),
    certificateAuthorityData: r.str(o, 'certificate-authority-data', where),
    insecureSkipTlsVerify: r.bool(o, 'insecure-skip-tls-verify', where),
    tlsServerName: r.str(o, 'tls-server-name', where),
    proxyUrl: r.str(o, 'proxy-url', where),
  };
  return strip(out);
}

function exec(r: Reader, o: Obj | undefined, where: string): FileExec | undefined {
  if (!o) return undefined;
  const envList = o['env'];
  let env: { name: string; value: string }[] | undefined;
  if (envList !== undefined && envList !== null) {
    if (!Array.isArray(envList)) r.fail(`${where}.env`, `expected a list, got ${describe(envList)}`);
    env = envList.map((e, i) => {
      const item = r.obj(e, `${where}.env[${i}]`) ?? r.fail(`${where}.env[${i}]`, 'empty entry');
      const name = r.str(item, 'name', `${where}.env[${i}]`);
      if (!name) r.fail(`${where}.env[${i}]`, 'has no name');
      return { name, value: r.str(item, 'value', `${where}.env[${i}]`) ?? '' };
    });
  }
  let command = r.str(o, 'command', where);
  // clientcmd resolves a command with a path separator against the kubeconfig's folder; a bare name is looked up on PATH.
  if (r.resolvePaths && command && command.includes('/') && !isAbsolute(command)) command = resolve(dirname(r.file), command);
  return strip({
    apiVersion: r.str(o, 'apiVersion', where),
    command,
    args: r.strings(o, 'args', where),
    env,
    installHint: r.str(o, 'installHint', where),
    provideClusterInfo: r.bool(o, 'provideClusterInfo', where),
    interactiveMode: r.str(o, 'interactiveMode', where),
  });
}

function user(r: Reader, o: Obj | undefined, where: string): FileUser {
  if (!o) return {};
  const ap = r.obj(o['auth-provider'], `${where}.auth-provider`);
  let authProvider: FileUser['authProvider'];
  if (ap) {
    const name = r.str(ap, 'name', `${where}.auth-provider`);
    if (!name) r.fail(`${where}.auth-provider`, 'has no name');
    const cfg = r.obj(ap['config'], `${where}.auth-provider.config`) ?? {};
    const config: Record<string, string> = {};
    for (const key of Object.keys(cfg)) config[key] = r.str(cfg, key, `${where}.auth-provider.config`) ?? '';
    authProvider = { name, config };
  }
  const extraObj = r.obj(o['as-user-extra'], `${where}.as-user-extra`);
  let asUserExtra: Record<string, string[]> | undefined;
  if (extraObj) {
    asUserExtra = {};
    for (const key of Object.keys(extraObj)) asUserExtra[key] = r.strings(extraObj, key, `${where}.as-user-extra`) ?? [];
  }
  return strip({
    clientCertificate: r.path(o, 'client-certificate', where),
    clientCertificateData: r.str(o, 'client-certificate-data', where),
    clientKey: r.path(o, 'client-key', where),
    clientKeyData: r.str(o, 'client-key-data', where),
    token: r.str(o, 'token', where),
    tokenFile: r.path(o, 'tokenFile', where),
    username: r.str(o, 'username', where),
    password: r.str(o, 'password', where),
    as: r.str(o, 'as', where),
    asUid: r.str(o, 'as-uid', where),
    asGroups: r.strings(o, 'as-groups', where),
    asUserExtra,
    authProvider,
    exec: exec(r, r.obj(o['exec'], `${where}.exec`), `${where}.exec`),
  });
}

function context(r: Reader, o: Obj | undefined, where: string): FileContext {
  if (!o) return {};
  return strip({ cluster: r.str(o, 'cluster', where), user: r.str(o, 'user', where), namespace: r.str(o, 'namespace', where) });
}

function strip(o: Record<string, unknown>): Record<string, unknown> {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** One parsed file. */
export interface ParsedFile {
  readonly file: string;
  readonly currentContext: string | undefined;
  readonly clusters: readonly [string, FileCluster][];
  readonly users: readonly [string, FileUser][];
  readonly contexts: readonly [string, FileContext][];
}

/** Parse the text of a kubeconfig; `file` is used for messages and to resolve relative paths (unless `resolvePaths` is false). */
export function parseKubeconfig(text: string, file: string, resolvePaths = true): ParsedFile {
  const r = new Reader(file, resolvePaths);
  let raw: unknown;
  if (text.trim() === '') raw = {};
  else {
    try {
      raw = parseYaml(text);
    } catch (cause) {
      const message = cause instanceof Error ? cause.message.split('\n')[0] : String(cause);
      throw new ClientError('InvalidConfig', `kubeconfig ${file} is not valid YAML: ${message}`, { cause });
    }
  }
  const doc = r.obj(raw, 'top level') ?? {};
  const kind = r.str(doc, 'kind', 'top level');
  if (kind !== undefined && kind !== 'Config') r.fail('kind', `expected Config, got ${JSON.stringify(kind)}`);
  return {
    file,
    currentContext: r.str(doc, 'current-context', 'top level') || undefined,
    clusters: r.list(doc, 'clusters').map(({ name, body, where }) => [name, cluster(r, body, where)]),
    users: r.list(doc, 'users').map(({ name, body, where }) => [name, user(r, body, where)]),
    contexts: r.list(doc, 'contexts').map(({ name, body, where }) => [name, context(r, body, where)]),
  };
}

/** Read and parse one kubeconfig file. */
export function readKubeconfig(file: string): ParsedFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable (permission denied)' : code === 'EISDIR' ? 'is a directory' : String(cause);
    throw new ClientError('InvalidConfig', `kubeconfig ${file} ${why}`, { cause });
  }
  return parseKubeconfig(text, file);
}

/** Merge parsed files, earlier files winning (clientcmd's rule for KUBECONFIG lists). */
export function mergeKubeconfigs(files: readonly ParsedFile[]): MergedKubeconfig {
  const clusters = new Map<string, Named<FileCluster>>();
  const users = new Map<string, Named<FileUser>>();
  const contexts = new Map<string, Named<FileContext>>();
  let currentContext: string | undefined;
  let currentContextFile: string | undefined;
  for (const f of files) {
    if (currentContext === undefined && f.currentContext) {
      currentContext = f.currentContext;
      currentContextFile = f.file;
    }
    for (const [name, value] of f.clusters) if (!clusters.has(name)) clusters.set(name, { value, file: f.file });
    for (const [name, value] of f.users) if (!users.has(name)) users.set(name, { value, file: f.file });
    for (const [name, value] of f.contexts) if (!contexts.has(name)) contexts.set(name, { value, file: f.file });
  }
  return { files: files.map((f) => f.file), currentContext, currentContextFile, clusters, users, contexts };
}
