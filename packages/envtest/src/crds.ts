/**
 * Installing CustomResourceDefinitions and waiting until they can be used:
 * created or updated, `Established` and `NamesAccepted`, and every served
 * version listed by discovery with its plural. A CRD being deleted is waited
 * for and created anew; one held by objects whose finalizers nobody removes
 * is reported (`CRDTerminating`) instead of waited for.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { EnvtestError } from './errors.js';
import { kubeRequest } from './internal/http.js';

/** A CRD object (apiextensions.k8s.io/v1), or a path to a YAML/JSON file or a directory of them. */
export type CRDSource = string | CustomResourceDefinitionLike;

/** The parts of a CustomResourceDefinition envtest reads. */
export interface CustomResourceDefinitionLike {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: { readonly name: string; readonly [key: string]: unknown };
  readonly spec: {
    readonly group: string;
    readonly names: { readonly plural: string; readonly kind: string; readonly [key: string]: unknown };
    readonly versions: readonly { readonly name: string; readonly served: boolean; readonly [key: string]: unknown }[];
    readonly [key: string]: unknown;
  };
}

/** Options for {@link installCRDs}. */
export interface InstallCRDsOptions {
  /** How long to wait for each CRD to be established and served (and for one being deleted to go first). Default: 30 000 ms. */
  readonly timeoutMs?: number;
}

/**
 * How long a CRD being deleted may stay held by the same number of objects
 * with finalizers before installCRDs reports it: long enough for an operator
 * that is running to remove its finalizers, short enough not to wait out the
 * timeout for finalizers nobody will remove.
 */
const TERMINATING_STALL_MS = 5_000;
/** How many of the objects holding a CRD being deleted the error names. */
const HOLDERS_NAMED = 5;

const KUSTOMIZATION = new Set(['kustomization.yaml', 'kustomization.yml', 'Kustomization']);
const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

async function loadSource(source: CRDSource): Promise<CustomResourceDefinitionLike[]> {
  if (typeof source !== 'string') return [source];
  let info;
  try {
    info = await stat(source);
  } catch (cause) {
    throw new EnvtestError('CRDInstallFailed', `CRD path ${source} cannot be read`, { cause });
  }
  if (info.isDirectory()) {
    // A kustomize directory (config/crd) holds its kustomization.yaml beside the CRDs: not one of them.
    const names = (await readdir(source)).filter((n) => ['.yaml', '.yml', '.json'].includes(extname(n)) && !KUSTOMIZATION.has(n)).sort();
    return (await Promise.all(names.map((n) => loadSource(join(source, n))))).flat();
  }
  const text = await readFile(source, 'utf8');
  let docs: unknown[];
  try {
    // Plain YAML → JSON. (client-node's loadAllYaml maps known kinds onto its model classes, which
    // renames x-kubernetes-* schema keywords to x_kubernetes_* and so silently drops them.)
    docs = extname(source) === '.json' ? [JSON.parse(text) as unknown] : parseAllDocuments(text).map((doc) => {
      if (doc.errors.length > 0) throw doc.errors[0]!;
      return doc.toJSON() as unknown;
    });
  } catch (cause) {
    throw new EnvtestError('CRDInstallFailed', `CRD file ${source} is not valid ${extname(source) === '.json' ? 'JSON' : 'YAML'}`, { cause });
  }
  return docs.filter((d) => d !== null && d !== undefined).map((d) => validate(d, source));
}

function validate(doc: unknown, where: string): CustomResourceDefinitionLike {
  const d = doc as Partial<CustomResourceDefinitionLike>;
  if (d.kind !== 'CustomResourceDefinition' || !d.metadata?.name || !d.spec?.group || !d.spec.names?.plural || !Array.isArray(d.spec.versions)) {
    throw new EnvtestError('CRDInstallFailed', `${where}: not a CustomResourceDefinition with metadata.name, spec.group, spec.names.plural and spec.versions`);
  }
  return d as CustomResourceDefinitionLike;
}

/**
 * Create or update each CRD, then wait until all are established and served
 * by discovery for every served version.
 *
 * @example
 * ```ts
 * await installCRDs(env.kubeConfig, ['config/crd/harddisks.yaml']);
 * ```
 */
export async function installCRDs(kc: KubeConfig, sources: readonly CRDSource[], options: InstallCRDsOptions = {}): Promise<void> {
  const crds = (await Promise.all(sources.map(loadSource))).flat();
  for (const crd of crds) validate(crd, `CRD ${crd.metadata?.name ?? '(unnamed)'}`);
  const timeoutMs = options.timeoutMs ?? 30_000;
  for (const crd of crds) await createOrUpdate(kc, crd, timeoutMs);
  await Promise.all(crds.map((crd) => waitServed(kc, crd, timeoutMs)));
}

