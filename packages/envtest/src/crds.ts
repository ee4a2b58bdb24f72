/**
 * Installing CustomResourceDefinitions and waiting until they can be used:
 * created or updated, `Established` and `NamesAccepted`, and every served
 * version listed by discovery with its plural.
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
  /** How long to wait for each CRD to be established and served. Default: 30 000 ms. */
  readonly timeoutMs?: number;
}

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
  for (const crd of crds) await createOrUpdate(kc, crd);
  const timeoutMs = options.timeoutMs ?? 30_000;
  await Promise.all(crds.map((crd) => waitServed(kc, crd, timeoutMs)));
}

async function createOrUpdate(kc: KubeConfig, crd: CustomResourceDefinitionLike): Promise<void> {
  const name = crd.metadata.name;
  const body = { ...crd, apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' };
  for (let attempt = 0; attempt < 5; attempt++) {
    const existing = await kubeRequest(kc, 'GET', `${CRD_PATH}/${name}`);
    let res;
    if (existing.status === 404) {
      res = await kubeRequest(kc, 'POST', CRD_PATH, body);
    } else if (existing.status === 200) {
      const current = JSON.parse(existing.body) as { metadata: { resourceVersion: string } };
      res = await kubeRequest(kc, 'PUT', `${CRD_PATH}/${name}`, {
        ...body,
        metadata: { ...crd.metadata, resourceVersion: current.metadata.resourceVersion },
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
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}

async function waitServed(kc: KubeConfig, crd: CustomResourceDefinitionLike, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const name = crd.metadata.name;
  const versions = crd.spec.versions.filter((v) => v.served).map((v) => v.name);
  let waitingFor = 'Established';
  while (Date.now() < deadline) {
    const res = await kubeRequest(kc, 'GET', `${CRD_PATH}/${name}`);
    if (res.status === 200) {
      const conditions = (JSON.parse(res.body) as CRDStatus).status?.conditions ?? [];
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
