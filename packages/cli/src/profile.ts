/**
 * `kubeloop profile`: fetch a CPU profile, a heap snapshot or a sampling
 * heap profile from a running manager's metrics server (ManagerOptions
 * `profiling`) into a file, with a bearer token allowed to `get` the
 * profile path. The file opens in Chrome DevTools (and `.cpuprofile` in
 * speedscope).
 */
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { CliError } from './errors.js';

/** What to take. */
export type ProfileKind = 'cpu' | 'heap' | 'heap-sampling';

/** Options of {@link fetchProfile}. */
export interface FetchProfileOptions {
  /** The manager's metrics server, `https://host:port` (a path after it is ignored). */
  readonly url: string;
  readonly kind: ProfileKind;
  /** How long a CPU or sampling heap profile runs, seconds. Default: 30. */
  readonly seconds?: number;
  /** The file written (replaced only once the whole profile has arrived). */
  readonly out: string;
  /** A bearer token allowed to `get` the profile path. Default: none (the server answers 401). */
  readonly token?: string;
  /** PEM of the CA that signed the metrics server's certificate. Default: the system's CAs. */
  readonly caPem?: string;
  /** Skip verifying the server's certificate (a self-signed one). Default: false. */
  readonly insecureSkipTlsVerify?: boolean;
}

const PATHS: Record<ProfileKind, string> = { cpu: '/debug/profile/cpu', heap: '/debug/profile/heap', 'heap-sampling': '/debug/profile/heap-sampling' };

/** The file suffix each kind of profile is opened by. */
export const PROFILE_SUFFIX: Record<ProfileKind, string> = { cpu: '.cpuprofile', heap: '.heapsnapshot', 'heap-sampling': '.heapprofile' };

/**
 * Parse a duration: `30s`, `2m`, `1m30s`, or a plain number of seconds.
 * @throws CliError `Usage` for anything else.
 */
export function parseSeconds(text: string, flag: string): number {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const m = /^(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(text);
  if (!m || text === '' || (m[1] === undefined && m[2] === undefined)) throw new CliError('Usage', `${flag} takes a duration such as 30s or 2m, not ${JSON.stringify(text)}`);
  return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
}

/**
 * Fetch one profile into `out`. Resolves with the bytes written.
 * @throws CliError `ClusterReadFailed` when the server cannot be reached or
 * answers anything but 200 (its reason in the message), `InvalidInput` for
 * a URL that is not http(s).
 *
 * @example
 * ```ts
 * import { readFile } from 'node:fs/promises';
 * const token = await readFile('token', 'utf8');
 * const bytes = await fetchProfile({ url: 'https://127.0.0.1:8443', kind: 'cpu', seconds: 30, out: 'harddisk.cpuprofile', token: token.trim(), insecureSkipTlsVerify: true });
 * console.log(`${bytes} bytes`);
 * ```
 */
export async function fetchProfile(options: FetchProfileOptions): Promise<number> {
  let base: URL;
  try {
    base = new URL(options.url);
  } catch {
    throw new CliError('InvalidInput', `not a URL: ${JSON.stringify(options.url)} (want the metrics server, such as https://127.0.0.1:8443)`);
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new CliError('InvalidInput', `${options.url}: want an https:// URL of the metrics server`);
  const target = new URL(PATHS[options.kind], base);
  if (options.kind !== 'heap') target.searchParams.set('seconds', String(options.seconds ?? 30));
  const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const tls = target.protocol === 'https:' ? { ...(options.caPem ? { ca: options.caPem } : {}), rejectUnauthorized: options.insecureSkipTlsVerify !== true } : {};
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = send(target, { method: 'GET', headers, ...tls }, resolve);
    req.on('error', (cause) => reject(new CliError('ClusterReadFailed', `GET ${target.href}: ${cause.message}`, { cause })));
    req.end();
  });
  if (res.statusCode !== 200) {
    let body = '';
    res.setEncoding('utf8');
    for await (const chunk of res) if (body.length < 4096) body += chunk as string;
    const hint = res.statusCode === 401 ? ' (give a token with --token or --token-file)' : res.statusCode === 403 ? ' (bind the token\'s account to a ClusterRole with nonResourceURLs ["/debug/profile/*"], verbs ["get"])' : res.statusCode === 404 ? ' (is the manager started with profiling: true?)' : '';
    throw new CliError('ClusterReadFailed', `GET ${target.pathname}: ${res.statusCode ?? 0} ${body.trim().slice(0, 500)}${hint}`);
  }
  const partial = `${options.out}.partial`;
  let bytes = 0;
  res.on('data', (chunk: Buffer) => (bytes += chunk.length));
  try {
    await pipeline(res, createWriteStream(partial));
  } catch (cause) {
    await rm(partial, { force: true });
    throw new CliError('ClusterReadFailed', `GET ${target.pathname}: the profile was cut off after ${bytes} bytes: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  if (!res.complete) {
    await rm(partial, { force: true });
    throw new CliError('ClusterReadFailed', `GET ${target.pathname}: the profile was cut off after ${bytes} bytes (the server's size limit, profiling.maxHeapSnapshotBytes?)`);
  }
  await rename(partial, options.out);
  return bytes;
}

/** A token from `--token`, else the file `--token-file` names (trimmed). */
export async function tokenFrom(token: string | undefined, tokenFile: string | undefined): Promise<string | undefined> {
  if (token !== undefined) return token;
  if (tokenFile === undefined) return undefined;
  try {
    return (await readFile(tokenFile, 'utf8')).trim();
  } catch (cause) {
    throw new CliError('InvalidInput', `cannot read --token-file ${tokenFile}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
