/**
 * Admission webhooks (AdmissionReview `admission.k8s.io/v1`) for one kind:
 * a validator (create, update with the old object, delete; allow with
 * warnings or deny, with field errors as the API server shows them) and a
 * defaulter (the object is changed in place; the answer is the JSON patch
 * from before to after). Paths are controller-runtime's:
 * `/validate-<group with dots as dashes>-<version>-<kind lower-cased>` and
 * `/mutate-...`.
 */
import { stringifyJson } from '@kubeloop/scheme';
import type { GroupVersionKind, KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { WebhookError } from './errors.js';
import { formatFieldError, formatFieldErrorBody } from './field-errors.js';
import { jsonPatchBetween } from './internal/json-patch.js';
import type { FieldError } from './field-errors.js';
import type { WebhookLogger } from './logger.js';
import type { Webhook, WebhookAnswer, WebhookCallContext, WebhookProblem } from './webhook.js';

/** A `metav1.Status`, as an admission response's `status` carries it. */
export interface AdmissionStatus {
  readonly status?: 'Success' | 'Failure';
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly causes?: readonly { readonly reason: string; readonly message: string; readonly field: string }[];
  };
}

/** The operation under admission. */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** `admission.k8s.io/v1` AdmissionRequest, as the API server sends it. `T` is the object's type. */
export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  /** Echoed in the response. */
  readonly uid: string;
  /** The kind of `object` (the version the webhook registered for). */
  readonly kind: GroupVersionKind;
  readonly resource: { readonly group: string; readonly version: string; readonly resource: string };
  readonly subResource?: string;
  /** The kind of the original request, before any conversion to `kind`'s version. */
  readonly requestKind?: GroupVersionKind;
  readonly requestResource?: { readonly group: string; readonly version: string; readonly resource: string };
  readonly requestSubResource?: string;
  /** Empty on a create with `generateName`. */
  readonly name?: string;
  readonly namespace?: string;
  readonly operation: AdmissionOperation;
  readonly userInfo: { readonly username?: string; readonly uid?: string; readonly groups?: readonly string[]; readonly extra?: Readonly<Record<string, readonly string[]>> };
  /** The new object (CREATE, UPDATE, CONNECT); null on DELETE. */
  readonly object?: T | null;
  /** The existing object (UPDATE, DELETE); null on CREATE. */
  readonly oldObject?: T | null;
  readonly dryRun?: boolean;
  /** CreateOptions / UpdateOptions / DeleteOptions of the request. */
  readonly options?: unknown;
}

/** `admission.k8s.io/v1` AdmissionResponse. */
export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  /** Why a request is denied. The JSON name is `status` (Go's field is `Result`). */
  readonly status?: AdmissionStatus;
  /** Base64 of a JSON patch (RFC 6902). */
  readonly patch?: string;
  readonly patchType?: 'JSONPatch';
  readonly warnings?: readonly string[];
  readonly auditAnnotations?: Readonly<Record<string, string>>;
}

/** `admission.k8s.io/v1` AdmissionReview. */
export interface AdmissionReview<T extends KubeObject = KubeObject> {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly request?: AdmissionRequest<T>;
  readonly response?: AdmissionResponse;
}

/** What a validator or defaulter gets besides the object. */
export interface AdmissionContext<T extends KubeObject = KubeObject> {
  /** The whole request: user, operation, dry run, options, the original kind. */
  readonly request: AdmissionRequest<T>;
  /** Aborts at the handler's deadline. */
  readonly signal: AbortSignal;
  readonly log: WebhookLogger;
}

/** A decision. Build it with {@link Admission}. */
export type AdmissionVerdict =
  | { readonly allowed: true; readonly warnings: readonly string[] }
  | { readonly allowed: false; readonly warnings: readonly string[]; readonly status: AdmissionStatus }
  | { readonly allowed: false; readonly warnings: readonly string[]; readonly fieldErrors: readonly FieldError[] };

/**
 * Named constructors for admission decisions.
 *
 * @example
 * ```ts
 * const validator: Validator<HardDisk> = {
 *   validateUpdate(disk, old) {
 *     if (disk.spec?.storageClass !== old.spec?.storageClass) return Admission.invalid([fieldError.forbidden('spec.storageClass', 'the storage class cannot change')]);
 *     if (disk.metadata?.annotations?.['crd-demo.io/legacy']) return Admission.allow('the crd-demo.io/legacy annotation is deprecated');
 *     return Admission.allow();
 *   },
 * };
 * ```
 */
