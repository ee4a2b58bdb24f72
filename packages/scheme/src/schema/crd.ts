/**
 * CustomResourceDefinitions from schema-first kinds: the versions of each
 * group/kind become one CRD, their schemas rewritten into the Kubernetes
 * dialect and checked with the API server's rules first, so a schema the
 * server would refuse fails here with its path instead of at install time.
 */
import type { CustomResourceDefinition } from '../builtins/apiextensions-v1.js';
import type { ResourceDescriptor } from '../descriptor.js';
import { SchemeError } from '../errors.js';
import type { SchemaProblem } from '../errors.js';
import { normalizeSchema } from '../internal/normalize-schema.js';
import type { CustomResourceOptions, JsonSchema, KindSchema } from '../kind-schema.js';
import { checkStructural } from './structural.js';

/** A generated CRD: the built-in CRD wire type with every field the generator sets present. */
export type GeneratedCRD = CustomResourceDefinition & { apiVersion: 'apiextensions.k8s.io/v1'; kind: 'CustomResourceDefinition'; metadata: { name: string } };

/**
 * The CRD schema of one schema-first kind: its root schema in the
 * Kubernetes dialect (TypeBox's `const`, literal unions, nullable unions and
 * string-keyed records rewritten). Not checked; {@link generateCRDs} checks.
 *
 * @example
 * ```ts
 * const schema = crdSchemaOf(HardDisk); // { type: 'object', properties: { apiVersion, kind, metadata, spec, status }, ... }
 * ```
 */
export function crdSchemaOf(kind: ResourceDescriptor): JsonSchema {
  if (kind.schema === undefined) {
    throw new SchemeError('InvalidCRD', `${kind.kind}.${kind.version}.${kind.group} has no schema: define it with defineKind({ ..., schema })`, { input: kind.kind });
  }
  return normalizeSchema(kind.schema.openAPIV3Schema);
}

/** Kubernetes' version priority: GA before beta before alpha, higher numbers first, others last by name. */
function versionRank(v: string): [number, number, number, string] {
  const m = /^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$/.exec(v);
  if (!m) return [3, 0, 0, v];
  const stage = m[2] === undefined ? 0 : m[2] === 'beta' ? 1 : 2;
  return [stage, -Number(m[1]), -Number(m[3] ?? 0), v];
}

