/**
 * The object-metadata validation every kind gets on a real API server
 * (names, generateName, labels, annotations, finalizers, owner references),
 * independent of any schema.
 */
import { KIND_FACTS } from './kind-facts.generated.js';
import type { KindFact } from './kind-facts.generated.js';
import { labelKeyProblems, labelValueProblems } from './selectors.js';
import type { FieldError } from './status.js';

type Json = Record<string, unknown>;

/** A lowercase RFC 1123 subdomain, and apimachinery's message when a name is not one (shared with the CEL format library). */
export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const SUBDOMAIN_TEXT =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
export const LABEL_TEXT =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/** Finalizers that need no domain. */
const STANDARD_FINALIZERS = new Set(['kubernetes', 'orphan', 'foregroundDeletion']);

/** The name rule of a kind: the server's, as the generated per-kind facts say (a custom resource's name is a subdomain). */
function factOf(group: string, kind: string): KindFact {
  return KIND_FACTS[`${group}/${kind}`] ?? { createOnUpdate: false, name: 'subdomain' };
}

/** Whether a PUT of a missing name of this built-in kind creates it (its strategy's AllowCreateOnUpdate). */
export function createsOnUpdate(group: string, kind: string): boolean {
  return KIND_FACTS[`${group}/${kind}`]?.createOnUpdate ?? false;
}

/**
 * What is wrong with a name of a kind, by the kind's rule; `prefix` for a
 * generateName, which only the rule's own length bounds (a kind's tighter
 * limit, CronJob's 52, is checked on the generated name).
 */
export function nameProblem(group: string, kind: string, name: string, prefix = false): string | undefined {
  const fact = factOf(group, kind);
  if (fact.name === 'path') {
    if (name === '.' || name === '..') return `may not be '${name}'`;
    if (name.includes('/') || name.includes('%')) return `may not contain '/' or '%'`;
    return undefined;
  }
  const ruleMax = fact.name === 'label' ? 63 : 253;
  const max = prefix ? ruleMax : (fact.maxNameLength ?? ruleMax);
  if (fact.name === 'label') {
    if (name.length > 63) return 'must be no more than 63 characters';
    if (name.includes('.')) return 'must not contain dots';
    if (!DNS1123_LABEL.test(name)) return LABEL_TEXT;
    return name.length > max ? `must be no more than ${max} characters` : undefined;
  }
  if (name.length > 253) return 'must be no more than 253 characters';
  if (!DNS1123_SUBDOMAIN.test(name)) return SUBDOMAIN_TEXT;
  return name.length > max ? `must be no more than ${max} characters` : undefined;
}

function isStringMap(value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string');
}

/**
 * Metadata problems of an object about to be stored. For a custom resource
 * (`warnings` given) a finalizer without a domain is a warning, as the API
 * server's custom-resource strategy says, not an error.
 */