export const Admission = Object.freeze({
  /** Allow, with warnings the API server shows the user (kubectl prints them as `Warning: ...`). */
  allow: (...warnings: string[]): AdmissionVerdict => ({ allowed: true, warnings }),
  /** Deny with a message; the code defaults to 403 (reason `Forbidden`), as controller-runtime's `Denied`. */
  deny: (message: string, options: { readonly code?: number; readonly reason?: string; readonly warnings?: readonly string[] } = {}): AdmissionVerdict => {
    const reason = options.reason ?? (options.code === undefined ? 'Forbidden' : undefined);
    return {
      allowed: false,
      warnings: options.warnings ?? [],
      status: { status: 'Failure', code: options.code ?? 403, message, ...(reason === undefined ? {} : { reason }) },
    };
  },
  /** Deny as `Invalid` (HTTP 422), naming each field, as the API server's own validation does. */
  invalid: (errors: readonly FieldError[], options: { readonly warnings?: readonly string[] } = {}): AdmissionVerdict => ({
    allowed: false,
    warnings: options.warnings ?? [],
    fieldErrors: errors,
  }),
});

/**
 * What a validator returns: nothing (allow), a list of field errors (deny as
 * `Invalid` unless empty), or a verdict from {@link Admission}.
 */
export type ValidationResult = AdmissionVerdict | readonly FieldError[] | void | undefined;

/**
 * A validator for objects of type `T`. A missing method allows that
 * operation. A throw denies the request with code 500 and the error's
 * message (a bug, not a verdict: return `Admission.deny` for that).
 *
 * @example
 * ```ts
 * const hardDiskValidator: Validator<HardDisk> = {
 *   validateCreate: (disk) => (disk.spec?.size ? undefined : [fieldError.required('spec.size')]),
 *   validateUpdate: (disk, old) => (disk.spec?.storageClass === old.spec?.storageClass ? undefined : [fieldError.forbidden('spec.storageClass', 'the storage class cannot change')]),
 *   validateDelete: (disk) => (disk.metadata?.labels?.['protected'] === 'true' ? Admission.deny('this disk is protected') : undefined),
 * };
 * ```
 */
export interface Validator<T extends KubeObject> {
  validateCreate?(obj: T, context: AdmissionContext<T>): ValidationResult | Promise<ValidationResult>;
  validateUpdate?(obj: T, oldObj: T, context: AdmissionContext<T>): ValidationResult | Promise<ValidationResult>;
  validateDelete?(obj: T, context: AdmissionContext<T>): ValidationResult | Promise<ValidationResult>;
}

/**
 * A defaulter: changes the object in place (or returns a replacement).
 * The webhook answers with the JSON patch from the object as received to
 * the object after the defaulter. Runs on CREATE and UPDATE.
 */
export interface Defaulter<T extends KubeObject> {
  default(obj: T, context: AdmissionContext<T>): T | void | Promise<T | void>;
}

/** A defaulter as a function. */
export type DefaulterFn<T extends KubeObject> = (obj: T, context: AdmissionContext<T>) => T | void | Promise<T | void>;

/** Options for {@link validatingWebhook} and {@link mutatingWebhook}. */
export interface AdmissionWebhookOptions {
  /** The path. Default: controller-runtime's (`validatePath(kind)` / `mutatePath(kind)`). */
  readonly path?: string;
}

function pathFor(prefix: 'validate' | 'mutate', kind: GroupVersionKind): string {
  return `/${prefix}-${kind.group.replaceAll('.', '-')}-${kind.version}-${kind.kind.toLowerCase()}`;
}

/**
 * controller-runtime's validating webhook path for a kind.
 *
 * @example
 * ```ts
 * validatePath({ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' }); // '/validate-crd-demo-io-v1-harddisk'
 * validatePath({ group: '', version: 'v1', kind: 'Pod' });                // '/validate--v1-pod'
 * ```
 */
export function validatePath(kind: GroupVersionKind): string {
  return pathFor('validate', kind);
}

/**
 * controller-runtime's mutating (defaulting) webhook path for a kind.
 *
 * @example
 * ```ts
 * mutatePath({ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk' }); // '/mutate-crd-demo-io-v1-harddisk'
 * ```
 */
