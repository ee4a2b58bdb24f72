/**
 * The naming rules of the Kubernetes API for groups, versions, kinds and
 * resources, as the API server and apiextensions validation apply them.
 * Each check returns `undefined` when the name is valid, else a short
 * explanation to put in an error message.
 */

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const KIND = /^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$/;
/** Versions the API server orders by maturity: v1, v2beta1, v1alpha3. */
const KUBE_VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;

/** A group: `''` (core) or a DNS-1123 subdomain such as `apps` or `crd-demo.io`. */
export function groupProblem(group: string): string | undefined {
  if (group === '') return undefined;
  if (group.length > 253) return `group "${group}" is longer than 253 characters`;
  if (!DNS1123_SUBDOMAIN.test(group)) {
    return `group "${group}" must be a lowercase DNS subdomain (a-z, 0-9, "-" and ".", starting and ending with a letter or digit, e.g. "apps" or "crd-demo.io")`;
  }
  return undefined;
}

/** A version: a DNS-1035 label such as `v1` or `v1beta1`. */
export function versionProblem(version: string): string | undefined {
  if (version === '') return 'version must not be empty';
  if (version.length > 63) return `version "${version}" is longer than 63 characters`;
  if (!DNS1035_LABEL.test(version)) {
    return `version "${version}" must be a lowercase DNS label starting with a letter (a-z, 0-9 and "-", e.g. "v1" or "v1beta1")`;
  }
  return undefined;
}

/** A kind: a name that is a DNS-1035 label once lowercased, such as `Deployment`. */
export function kindProblem(kind: string): string | undefined {
  if (kind === '') return 'kind must not be empty';
  if (kind.length > 63) return `kind "${kind}" is longer than 63 characters`;
  if (!KIND.test(kind)) return `kind "${kind}" must start with a letter and contain only letters, digits and "-" (e.g. "Deployment")`;
  return undefined;
}

/** A resource (plural): a lowercase DNS-1035 label such as `deployments`. */
export function resourceProblem(resource: string): string | undefined {
  if (resource === '') return 'resource must not be empty';
  if (resource.length > 63) return `resource "${resource}" is longer than 63 characters`;
  if (!DNS1035_LABEL.test(resource)) {
    return `resource "${resource}" must be a lowercase DNS label starting with a letter (a-z, 0-9 and "-", e.g. "deployments")`;
  }
  return undefined;
}

/** True for versions of the form the API server orders by maturity (v1, v2beta1, v1alpha3). */
export function isKubeVersion(version: string): boolean {
  return KUBE_VERSION.test(version);
}

/** A value rendered for an error message: strings quoted, everything else summarised. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return value.toString();
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  return 'undefined';
}