export function validateMetadata(group: string, kind: string, meta: Json, namespaced: boolean, warnings?: { readonly list: string[]; readonly old: readonly string[] }): FieldError[] {
  const errors: FieldError[] = [];
  const name = meta['name'];
  const generateName = meta['generateName'];
  if (typeof generateName === 'string' && generateName !== '') {
    // a prefix: what is left after trimming a trailing '-' must be a valid name
    const problem = nameProblem(group, kind, generateName.replace(/-+$/, '') || 'x', true);
    if (problem) errors.push({ type: 'FieldValueInvalid', field: 'metadata.generateName', value: generateName, detail: problem });
  }
  if (typeof name !== 'string' || name === '') {
    errors.push({ type: 'FieldValueRequired', field: 'metadata.name', detail: 'name or generateName is required' });
  } else {
    const problem = nameProblem(group, kind, name);
    if (problem) errors.push({ type: 'FieldValueInvalid', field: 'metadata.name', value: name, detail: problem });
    // a kind's own tighter bound (CronJob's 52) is a second check after ObjectMeta's: a name past both is told both (found by the random run, seed 2026)
    const fact = factOf(group, kind);
    const ruleMax = fact.name === 'label' ? 63 : 253;
    if (fact.name !== 'path' && fact.maxNameLength !== undefined && fact.maxNameLength < ruleMax && name.length > ruleMax) {
      errors.push({ type: 'FieldValueInvalid', field: 'metadata.name', value: name, detail: `must be no more than ${fact.maxNameLength} characters` });
    }
  }
  if (namespaced && (typeof meta['namespace'] !== 'string' || meta['namespace'] === '')) {
    errors.push({ type: 'FieldValueRequired', field: 'metadata.namespace', detail: '' });
  }
  const labels = meta['labels'];
  if (labels !== undefined && labels !== null) {
    if (!isStringMap(labels)) errors.push({ type: 'FieldValueInvalid', field: 'metadata.labels', value: labels, detail: 'must be a map of strings' });
    else {
      // each problem a field error of its own, as the server lists them (measured on kube-apiserver v1.37.2)
      for (const [k, v] of Object.entries(labels)) {
        for (const detail of labelKeyProblems(k)) errors.push({ type: 'FieldValueInvalid', field: 'metadata.labels', value: k, detail });
        for (const detail of labelValueProblems(v)) errors.push({ type: 'FieldValueInvalid', field: 'metadata.labels', value: v, detail });
      }
    }
  }
  const annotations = meta['annotations'];
  if (annotations !== undefined && annotations !== null) {
    if (!isStringMap(annotations)) errors.push({ type: 'FieldValueInvalid', field: 'metadata.annotations', value: annotations, detail: 'must be a map of strings' });
    else {
      let size = 0;
      for (const [k, v] of Object.entries(annotations)) {
        for (const detail of labelKeyProblems(k)) errors.push({ type: 'FieldValueInvalid', field: 'metadata.annotations', value: k, detail });
        size += k.length + v.length;
      }
      if (size > 256 * 1024) errors.push({ type: 'FieldValueTooLong', field: 'metadata.annotations', detail: 'may not be more than 262144 bytes' });
    }
  }
  const owners = meta['ownerReferences'];
  if (owners !== undefined && owners !== null) {
    if (!Array.isArray(owners)) errors.push({ type: 'FieldValueInvalid', field: 'metadata.ownerReferences', value: owners, detail: 'must be a list' });
    else {
      // as apimachinery's ValidateOwnerReferences (before the finalizers, as ValidateObjectMetaAccessor orders them): each reference's problems, and at each controller after the first one naming both
      let controller: string | undefined;
      for (const [i, o] of (owners as Json[]).entries()) {
        const at = `metadata.ownerReferences[${i}]`;
        // an empty field is Required (kube-apiserver v1.37.2's words)
        for (const f of ['apiVersion', 'kind', 'name', 'uid'] as const) {
          if (typeof o?.[f] !== 'string' || o[f] === '') errors.push({ type: 'FieldValueRequired', field: `${at}.${f}`, detail: 'must not be empty' });
        }
        if (o?.['controller'] === true) {
          const current = `${String(o['kind'])}/${String(o['name'])}`;
          if (controller === undefined) controller = current;
          else errors.push({ type: 'FieldValueInvalid', field: 'metadata.ownerReferences', value: owners, detail: `Only one reference can have Controller set to true. Found "true" in references for ${controller} and ${current}` });
        }
      }
    }
  }
  const finalizers = meta['finalizers'];
  if (finalizers !== undefined && finalizers !== null) {
    if (!Array.isArray(finalizers) || finalizers.some((f) => typeof f !== 'string')) {
      errors.push({ type: 'FieldValueInvalid', field: 'metadata.finalizers', value: finalizers, detail: 'must be a list of strings' });
    } else {
      for (const [i, f] of (finalizers as string[]).entries()) {
        // a name's problems are told at the list, not its item (kube-apiserver v1.37.2); the missing domain at the item
        const problems = labelKeyProblems(f);
        for (const detail of problems) errors.push({ type: 'FieldValueInvalid', field: 'metadata.finalizers', value: f, detail });
        if (problems.length > 0) continue;
        if (!f.includes('/') && !STANDARD_FINALIZERS.has(f) && warnings) {
          if (!warnings.old.includes(f)) warnings.list.push(`metadata.finalizers: ${JSON.stringify(f)}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`);
        } else if (!f.includes('/') && !STANDARD_FINALIZERS.has(f)) {
          errors.push({ type: 'FieldValueInvalid', field: `metadata.finalizers[${i}]`, value: f, detail: 'name is neither a standard finalizer name nor is it fully qualified' });
        }
      }
    }
  }
  return errors;
}
