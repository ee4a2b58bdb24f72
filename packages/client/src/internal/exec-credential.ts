/**
 * Exec credential plugins (client.authentication.k8s.io): run the kubeconfig's
 * command with KUBERNETES_EXEC_INFO, read the ExecCredential it prints, and
 * keep it until its `expirationTimestamp` (for ever when it has none, until
 * the server answers 401). One run at a time: concurrent requests share it.
 */
import type { ExecConfig } from '../kubeconfig.js';
import { ClientError } from '../errors.js';

/** What a plugin handed back. */
export interface ExecResult {
  readonly token?: string;
  readonly cert?: string;
  readonly key?: string;
  /** ms since the epoch; undefined: no expiry. */
  readonly expiresAt?: number;
}

/** Cluster details a plugin may ask for (`provideClusterInfo`). */
export interface ExecClusterInfo {
  readonly server: string;
  readonly caData?: string;
  readonly insecureSkipTLSVerify?: boolean;
  readonly serverName?: string;
  readonly proxyUrl?: string;
}

const API_VERSIONS = new Set(['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1']);
/** A plugin that runs longer than this is killed: kubeloop never has a terminal, so a plugin waiting for input would wait for ever. */
const EXEC_TIMEOUT_MS = 60_000;
const MAX_OUTPUT = 1 << 20;

export class ExecCredentialSource {
  private cached: ExecResult | undefined;
  private inflight: Promise<ExecResult> | undefined;
  private readonly apiVersion: string;

  constructor(
    private readonly exec: ExecConfig,
    private readonly cluster: ExecClusterInfo,
    private readonly where: string,
    private readonly now: () => number = Date.now,
  ) {
    this.apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1beta1';
    if (!API_VERSIONS.has(this.apiVersion)) {
      throw new ClientError('InvalidConfig', `${where}: exec apiVersion ${JSON.stringify(this.apiVersion)} is not supported (use client.authentication.k8s.io/v1 or v1beta1)`);
    }
    if (exec.interactiveMode !== undefined && !['Never', 'IfAvailable', 'Always'].includes(exec.interactiveMode)) {
      throw new ClientError('InvalidConfig', `${where}: exec interactiveMode ${JSON.stringify(exec.interactiveMode)} is not Never, IfAvailable or Always`);
    }
    if (exec.interactiveMode === 'Always') {
      throw new ClientError('InvalidConfig', `${where}: exec plugin ${exec.command} needs an interactive terminal (interactiveMode: Always), which a controller never has`);
    }
  }

  /** The current credential, running the plugin when there is none or it has expired. */
  get(): Promise<ExecResult> {
    const c = this.cached;
    if (c && (c.expiresAt === undefined || this.now() < c.expiresAt)) return Promise.resolve(c);
    this.inflight ??= this.run().then(
      (r) => {
        this.cached = r;
        this.inflight = undefined;
        return r;
      },
      (err: unknown) => {
        this.inflight = undefined;
        throw err;
      },
    );
    return this.inflight;
  }

  /** Forget the credential (the server answered 401): the next request runs the plugin again. */
  invalidate(used: ExecResult): void {
    if (this.cached === used) this.cached = undefined;
  }

  private info(): string {
    const spec: Record<string, unknown> = { interactive: false };
    if (this.exec.provideClusterInfo) {
      const c = this.cluster;
      spec['cluster'] = {
        server: c.server,
        ...(c.caData ? { 'certificate-authority-data': Buffer.from(c.caData).toString('base64') } : {}),
        ...(c.insecureSkipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
        ...(c.serverName ? { 'tls-server-name': c.serverName } : {}),
        ...(c.proxyUrl ? { 'proxy-url': c.proxyUrl } : {}),
      };
    }
    return JSON.stringify({ apiVersion: this.apiVersion, kind: 'ExecCredential', spec });
  }

  private run(): Promise<ExecResult> {
    const { command } = this.exec;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const { name, value } of this.exec.env ?? []) env[name] = value;
    env['KUBERNETES_EXEC_INFO'] = this.info();
    // node:child_process only when a kubeconfig names an exec plugin (docs/architecture.md, builtins).
    const { execFile } = process.getBuiltinModule('node:child_process');
    return new Promise((resolve, reject) => {
      const child = execFile(command, [...(this.exec.args ?? [])], { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: MAX_OUTPUT, encoding: 'utf8', windowsHide: true }, (err, stdout, stderr) => {
        if (err) {
          const code = (err as NodeJS.ErrnoException).code;
          let why: string;
          if (code === 'ENOENT') why = `command not found${this.exec.installHint ? `. ${this.exec.installHint.trim()}` : ''}`;
          else if (code === 'EACCES') why = 'command is not executable';
          else if (err.killed) why = `no answer within ${EXEC_TIMEOUT_MS / 1000} s (killed)`;
          else why = `exited with ${err.code ?? err.signal ?? 'an error'}${stderr.trim() ? `: ${tail(stderr)}` : ''}`;
          reject(new ClientError('InvalidConfig', `${this.where}: exec plugin ${command}: ${why}`, { cause: err }));
          return;
        }
        try {
          resolve(this.parse(stdout));
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      });
      child.stdin?.end();
    });
  }

  private parse(stdout: string): ExecResult {
    const fail = (why: string): never => {
      throw new ClientError('InvalidConfig', `${this.where}: exec plugin ${this.exec.command}: ${why}`);
    };
    let cred: unknown;
    try {
      cred = JSON.parse(stdout);
    } catch {
      return fail(`printed something that is not an ExecCredential (not JSON): ${JSON.stringify(stdout.slice(0, 200))}`);
    }
    if (typeof cred !== 'object' || cred === null) return fail('printed something that is not an ExecCredential');
    const { apiVersion, kind, status } = cred as { apiVersion?: unknown; kind?: unknown; status?: unknown };
    if (kind !== 'ExecCredential') fail(`printed kind ${JSON.stringify(kind)}, expected ExecCredential`);
    if (apiVersion !== this.apiVersion) fail(`printed apiVersion ${JSON.stringify(apiVersion)}, expected ${this.apiVersion} (the kubeconfig's)`);
    if (typeof status !== 'object' || status === null) return fail('printed an ExecCredential without status');
    const s = status as Record<string, unknown>;
    const str = (k: string): string | undefined => (typeof s[k] === 'string' && s[k] !== '' ? (s[k]) : undefined);
    const token = str('token');
    const cert = str('clientCertificateData');
    const key = str('clientKeyData');
    if (!token && !(cert && key)) fail('printed an ExecCredential with neither a token nor a client certificate and key');
    if (Boolean(cert) !== Boolean(key)) fail('printed a client certificate without a key, or a key without a certificate');
    let expiresAt: number | undefined;
    const exp = str('expirationTimestamp');
    if (exp) {
      expiresAt = Date.parse(exp);
      if (Number.isNaN(expiresAt)) fail(`printed an expirationTimestamp that is not a time: ${JSON.stringify(exp)}`);
    }
    return { ...(token ? { token } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}), ...(expiresAt === undefined ? {} : { expiresAt }) };
  }
}

function tail(text: string): string {
  const t = text.trim();
  return t.length > 500 ? `…${t.slice(-500)}` : t;
}