export function mutatePath(kind: GroupVersionKind): string {
  return pathFor('mutate', kind);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function review(response: AdmissionResponse): AdmissionReview {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

function uidOf(body: unknown): string {
  const request = isObject(body) ? body['request'] : undefined;
  return isObject(request) && typeof request['uid'] === 'string' ? request['uid'] : '';
}

function errored(uid: string, code: number, message: string): WebhookAnswer {
  // HTTP 200: the API server shows a denial's message to the user; any other status is a failed call.
  return { status: 200, body: review({ uid, allowed: false, status: { status: 'Failure', code, message } }) };
}

function failureAnswer(problem: WebhookProblem): WebhookAnswer {
  return errored(uidOf(problem.body), problem.code, problem.message);
}

/** Check the review and the request's kind; returns the request or an answer that refuses it. */
function decode<T extends KubeObject>(body: unknown, kind: ResourceDescriptor<T>): AdmissionRequest<T> | WebhookAnswer {
  const uid = uidOf(body);
  if (!isObject(body) || body['kind'] !== 'AdmissionReview' || body['apiVersion'] !== 'admission.k8s.io/v1') {
    const got = isObject(body) ? `${String(body['apiVersion'])} ${String(body['kind'])}` : typeof body;
    return { ...errored(uid, 400, `expected an admission.k8s.io/v1 AdmissionReview, got ${got}`), problem: 'MalformedRequest' };
  }
  const request = body['request'];
  if (!isObject(request) || typeof request['uid'] !== 'string' || request['uid'] === '' || typeof request['operation'] !== 'string') {
    return { ...errored(uid, 400, 'the AdmissionReview has no request with a uid and an operation'), problem: 'MalformedRequest' };
  }
  const got = request['kind'];
  if (!isObject(got) || got['group'] !== kind.group || got['kind'] !== kind.kind) {
    const shown = isObject(got) ? `${String(got['kind'])}.${String(got['version'])}.${String(got['group'])}` : 'no kind';
    return { ...errored(uid, 400, `this webhook admits ${kind.kind}.${kind.group}, the request is for ${shown}`), problem: 'MalformedRequest' };
  }
  if (got['version'] !== kind.version) {
    return {
      ...errored(
        uid,
        400,
        `this webhook admits ${kind.kind}.${kind.version}.${kind.group}, the request holds version ${String(got['version'])}: register the webhook's rules for ${kind.version} only (with matchPolicy Equivalent the API server converts)`,
      ),
      problem: 'MalformedRequest',
    };
  }
  return request as unknown as AdmissionRequest<T>;
}

function qualifiedKind(kind: GroupVersionKind): string {
  return kind.group ? `${kind.kind}.${kind.group}` : kind.kind;
}

/**
 * apimachinery's `NewInvalid` Status: code 422, reason `Invalid`, a cause per
 * field, and the message the API server would write.
 *
 * @example
 * ```ts
 * invalidStatus(HardDisk, 'd1', [fieldError.invalid('spec.size', -1, 'must be positive')]).message;
 * // 'HardDisk.crd-demo.io "d1" is invalid: spec.size: Invalid value: -1: must be positive'
 * ```
 */
export function invalidStatus(kind: GroupVersionKind, name: string, errors: readonly FieldError[]): AdmissionStatus {
  const lines = errors.map(formatFieldError);
  const head = `${qualifiedKind(kind)} ${JSON.stringify(name)} is invalid`;
  const message = lines.length === 0 ? head : lines.length === 1 ? `${head}: ${lines[0]!}` : `${head}: [${lines.join(', ')}]`;
  return {
    status: 'Failure',
    code: 422,
    reason: 'Invalid',
    message,
    details: { name, group: kind.group, kind: kind.kind, causes: errors.map((e) => ({ reason: e.type, message: formatFieldErrorBody(e), field: e.field })) },
  };
}

function toVerdict(result: ValidationResult): AdmissionVerdict {
  if (result === undefined || result === null) return Admission.allow();
  if (Array.isArray(result)) return result.length === 0 ? Admission.allow() : Admission.invalid(result as readonly FieldError[]);
  const verdict = result as AdmissionVerdict;
  if (typeof verdict.allowed !== 'boolean') throw new TypeError('a validator must return undefined, an array of field errors, or an Admission verdict');
  return verdict;
}

function respond(request: AdmissionRequest, verdict: AdmissionVerdict): AdmissionResponse {
  const warnings = verdict.warnings.length ? { warnings: verdict.warnings } : {};
  if (verdict.allowed) return { uid: request.uid, allowed: true, ...warnings };
  const name = request.name || ((request.object ?? request.oldObject)?.metadata?.name ?? '');
  const status = 'fieldErrors' in verdict ? invalidStatus(request.kind, name, verdict.fieldErrors) : verdict.status;
  return { uid: request.uid, allowed: false, status, ...warnings };
}

function requireDescriptor(kind: ResourceDescriptor, what: string): void {
  if (!kind || typeof kind.group !== 'string' || typeof kind.version !== 'string' || typeof kind.kind !== 'string' || !kind.kind || !kind.version) {
    throw new WebhookError('InvalidOptions', `${what} needs a kind descriptor with group, version and kind`);
  }
}

/**
 * A validating admission webhook for one kind, at
 * `/validate-<group>-<version>-<kind>` unless `options.path` says otherwise.
 *
 * @example
 * ```ts
 * server.register(validatingWebhook(HardDisk, {
 *   validateCreate: (disk) => (disk.spec?.size ? undefined : [fieldError.required('spec.size')]),
 * }));
 * // kubectl apply of a disk with size -1:
 * // admission webhook "vharddisk.crd-demo.io" denied the request: HardDisk.crd-demo.io "d1" is invalid: spec.size: Invalid value: -1: must be positive
 * ```
 */
export function validatingWebhook<T extends KubeObject>(kind: ResourceDescriptor<T>, validator: Validator<T>, options: AdmissionWebhookOptions = {}): Webhook {
  requireDescriptor(kind, 'validatingWebhook');
  if (!validator || typeof validator !== 'object') throw new WebhookError('InvalidOptions', 'validatingWebhook needs a validator object');
  return {
    path: options.path ?? validatePath(kind),
    failure: failureAnswer,
    async handle(body: unknown, call: WebhookCallContext): Promise<WebhookAnswer> {
      const request = decode(body, kind);
      if ('status' in request && 'body' in request) return request;
      const context: AdmissionContext<T> = { request, signal: call.signal, log: call.log };
      const object = request.object ?? undefined;
      const old = request.oldObject ?? undefined;
      let result: ValidationResult;
      switch (request.operation) {
        case 'CREATE':
          if (!object) return { ...errored(request.uid, 400, 'a CREATE request without an object'), problem: 'MalformedRequest' };
          result = await validator.validateCreate?.(object, context);
          break;
        case 'UPDATE':
          if (!object || !old) return { ...errored(request.uid, 400, 'an UPDATE request needs both object and oldObject'), problem: 'MalformedRequest' };
          result = await validator.validateUpdate?.(object, old, context);
          break;
        case 'DELETE':
          // The API server sends the object being deleted as oldObject (null for a whole-collection delete on old servers).
          if (!old) return { status: 200, body: review({ uid: request.uid, allowed: true }) };
          result = await validator.validateDelete?.(old, context);
          break;
        default:
          return { status: 200, body: review({ uid: request.uid, allowed: true }) };
      }
      return { status: 200, body: review(respond(request, toVerdict(result))) };
    },
  };
}

/**
 * A mutating (defaulting) admission webhook for one kind, at
 * `/mutate-<group>-<version>-<kind>` unless `options.path` says otherwise.
 * The defaulter gets a copy of the object to change; the answer is the JSON
 * patch from the original to the changed copy (none when nothing changed).
 *
 * @example
 * ```ts
 * server.register(mutatingWebhook(HardDisk, (disk) => {
 *   if (disk.spec) disk.spec.storageClass ??= 'standard';
 * }));
 * ```
 */
export function mutatingWebhook<T extends KubeObject>(kind: ResourceDescriptor<T>, defaulter: Defaulter<T> | DefaulterFn<T>, options: AdmissionWebhookOptions = {}): Webhook {
  requireDescriptor(kind, 'mutatingWebhook');
  const run: DefaulterFn<T> =
    typeof defaulter === 'function'
      ? defaulter
      : defaulter && typeof defaulter.default === 'function'
        ? (obj, ctx) => defaulter.default(obj, ctx)
        : (() => {
            throw new WebhookError('InvalidOptions', 'mutatingWebhook needs a defaulter function or an object with default()');
          })();
  return {
    path: options.path ?? mutatePath(kind),
    failure: failureAnswer,
    async handle(body: unknown, call: WebhookCallContext): Promise<WebhookAnswer> {
      const request = decode(body, kind);
      if ('status' in request && 'body' in request) return request;
      if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') {
        return { status: 200, body: review({ uid: request.uid, allowed: true }) };
      }
      const original = request.object;
      if (!isObject(original)) return { ...errored(request.uid, 400, `a ${request.operation} request without an object`), problem: 'MalformedRequest' };
      const copy = structuredClone(original);
      const returned = await run(copy, { request, signal: call.signal, log: call.log });
      const after = returned === undefined ? copy : returned;
      if (!isObject(after)) throw new TypeError('the defaulter returned something that is not an object');
      const ops = jsonPatchBetween(original, after);
      if (ops.length === 0) return { status: 200, body: review({ uid: request.uid, allowed: true }) };
      return {
        status: 200,
        body: review({ uid: request.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(stringifyJson(ops)).toString('base64') }),
      };
    },
  };
}
