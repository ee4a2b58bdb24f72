/**
 * `metav1.Status` bodies shaped as the API server shapes them, so the
 * client's typed guards (`isNotFound`, `isConflict`, ...) and anything that
 * reads `details` see the same thing on the fake as on a real server.
 */

export interface StatusCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

export interface StatusBody {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: Record<string, never>;
  readonly status: 'Failure' | 'Success';
  readonly message?: string;
  readonly reason?: string;
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly uid?: string;
    readonly causes?: readonly StatusCause[];
    readonly retryAfterSeconds?: number;
  };
  readonly code: number;
}

/** An answer that is not a success: thrown inside the fake, turned into a response at the edge. */
export class ApiError extends Error {
  constructor(
    readonly body: StatusBody,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(body.message ?? body.reason ?? `status ${body.code}`);
  }
  get code(): number {
    return this.body.code;
  }
}

/** What a resource is called in messages: `configmaps`, `deployments.apps`. */
export interface GroupResource {
  readonly group: string;
  readonly resource: string;
}

export function qualified(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

function failure(code: number, reason: string | undefined, message: string, details?: StatusBody['details']): StatusBody {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(reason ? { reason } : {}),
    ...(details ? { details } : {}),
    code,
  };
}

function grDetails(gr: GroupResource, name: string): NonNullable<StatusBody['details']> {
  return { name, ...(gr.group ? { group: gr.group } : {}), kind: gr.resource };
}

export function notFound(gr: GroupResource, name: string): ApiError {
  return new ApiError(failure(404, 'NotFound', `${qualified(gr)} "${name}" not found`, grDetails(gr, name)));
}

/** 409 AlreadyExists; the store says so first when the object there `beingDeleted` (has a deletionTimestamp). */
export function alreadyExists(gr: GroupResource, name: string, beingDeleted = false): ApiError {
  return new ApiError(failure(409, 'AlreadyExists', `${beingDeleted ? 'object is being deleted: ' : ''}${qualified(gr)} "${name}" already exists`, grDetails(gr, name)));
}

export function conflict(gr: GroupResource, name: string, why: string): ApiError {
  return new ApiError(failure(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${why}`, grDetails(gr, name)));
}

export const MODIFIED = 'the object has been modified; please apply your changes to the latest version and try again';

/** One field error of an Invalid answer. */
export interface FieldError {
  /** The cause's reason; types other than those in TYPE_TEXT come with their `text`. */
  readonly type: string;
  readonly field: string;
  /** The bad value, shown in the message (omitted for Required/Forbidden). */
  readonly value?: unknown;
  readonly detail: string;
  /** The message after `<field>: ` exactly as the server writes it, when known (schema validation gives it). */
  readonly text?: string;
}

const TYPE_TEXT: Record<string, string> = {
  FieldValueInvalid: 'Invalid value',
  FieldValueRequired: 'Required value',
  FieldValueForbidden: 'Forbidden',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueTooLong: 'Too long',
  FieldValueDuplicate: 'Duplicate value',
};

function fieldErrorText(e: FieldError): string {
  if (e.text !== undefined) return e.text;
  const head = TYPE_TEXT[e.type] ?? 'Invalid value';
  const shown = e.value === undefined ? '' : `: ${JSON.stringify(e.value) ?? 'null'}`;
  return `${head}${shown}${e.detail ? `: ${e.detail}` : ''}`;
}

export function invalid(group: string, kind: string, name: string, errors: readonly FieldError[]): ApiError {
  // the message lists each distinct error once, as Go's ErrorList.ToAggregate does; the causes keep every one given (a custom resource's metadata errors come twice; a built-in kind's identical errors are folded before, in strategy.ts)
  const parts = [...new Set(errors.map((e) => (e.field === '' ? fieldErrorText(e) : `${e.field}: ${fieldErrorText(e)}`)))];
  const summary = parts.length === 1 ? parts[0]! : `[${parts.join(', ')}]`;
  const label = group ? `${kind}.${group}` : kind;
  return new ApiError(
    failure(422, 'Invalid', `${label} "${name}" is invalid: ${summary}`, {
      // empty ones left out, as Go's omitempty does
      ...(name ? { name } : {}),
      ...(group ? { group } : {}),
      ...(kind ? { kind } : {}),
      causes: errors.map((e) => ({ reason: e.type, message: fieldErrorText(e), field: e.field })),
    }),
  );
}

export function badRequest(message: string): ApiError {
  return new ApiError(failure(400, 'BadRequest', message));
}

export function forbidden(gr: GroupResource, name: string, why: string, causes?: readonly StatusCause[]): ApiError {
  return new ApiError(
    failure(403, 'Forbidden', `${qualified(gr)}${name ? ` "${name}"` : ''} is forbidden: ${why}`, { ...grDetails(gr, name), ...(causes ? { causes } : {}) }),
  );
}

export function methodNotAllowed(): ApiError {
  return new ApiError(failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {}));
}

export function resourceNotFound(): ApiError {
  return new ApiError(failure(404, 'NotFound', 'the server could not find the requested resource', {}));
}

export function unsupportedMediaType(accepted: readonly string[]): ApiError {
  return new ApiError(
    failure(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`, {}),
  );
}

export function expired(message: string): ApiError {
  return new ApiError(failure(410, 'Expired', message));
}

export function gone(message: string): ApiError {
  return new ApiError(failure(410, 'Gone', message));
}

export function internalError(message: string): ApiError {
  return new ApiError(failure(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] }));
}

/** A Status of any code and reason (for injected faults). */
export function statusOf(code: number, reason: string | undefined, message: string, details?: StatusBody['details']): StatusBody {
  return failure(code, reason, message, details);
}

/** The answer to a successful delete of a kind that answers with a Status (it names no code). */
export function success(gr: GroupResource, name: string, uid: string): Omit<StatusBody, 'code'> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { ...grDetails(gr, name), uid } };
}

/** Thrown by an interceptor to drop a request with no answer (a network error on the client's side). */
export class NetworkFault extends Error {}