/** A CRD as read from the server: what installing it and reporting a deletion need. */
interface StoredCRD {
  metadata: { name: string; resourceVersion: string; deletionTimestamp?: string; finalizers?: string[] };
  spec: { group: string; scope?: string; names: { plural: string; kind: string }; versions: { name: string; served: boolean; storage?: boolean }[] };
}

async function createOrUpdate(kc: KubeConfig, crd: CustomResourceDefinitionLike, timeoutMs: number): Promise<void> {
  const name = crd.metadata.name;
  const body = { ...crd, apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' };
  for (let attempt = 0; attempt < 5; attempt++) {
    let existing = await kubeRequest(kc, 'GET', `${CRD_PATH}/${name}`);
    if (existing.status === 200 && (JSON.parse(existing.body) as StoredCRD).metadata.deletionTimestamp) {
      // Being deleted: an update would not stop that (and one without the server's finalizer would
      // drop the cleanup of its objects). Wait until it is gone, then create it anew.
      await untilDeleted(kc, JSON.parse(existing.body) as StoredCRD, timeoutMs);
      existing = { status: 404, body: '' };
    }
    let res;
    if (existing.status === 404) {
      res = await kubeRequest(kc, 'POST', CRD_PATH, body);
    } else if (existing.status === 200) {
      const current = JSON.parse(existing.body) as StoredCRD;
      res = await kubeRequest(kc, 'PUT', `${CRD_PATH}/${name}`, {
        ...body,
        // The server's finalizers stay (customresourcecleanup: the objects are deleted with the CRD).
        metadata: { ...crd.metadata, resourceVersion: current.metadata.resourceVersion, ...(current.metadata.finalizers ? { finalizers: current.metadata.finalizers } : {}) },
      });
    } else {
      throw new EnvtestError('CRDInstallFailed', `reading CRD ${name} failed: ${existing.status} ${existing.body.slice(0, 300)}`);
    }
    if (res.status === 200 || res.status === 201) return;
    if (res.status === 409) continue; // raced another writer: read again
    throw new EnvtestError('CRDInstallFailed', `writing CRD ${name} failed: ${res.status} ${res.body.slice(0, 500)}`);
  }
  throw new EnvtestError('CRDInstallFailed', `writing CRD ${name} kept conflicting`);
}

interface CRDStatus {
  metadata?: { deletionTimestamp?: string };
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}

/** The objects of a CRD's kind that have finalizers: how many, and the first few. */
interface Holders {
  readonly count: number;
  /** More objects than were listed (the count is a lower bound). */
  readonly more: boolean;
  readonly named: readonly { readonly namespace?: string; readonly name: string; readonly finalizers: readonly string[] }[];
}

async function holdersOf(kc: KubeConfig, crd: StoredCRD): Promise<Holders> {
  const version = crd.spec.versions.find((v) => v.served && v.storage) ?? crd.spec.versions.find((v) => v.served);
  if (!version) return { count: 0, more: false, named: [] };
  const named: Holders['named'][number][] = [];
  let count = 0;
  let next = '';
  // A bounded walk (20 pages of 500): enough to name a few and count a development cluster's.
  for (let page = 0; page < 20; page++) {
    const res = await kubeRequest(kc, 'GET', `/apis/${crd.spec.group}/${version.name}/${crd.spec.names.plural}?limit=500${next ? `&continue=${encodeURIComponent(next)}` : ''}`);
    if (res.status !== 200) return { count, more: false, named };
    const list = JSON.parse(res.body) as { metadata?: { continue?: string }; items?: { metadata?: { namespace?: string; name?: string; finalizers?: string[] } }[] };
    for (const item of list.items ?? []) {
      const finalizers = item.metadata?.finalizers ?? [];
      if (finalizers.length === 0) continue;
      count++;
      if (named.length < HOLDERS_NAMED) named.push({ ...(item.metadata?.namespace ? { namespace: item.metadata.namespace } : {}), name: item.metadata?.name ?? '', finalizers });
    }
    next = list.metadata?.continue ?? '';
    if (!next) return { count, more: false, named };
  }
  return { count, more: true, named };
}

function terminatingError(crd: StoredCRD, holders: Holders): EnvtestError {
  const name = crd.metadata.name;
  const kind = crd.spec.names.kind;
  const resource = `${crd.spec.names.plural}.${crd.spec.group}`;
  const since = `being deleted (Terminating since ${crd.metadata.deletionTimestamp ?? 'now'})`;
  if (holders.count === 0) {
    return new EnvtestError('CRDTerminating', `CRD ${name} is ${since} and was still there after the wait; install it again once it is gone (kubectl get crd ${name})`);
  }
  const first = holders.named[0]!;
  // Names come from the cluster: the command is offered only when every part of it is a plain DNS name.
  const plain = (v: string): boolean => /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(v);
  const byHand = [resource, first.name, first.namespace ?? 'x'].every(plain)
    ? `kubectl patch ${resource} ${first.name}${first.namespace ? ` -n ${first.namespace}` : ''} --type merge -p '{"metadata":{"finalizers":null}}'`
    : `kubectl patch each of them with --type merge -p '{"metadata":{"finalizers":null}}'`;
  const list = holders.named.map((h) => `${h.namespace ? `${h.namespace}/` : ''}${h.name} (${h.finalizers.join(', ')})`).join(', ');
  const count = `${holders.more ? 'at least ' : ''}${holders.count} ${kind}${holders.count === 1 ? '' : 's'}`;
  return new EnvtestError(
    'CRDTerminating',
    `CRD ${name} is ${since} and cannot be installed again until it is gone: ${count} still ${holders.count === 1 ? 'has' : 'have'} finalizers, which keep ${holders.count === 1 ? 'it' : 'them'} and the CRD: ${list}${holders.count > holders.named.length ? ', ...' : ''}. ` +
      `Run the operator that set them until it has removed them (the CRD still serves ${kind}s while they are deleted), ` +
      `or remove them by hand: ${byHand}`,
  );
}

/**
 * Waits while a CRD is being deleted, until it is gone. Reported at once
 * (`CRDTerminating`) when objects with finalizers have held it for
 * {@link TERMINATING_STALL_MS} without one going, or when the timeout passes.
 */
async function untilDeleted(kc: KubeConfig, crd: StoredCRD, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let fewest = Number.POSITIVE_INFINITY;
  let stalledSince = Date.now();
  let current = crd;
  for (;;) {
    const holders = await holdersOf(kc, current);
    if (holders.count < fewest) {
      fewest = holders.count;
      stalledSince = Date.now();
    }
    if ((holders.count > 0 && Date.now() - stalledSince >= TERMINATING_STALL_MS) || Date.now() >= deadline) throw terminatingError(current, holders);
    await new Promise((r) => setTimeout(r, 250));
    const res = await kubeRequest(kc, 'GET', `${CRD_PATH}/${crd.metadata.name}`);
    if (res.status === 404) return;
    if (res.status !== 200) throw new EnvtestError('CRDInstallFailed', `reading CRD ${crd.metadata.name} failed: ${res.status} ${res.body.slice(0, 300)}`);
    current = JSON.parse(res.body) as StoredCRD;
    if (!current.metadata.deletionTimestamp) return; // cannot happen (a deletion is not undone), but nothing to wait for
  }
}

async function waitServed(kc: KubeConfig, crd: CustomResourceDefinitionLike, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const name = crd.metadata.name;
  const versions = crd.spec.versions.filter((v) => v.served).map((v) => v.name);
  let waitingFor = 'Established';
  while (Date.now() < deadline) {
    const res = await kubeRequest(kc, 'GET', `${CRD_PATH}/${name}`);
    if (res.status === 404) throw new EnvtestError('CRDInstallFailed', `CRD ${name} was deleted while waiting for it to be established`);
    if (res.status === 200) {
      const stored = JSON.parse(res.body) as CRDStatus & StoredCRD;
      if (stored.metadata?.deletionTimestamp) {
        await untilDeleted(kc, stored, Math.max(0, deadline - Date.now()));
        throw new EnvtestError('CRDInstallFailed', `CRD ${name} was deleted while waiting for it to be established`);
      }
      const conditions = stored.status?.conditions ?? [];
      const ok = (type: string): boolean => conditions.some((c) => c.type === type && c.status === 'True');
      const rejected = conditions.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
      if (rejected) throw new EnvtestError('CRDInstallFailed', `CRD ${name}: names not accepted: ${rejected.message ?? ''}`);
      if (ok('Established') && ok('NamesAccepted')) {
        let missing: string | undefined;
        for (const version of versions) {
          const disc = await kubeRequest(kc, 'GET', `/apis/${crd.spec.group}/${version}`);
          const resources = disc.status === 200 ? ((JSON.parse(disc.body) as { resources?: { name: string }[] }).resources ?? []) : [];
          if (!resources.some((r) => r.name === crd.spec.names.plural)) {
            missing = `${crd.spec.group}/${version} in discovery`;
            break;
          }
        }
        if (!missing) return;
        waitingFor = missing;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new EnvtestError('Timeout', `CRD ${name} was not ready within ${timeoutMs} ms (waiting for ${waitingFor})`);
}