function compareVersions(a: string, b: string): number {
  const ra = versionRank(a);
  const rb = versionRank(b);
  for (let i = 0; i < 3; i++) if (ra[i] !== rb[i]) return (ra[i] as number) - (rb[i] as number);
  return ra[3] < rb[3] ? -1 : ra[3] > rb[3] ? 1 : 0;
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * One CRD per group/kind among `kinds` (descriptors defined with a schema;
 * several versions of a kind become one CRD with one storage version),
 * sorted by CRD name, versions in Kubernetes' priority order.
 *
 * @throws {@link SchemeError} `NonStructural` with `problems` (each with its
 * path, such as `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`)
 * when a schema would be refused by the API server; `InvalidCRD` when a kind
 * has no schema, or its versions disagree on names or scope, or not exactly
 * one version is the storage version.
 *
 * @example
 * ```ts
 * import { generateCRDs } from '@kubeloop/scheme/schema';
 * const [crd] = generateCRDs([HardDisk]); // crd.metadata.name === 'harddisks.crd-demo.io'
 * ```
 */
export function generateCRDs(kinds: readonly ResourceDescriptor[]): GeneratedCRD[] {
  const groups = new Map<string, ResourceDescriptor[]>();
  for (const kind of kinds) {
    if (kind.schema === undefined) crdSchemaOf(kind); // throws InvalidCRD
    const id = `${kind.group}/${kind.kind}`;
    const list = groups.get(id) ?? [];
    if (list.some((k) => k.version === kind.version)) {
      const other = list.find((k) => k.version === kind.version)!;
      if (other === kind) continue;
      throw new SchemeError('InvalidCRD', `${kind.kind}.${kind.version}.${kind.group} is defined twice`, { input: kind.kind });
    }
    list.push(kind);
    groups.set(id, list);
  }
  return [...groups.values()].map(crdFor).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
}

function crdFor(versions: ResourceDescriptor[]): GeneratedCRD {
  versions.sort((a, b) => compareVersions(a.version, b.version));
  const first = versions[0]!;
  const label = `${first.kind}.${first.group}`;
  const invalid = (problem: string, problems: SchemaProblem[] = []): SchemeError =>
    new SchemeError('InvalidCRD', `cannot generate the CRD of ${label}: ${problem}`, { input: label, problems });

  if (first.group === '') throw invalid('a custom resource needs a non-empty group');
  if (!first.group.includes('.')) throw invalid(`group "${first.group}" must contain a dot (the API server requires a domain, e.g. "${first.group}.example.com")`);
  const options = versions.map((v) => (v.schema as KindSchema).crd);
  for (const v of versions) {
    if (v.plural !== first.plural) throw invalid(`versions disagree on plural: ${first.version} says ${String(first.plural)}, ${v.version} says ${String(v.plural)}`);
    if (v.namespaced !== first.namespaced) throw invalid(`versions disagree on scope: ${first.version} is ${first.namespaced ? 'namespaced' : 'cluster-scoped'}, ${v.version} is not`);
    if (v.listKind !== first.listKind) throw invalid(`versions disagree on listKind: ${first.version} says ${String(first.listKind)}, ${v.version} says ${String(v.listKind)}`);
  }
  const pick = <K extends 'singular' | 'shortNames' | 'categories'>(field: K): CustomResourceOptions[K] | undefined => {
    const given = options.map((o, i) => ({ value: o[field], version: versions[i]!.version })).filter((o) => o.value !== undefined);
    for (const g of given) {
      const same = field === 'singular' ? g.value === given[0]!.value : sameList(g.value as readonly string[], given[0]!.value as readonly string[]);
      if (!same) throw invalid(`versions disagree on ${field}: ${given[0]!.version} and ${g.version}`);
    }
    return given[0]?.value;
  };
  const conversions = options.map((o, i) => ({ value: o.conversion, version: versions[i]!.version })).filter((o) => o.value !== undefined);
  for (const c of conversions) {
    if (JSON.stringify(c.value) !== JSON.stringify(conversions[0]!.value)) throw invalid(`versions disagree on conversion: ${conversions[0]!.version} and ${c.version}`);
  }
  const conversion = conversions[0]?.value;
  const singular = pick('singular') ?? first.kind.toLowerCase();
  const shortNames = pick('shortNames');
  const categories = pick('categories');

  const storage = versions.map((v, i) => options[i]!.storage ?? versions.length === 1);
  const storageCount = storage.filter(Boolean).length;
  if (storageCount !== 1) {
    throw invalid(
      storageCount === 0
        ? `no version is the storage version: set crd.storage: true on exactly one of ${versions.map((v) => v.version).join(', ')}`
        : `${storageCount} versions say crd.storage: true (${versions.filter((_, i) => storage[i]).map((v) => v.version).join(', ')}); exactly one may`,
    );
  }

  const problems: SchemaProblem[] = [];
  const rendered = versions.map((v, i) => {
    const o = options[i]!;
    const base = `spec.versions[${i}]`;
    const schema = crdSchemaOf(v);
    problems.push(...checkStructural(schema, { basePath: `${base}.schema.openAPIV3Schema` }));
    problems.push(...optionProblems(o, base));
    const version: Record<string, unknown> = { name: v.version, served: o.served ?? true, storage: storage[i] };
    if (o.deprecated !== undefined && o.deprecated !== false) {
      version['deprecated'] = true;
      if (typeof o.deprecated === 'string') version['deprecationWarning'] = o.deprecated;
    }
    version['schema'] = { openAPIV3Schema: schema };
    const sub: Record<string, unknown> = {};
    if (o.subresources?.status) sub['status'] = {};
    if (o.subresources?.scale) sub['scale'] = { ...o.subresources.scale };
    if (Object.keys(sub).length > 0) version['subresources'] = sub;
    if (o.printerColumns && o.printerColumns.length > 0) version['additionalPrinterColumns'] = o.printerColumns.map((c) => ({ ...c }));
    if (o.selectableFields && o.selectableFields.length > 0) version['selectableFields'] = o.selectableFields.map((f) => ({ jsonPath: f.jsonPath }));
    return version;
  });
  if (problems.length > 0) {
    const nonStructural = problems.some((p) => p.path.includes('.schema.openAPIV3Schema'));
    const lines = problems.map((p) => `  ${p.path}: ${p.type}: ${p.detail}`).join('\n');
    throw new SchemeError(nonStructural ? 'NonStructural' : 'InvalidCRD', `the API server would refuse the CRD of ${label}:\n${lines}`, { input: label, problems });
  }

  const names: Record<string, unknown> = { kind: first.kind, listKind: first.listKind ?? `${first.kind}List`, plural: first.plural, singular };
  if (shortNames && shortNames.length > 0) names['shortNames'] = [...shortNames];
  if (categories && categories.length > 0) names['categories'] = [...categories];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${String(first.plural)}.${first.group}` },
    spec: {
      group: first.group,
      names,
      scope: first.namespaced ? 'Namespaced' : 'Cluster',
      versions: rendered,
      ...(conversion
        ? {
            conversion: {
              strategy: 'Webhook',
              webhook: {
                conversionReviewVersions: ['v1'],
                clientConfig:
                  'url' in conversion
                    ? { url: conversion.url }
                    : { service: { namespace: conversion.service.namespace, name: conversion.service.name, path: conversion.service.path ?? '/convert', port: conversion.service.port ?? 443 } },
              },
            },
          }
        : {}),
    },
  } as unknown as GeneratedCRD;
}

const COLUMN_TYPES = new Set(['integer', 'number', 'string', 'boolean', 'date']);

function optionProblems(o: CustomResourceOptions, base: string): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  (o.printerColumns ?? []).forEach((c, i) => {
    const path = `${base}.additionalPrinterColumns[${i}]`;
    if (typeof c.name !== 'string' || c.name === '') problems.push({ path: `${path}.name`, type: 'Required', detail: 'must not be empty' });
    if (!COLUMN_TYPES.has(c.type)) problems.push({ path: `${path}.type`, type: 'Unsupported', detail: `${JSON.stringify(c.type)}: supported values: "boolean", "date", "integer", "number", "string"` });
    if (typeof c.jsonPath !== 'string' || !c.jsonPath.startsWith('.')) problems.push({ path: `${path}.jsonPath`, type: 'Invalid', detail: 'must be a simple JSON path starting with "." (.spec.size)' });
    if (c.priority !== undefined && !(Number.isInteger(c.priority) && c.priority >= 0)) problems.push({ path: `${path}.priority`, type: 'Invalid', detail: 'must be a non-negative integer' });
  });
  const selectable = o.selectableFields ?? [];
  if (selectable.length > 8) problems.push({ path: `${base}.selectableFields`, type: 'Invalid', detail: `must have at most 8 items, not ${selectable.length}` });
  selectable.forEach((f, i) => {
    if (typeof f.jsonPath !== 'string' || !/^\.[A-Za-z0-9_]/.test(f.jsonPath)) problems.push({ path: `${base}.selectableFields[${i}].jsonPath`, type: 'Invalid', detail: 'must be a simple JSON path starting with "." (.spec.color)' });
  });
  const scale = o.subresources?.scale;
  if (scale) {
    const path = `${base}.subresources.scale`;
    if (!/^\.spec(\.[A-Za-z0-9_]+)+$/.test(scale.specReplicasPath ?? '')) problems.push({ path: `${path}.specReplicasPath`, type: 'Invalid', detail: 'should be a json path under .spec' });
    if (!/^\.status(\.[A-Za-z0-9_]+)+$/.test(scale.statusReplicasPath ?? '')) problems.push({ path: `${path}.statusReplicasPath`, type: 'Invalid', detail: 'should be a json path under .status' });
    if (scale.labelSelectorPath !== undefined && !/^\.(spec|status)(\.[A-Za-z0-9_]+)+$/.test(scale.labelSelectorPath)) {
      problems.push({ path: `${path}.labelSelectorPath`, type: 'Invalid', detail: 'should be a json path under either .spec or .status' });
    }
  }
  return problems;
}
