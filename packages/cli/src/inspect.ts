/**
 * `kubeloop inspect <url> [controller] [namespace/name]`: a person's view of
 * a running manager's inspect endpoint (`/inspect` on its metrics server):
 * every controller's queue, one controller's keys in flight, in backoff
 * and suspected of triggering themselves, or one key's triggers and last
 * reconciles, as tables; `--pause` / `--resume` change a controller.
 */
import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { CliError } from './errors.js';

/** Options of {@link fetchInspection}. */
export interface InspectOptions {
  /** The metrics server: `https://host:8443` (or `http://`); a path after the host is ignored. */
  readonly url: string;
  /** One controller. Default: every controller. */
  readonly controller?: string;
  /** One key of `controller`: `namespace/name`, or `name` for a cluster-scoped kind. Default: none. */
  readonly key?: string;
  /** Pause or resume `controller` (needs the server's authorization, and `post` on the path). Default: only read. */
  readonly action?: 'pause' | 'resume';
  /** A bearer token (a ServiceAccount's, allowed `get` on `/inspect` and `/inspect/*`). Default: none. */
  readonly token?: string;
  /** A file holding the bearer token (read at each call, as a projected token rotates). Default: none. */
  readonly tokenFile?: string;
  /** The PEM CA the server's certificate is checked against. Default: the system's CAs. */
  readonly caFile?: string;
  /** Do not check the server's certificate (a self-signed one on a port-forward). Default: false. */
  readonly insecureSkipTlsVerify?: boolean;
  /** Give up after this long. Default: 15 000 ms. */
  readonly timeoutMs?: number;
}

/** What was asked for, and the server's JSON answer. */
export type Inspection =
  | { readonly view: 'manager'; readonly data: unknown }
  | { readonly view: 'controller'; readonly data: unknown }
  | { readonly view: 'key'; readonly data: unknown };

/** Largest answer read. */
const MAX_BODY = 16 * 1024 * 1024;

/** The path of a request for `options`. */
export function inspectPath(options: Pick<InspectOptions, 'controller' | 'key' | 'action'>): string {
  const { controller, key, action } = options;
  if (controller === undefined) {
    if (key !== undefined || action !== undefined) throw new CliError('Usage', 'inspect: a key, --pause or --resume needs a controller: kubeloop inspect <url> <controller> [namespace/name]');
    return '/inspect';
  }
  if (controller === '' || controller.includes('/')) throw new CliError('Usage', `inspect: ${JSON.stringify(controller)} is not a controller name`);
  const base = `/inspect/${encodeURIComponent(controller)}`;
  if (action !== undefined) {
    if (key !== undefined) throw new CliError('Usage', 'inspect: --pause and --resume act on a controller, not a key');
    return `${base}/${action}`;
  }
  if (key === undefined) return base;
  const parts = key.split('/');
  if (parts.length > 2 || parts.some((p) => p === '')) throw new CliError('Usage', `inspect: a key is namespace/name, or name for a cluster-scoped kind; got ${JSON.stringify(key)}`);
  return `${base}/${parts.map(encodeURIComponent).join('/')}`;
}

/**
 * Ask a manager's inspect endpoint. Throws CliError `Usage` for a bad URL
 * or key, `InvalidInput` for an unreadable token or CA file,
 * `ClusterReadFailed` when the server cannot be reached or answers with an
 * error (its message included: 401 without a token, 403 without the
 * permission, 404 for an unknown controller).
 *
 * @example
 * ```ts
 * const inspection = await fetchInspection({ url: 'https://127.0.0.1:8443', controller: 'harddisk', key: 'default/disk-1', tokenFile: '/tmp/token', insecureSkipTlsVerify: true });
 * process.stdout.write(renderInspection(inspection));
 * ```
 */
export async function fetchInspection(options: InspectOptions): Promise<Inspection> {
  const base = URL.parse(options.url);
  if (!base || (base.protocol !== 'http:' && base.protocol !== 'https:')) throw new CliError('Usage', `inspect: ${JSON.stringify(options.url)} is not an http(s) URL of a metrics server`);
  const path = inspectPath(options);
  let token = options.token;
  let ca: string | undefined;
  try {
    if (options.tokenFile !== undefined) token = (await readFile(options.tokenFile, 'utf8')).trim();
    if (options.caFile !== undefined) ca = await readFile(options.caFile, 'utf8');
  } catch (cause) {
    throw new CliError('InvalidInput', `inspect: cannot read ${options.tokenFile !== undefined && token === options.token ? 'the token file' : 'the CA file'}: ${(cause as Error).message}`, { cause });
  }
  const url = new URL(path, base);
  const method = options.action === undefined ? 'GET' : 'POST';
  const { status, body } = await send(url, method, token, ca, options.insecureSkipTlsVerify === true, options.timeoutMs ?? 15_000);
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch {
    data = undefined;
  }
  if (status !== 200) {
    const message = (data as { error?: unknown } | undefined)?.error;
    throw new CliError('ClusterReadFailed', `inspect: ${method} ${url.pathname} answered ${status}: ${clean(typeof message === 'string' ? message : body.trim()).slice(0, 500)}`);
  }
  if (data === undefined) throw new CliError('ClusterReadFailed', `inspect: ${url.pathname} did not answer JSON (is ${base.origin} a kubeloop metrics server?)`);
  const view = options.controller === undefined ? 'manager' : options.key === undefined ? 'controller' : 'key';
  return { view, data };
}

function send(url: URL, method: string, token: string | undefined, ca: string | undefined, insecure: boolean, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
    const done = (err: Error): void => reject(new CliError('ClusterReadFailed', `inspect: ${method} ${url.origin}${url.pathname}: ${err.message}`, { cause: err }));
    const onResponse = (res: IncomingMessage): void => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) {
          res.destroy(new Error(`the answer is larger than ${MAX_BODY} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', done);
    };
    const req = url.protocol === 'https:' ? httpsRequest(url, { method, headers, agent: false, ...(ca ? { ca } : {}), rejectUnauthorized: !insecure }, onResponse) : httpRequest(url, { method, headers, agent: false }, onResponse);
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', done);
    req.end();
  });
}

/** Text from the server, made safe for a terminal: control characters (escape sequences) become `?`. */
function clean(value: unknown): string {
  const s = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : value === undefined || value === null ? '' : JSON.stringify(value);
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

const list = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => typeof x === 'object' && x !== null) : []);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const ms = (v: unknown): string => {
  const n = num(v);
  return n >= 60_000 ? `${(n / 60_000).toFixed(1)}m` : n >= 1000 ? `${(n / 1000).toFixed(1)}s` : `${Math.round(n)}ms`;
};
const when = (v: unknown): string => (num(v) > 0 ? new Date(num(v)).toISOString() : '-');
const byPriority = (v: unknown): string => {
  if (typeof v !== 'object' || v === null) return '-';
  const parts = Object.entries(v as Record<string, unknown>).map(([k, n]) => `${clean(k)}=${clean(n)}`);
  return parts.length === 0 ? '-' : parts.join(' ');
};

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  if (rows.length === 0) return ['  (none)'];
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => `  ${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}`.trimEnd());
}

/** One trigger as a line: `for update default/disk-1 rv=42 own-write x3`. */
function triggerLine(t: Record<string, unknown>): string {
  const parts = [clean(t['source']), clean(t['event'])];
  if (t['kind'] !== undefined) parts.push(clean(t['kind']));
  if (t['name'] !== undefined) parts.push(t['namespace'] ? `${clean(t['namespace'])}/${clean(t['name'])}` : clean(t['name']));
  if (t['resourceVersion'] !== undefined) parts.push(`rv=${clean(t['resourceVersion'])}`);
  if (t['mapped'] === true) parts.push('mapped');
  if (t['ownWrite'] === true) parts.push('own-write');
  if (num(t['count']) > 1) parts.push(`x${num(t['count'])}`);
  return parts.join(' ');
}

const triggerCell = (v: unknown, overflow: unknown): string => {
  const ts = list(v).map(triggerLine);
  if (num(overflow) > 0) ts.push(`+${num(overflow)} more`);
  return ts.length === 0 ? '-' : ts.join('; ');
};

function controllerSummary(c: Record<string, unknown>): string[] {
  const state = c['paused'] === true ? 'paused' : c['forKindMissing'] === true ? 'waiting for CRD' : c['started'] === true ? (c['synced'] === true ? 'running' : 'syncing') : 'not started';
  // A fleet controller's member is addressed as name@cluster (`kubeloop inspect <url> copy@eu-1`).
  const name = c['cluster'] === undefined ? clean(c['name']) : `${clean(c['name'])}@${clean(c['cluster'])}`;
  return [name, state, String(num(c['depth'])), byPriority(c['depthByPriority']), byPriority(Object.fromEntries(Object.entries((c['oldestWaitMs'] ?? {}) as Record<string, unknown>).map(([k, v]) => [k, ms(v)]))), String(list(c['inFlight']).length), String(list(c['backoff']).length), String(list(c['selfTriggering']).length)];
}

const SUMMARY_HEADER = ['CONTROLLER', 'STATE', 'DEPTH', 'BY PRIORITY', 'OLDEST WAIT', 'IN FLIGHT', 'BACKOFF', 'SELF-TRIGGERING'];

function reconcileRows(v: unknown, withKey: boolean): string[][] {
  return list(v).map((r) => [
    ...(withKey ? [clean(r['key'])] : []),
    when(r['startedAt']),
    ms(r['durationMs']),
    clean(r['result']),
    r['error'] === undefined ? '-' : clean(r['error']),
    triggerCell(r['triggers'], r['triggersOverflow']),
  ]);
}

/**
 * Tables for a person, from what {@link fetchInspection} read. Every value
 * from the server is shown as text with control characters replaced.
 *
 * @example
 * ```ts
 * process.stdout.write(renderInspection({ view: 'manager', data: { controllers: [] } }));
 * ```
 */
export function renderInspection(inspection: Inspection): string {
  const d = (typeof inspection.data === 'object' && inspection.data !== null ? inspection.data : {}) as Record<string, unknown>;
  const lines: string[] = [];
  if (inspection.view === 'manager') {
    lines.push('controllers:', ...table(SUMMARY_HEADER, list(d['controllers']).map(controllerSummary)));
  } else if (inspection.view === 'controller') {
    lines.push(`controller ${clean(d['name'])}${d['cluster'] === undefined ? '' : ` (cluster ${clean(d['cluster'])})`}:`, ...table(SUMMARY_HEADER, [controllerSummary(d)]));
    const crds = Array.isArray(d['waitingForCRD']) ? (d['waitingForCRD'] as unknown[]).map(clean) : [];
    if (crds.length > 0) {
      lines.push('', `waiting for the CRD of ${crds.join(', ')} (not served by the API server): ${d['forKindMissing'] === true ? 'its workers take no keys until it is installed' : 'that watch starts again when it is installed'}`);
    }
    if (d['triggers'] === false) lines.push('', 'trigger attribution is off for this controller (triggers: false): no backoff, self-trigger or reconcile history is kept');
    lines.push('', 'in flight:', ...table(['KEY', 'RECONCILE ID', 'ELAPSED'], list(d['inFlight']).map((f) => [clean(f['key']), clean(f['reconcileID']), ms(f['elapsedMs'])])));
    lines.push('', 'in backoff:', ...table(['KEY', 'FAILURES', 'NEXT RETRY', 'LAST ERROR'], list(d['backoff']).map((b) => [clean(b['key']), String(num(b['failures'])), when(b['nextRetryAt']), clean(b['lastError'])])));
    lines.push('', 'suspected self-triggering (reconciled again and again by nothing but their own writes):', ...table(['KEY', 'STREAK', 'SINCE', 'LAST'], list(d['selfTriggering']).map((s) => [clean(s['key']), String(num(s['streak'])), when(s['since']), when(s['lastAt'])])));
    lines.push('', 'recent reconciles:', ...table(['KEY', 'STARTED', 'TOOK', 'RESULT', 'ERROR', 'TRIGGERS'], reconcileRows(d['reconciles'], true)));
  } else {
    lines.push(`key ${clean(d['key'])} of controller ${clean(d['controller'])}:`);
    const f = d['inFlight'] as Record<string, unknown> | undefined;
    const b = d['backoff'] as Record<string, unknown> | undefined;
    lines.push(`  waiting: ${d['waiting'] === true ? 'yes' : 'no'}`);
    lines.push(`  in flight: ${f ? `yes, for ${ms(f['elapsedMs'])} (reconcile ${clean(f['reconcileID'])})` : 'no'}`);
    lines.push(`  backoff: ${b ? `${num(b['failures'])} failure(s), next retry ${when(b['nextRetryAt'])}` : 'no'}`);
    if (b) lines.push(`  last error: ${clean(b['lastError'])}`);
    if (num(d['selfTriggerStreak']) > 0) lines.push(`  reconciled ${num(d['selfTriggerStreak'])} time(s) in a row by nothing but its own writes`);
    lines.push('', 'triggers since its last reconcile:', ...table(['TRIGGER', 'FIRST', 'LAST'], list(d['pendingTriggers']).map((t) => [triggerLine(t), when(t['firstAt']), when(t['lastAt'])])));
    if (num(d['pendingTriggersOverflow']) > 0) lines.push(`  +${num(d['pendingTriggersOverflow'])} more (past the per-key bound)`);
    lines.push('', 'last reconciles (oldest first):', ...table(['STARTED', 'TOOK', 'RESULT', 'ERROR', 'TRIGGERS'], reconcileRows(d['reconciles'], false)));
  }
  return `${lines.join('\n')}\n`;
}
