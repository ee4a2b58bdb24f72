/**
 * Conversion webhooks (ConversionReview `apiextensions.k8s.io/v1`), hub and
 * spokes as controller-runtime's: per kind, one version is the hub and every
 * other version (a spoke) converts to and from it, so N versions need 2(N-1)
 * functions instead of N(N-1). One `/convert` endpoint serves every
 * registered kind, converts the objects of a review in order, and answers a
 * failure naming the object and the versions when any conversion fails.
 *
 * Numbers are exact: the review is read with `parseJson` (an integer beyond
 * 2^53 arrives as a `bigint`) and answered with `stringifyJson`. A
 * conversion that cannot express an object refuses it with
 * {@link refuseConversion} (a Failure naming the field); a converted object
 * holding a value JSON cannot carry (`NaN`, `undefined` in a list, a
 * function) or an integer number beyond 2^53 the input did not have (a
 * `Number(...)` that rounded) is refused the same way, never answered as a
 * Success with a value nobody wrote.
 */
import type { GroupVersionKind, KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { describeError, WebhookError } from './errors.js';
import { fieldError, fieldPath, formatFieldError } from './field-errors.js';
import type { FieldError } from './field-errors.js';
import type { Webhook, WebhookAnswer, WebhookProblem } from './webhook.js';

/** A spoke: a version of a kind that converts to and from the hub version `H`. */
export interface Spoke<S extends KubeObject, H extends KubeObject> {
  /** The spoke version's descriptor. */
  readonly kind: ResourceDescriptor<S>;
  /** Spoke → hub. `apiVersion` and `kind` are set afterwards; `metadata` is copied when the result has none. */
  toHub(obj: S): H | Promise<H>;
  /** Hub → spoke. `apiVersion` and `kind` are set afterwards; `metadata` is copied when the result has none. */
  fromHub(hub: H): S | Promise<S>;
}

/** A kind's conversions: the hub and its spokes. Build it with {@link defineConversion}. */
export interface KindConversion<H extends KubeObject = KubeObject> {
  readonly hub: ResourceDescriptor<H>;
  readonly spokes: readonly Spoke<KubeObject, H>[];
}

/**
 * A spoke of hub `H`, typed on both sides.
 *
 * @example
 * ```ts
 * // v1 says `size: '10Gi'`, v2 (the hub) `capacity: { value: 10, unit: 'Gi' }`: BigInt, never Number (an int64 may pass 2^53).
 * const v1 = spoke<HardDisk, HardDiskV2>(HardDisk, {
 *   toHub: (d) => ({ ...d, apiVersion: 'crd-demo.io/v2', kind: 'HardDisk', spec: { capacity: { value: BigInt(/^\d+/.exec(d.spec?.size ?? '')?.[0] ?? 0), unit: 'Gi' } } }),
 *   fromHub: (d) => ({ ...d, apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', spec: { size: `${d.spec?.capacity?.value ?? 0}${d.spec?.capacity?.unit ?? 'Gi'}` } }),
 * });
 * ```
 */
export function spoke<S extends KubeObject, H extends KubeObject>(
  kind: ResourceDescriptor<S>,
  functions: { toHub(obj: S): H | Promise<H>; fromHub(hub: H): S | Promise<S> },
): Spoke<S, H> {
  if (typeof functions?.toHub !== 'function' || typeof functions.fromHub !== 'function') {
    throw new WebhookError('InvalidOptions', `spoke ${kind?.kind}.${kind?.version}: toHub and fromHub must be functions`);
  }
  return Object.freeze({ kind, toHub: (obj: S) => functions.toHub(obj), fromHub: (hub: H) => functions.fromHub(hub) });
}

/**
 * The error a spoke's `toHub` / `fromHub` throws for an object it cannot
 * convert without inventing or losing a value. The webhook answers the
 * review with `result.status: Failure` and a message naming the object and
 * each field (`spec.capacity.value: Invalid value: "x": must be a whole
 * number`); the API server passes it to the client that asked.
 *
 * @example
 * ```ts
 * import type { HardDisk, HardDiskV2 } from '@kubeloop/example-harddisk-operator';
 *
 * function toV1(disk: HardDiskV2): HardDisk {
 *   const capacity = disk.spec?.capacity;
 *   if (!capacity) throw refuseConversion(fieldError.required('spec.capacity', 'v1 needs a size'));
 *   return { metadata: disk.metadata ?? {}, spec: { size: `${capacity.value}${capacity.unit}` } }; // a bigint value prints its digits
 * }
 * ```
 */
export function refuseConversion(...errors: readonly FieldError[]): WebhookError {
  const message = errors.length > 0 ? errors.map(formatFieldError).join('; ') : 'the object cannot be converted';
  return new WebhookError('ConversionRefused', message, { fieldErrors: errors });
}

/** Integers beyond 2^53 held as numbers anywhere in `value` (input floats such as 1e20 that pass through untouched). */
function unsafeNumbers(value: unknown, into: Set<number>): Set<number> {
  if (typeof value === 'number') {
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) into.add(value);
  } else if (typeof value === 'object' && value !== null) {
    for (const v of Array.isArray(value) ? value : Object.values(value)) unsafeNumbers(v, into);
  }
  return into;
}

/**
 * Values of a converted object that JSON would change or drop, and integers
 * beyond 2^53 the conversion made as numbers (rounded: the input's were
 * bigints). `allowed` holds the input's own unsafe numbers (floats).
 */
function unfaithful(value: unknown, path: (string | number)[], allowed: ReadonlySet<number>, out: FieldError[], inList = false): FieldError[] {
  if (out.length >= 10) return out;
  const at = (): string => fieldPath(...path);
  switch (typeof value) {
    case 'number':
      if (!Number.isFinite(value)) out.push(fieldError.invalid(at(), value, 'JSON has no such number; the conversion made it'));
      else if (Number.isInteger(value) && !Number.isSafeInteger(value) && !allowed.has(value)) {
        out.push(fieldError.invalid(at(), value, 'an integer beyond 2^53 held as a JavaScript number is rounded; the conversion must carry it as a bigint'));
      }
      return out;
    case 'undefined':
      if (inList) out.push(fieldError.invalid(at(), value, 'undefined in a list would be written as null'));
      return out;
    case 'function':
    case 'symbol':
      out.push(fieldError.invalid(at(), String(typeof value), 'not a JSON value'));
      return out;
    case 'object':
      if (value === null) return out;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) unfaithful(value[i], [...path, i], allowed, out, true);
      } else if (typeof (value as { toJSON?: unknown }).toJSON !== 'function') {
        for (const [k, v] of Object.entries(value)) unfaithful(v, [...path, k], allowed, out);
      }
      return out;
    default:
      return out;
  }
}

function label(kind: GroupVersionKind): string {
  return `${kind.kind}.${kind.version}${kind.group ? `.${kind.group}` : ''}`;
}

/**
 * A kind's hub and spokes. Every spoke must be the hub's group and kind, each
 * in a version of its own.
 *
 * @throws {@link WebhookError} `InvalidOptions` for a spoke of another kind, or two with one version.
 *
 * @example
 * ```ts
 * const hardDiskConversion = defineConversion(HardDiskV2, [hardDiskV1Spoke]);
 * server.register(conversionWebhook([hardDiskConversion])); // at /convert
 * ```
 */
export function defineConversion<H extends KubeObject>(hub: ResourceDescriptor<H>, spokes: readonly Spoke<KubeObject, H>[]): KindConversion<H> {
  if (!hub || typeof hub.group !== 'string' || typeof hub.version !== 'string' || typeof hub.kind !== 'string') {
    throw new WebhookError('InvalidOptions', 'defineConversion needs the hub kind descriptor');
  }
  const versions = new Set([hub.version]);
  for (const s of spokes) {
    if (!s?.kind || s.kind.group !== hub.group || s.kind.kind !== hub.kind) {
      throw new WebhookError('InvalidOptions', `defineConversion(${label(hub)}): spoke ${s?.kind ? label(s.kind) : '(no kind)'} is not a version of the same group and kind`);
    }
    if (versions.has(s.kind.version)) {
      throw new WebhookError('InvalidOptions', `defineConversion(${label(hub)}): version ${s.kind.version} appears twice (the hub's version cannot also be a spoke)`);
    }
    versions.add(s.kind.version);
  }
  return Object.freeze({ hub, spokes: Object.freeze([...spokes]) });
}

/** `apiextensions.k8s.io/v1` ConversionRequest. */
export interface ConversionRequest {
  readonly uid: string;
  /** The version to convert every object to, e.g. `crd-demo.io/v2`. */
  readonly desiredAPIVersion: string;
  readonly objects: readonly KubeObject[];
}

/** `apiextensions.k8s.io/v1` ConversionResponse. */
export interface ConversionResponse {
  readonly uid: string;
  readonly convertedObjects: readonly KubeObject[];
  readonly result: { readonly status: 'Success' | 'Failure'; readonly message?: string };
}

/** `apiextensions.k8s.io/v1` ConversionReview. */
export interface ConversionReview {
  readonly apiVersion: 'apiextensions.k8s.io/v1';
  readonly kind: 'ConversionReview';
  readonly request?: ConversionRequest;
  readonly response?: ConversionResponse;
}

/** Options for {@link conversionWebhook}. */
export interface ConversionWebhookOptions {
  /** The path. Default: `/convert` (controller-runtime's). */
  readonly path?: string;
}

interface Route {
  readonly hub: ResourceDescriptor;
  readonly spokes: ReadonlyMap<string, Spoke<KubeObject, KubeObject>>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function splitApiVersion(apiVersion: string): { group: string; version: string } | undefined {
  const parts = apiVersion.split('/');
  if (parts.length === 1 && parts[0]) return { group: '', version: parts[0] };
  if (parts.length === 2 && parts[0] && parts[1]) return { group: parts[0], version: parts[1] };
  return undefined;
}

function answer(uid: string, result: ConversionResponse['result'], convertedObjects: readonly KubeObject[] = []): ConversionReview {
  return { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', response: { uid, convertedObjects, result } };
}

function failed(uid: string, message: string, status = 200): WebhookAnswer {
  return { status, body: answer(uid, { status: 'Failure', message }), problem: status === 400 ? 'MalformedRequest' : 'ConversionFailed' };
}

function uidOf(body: unknown): string {
  const request = isObject(body) ? body['request'] : undefined;
  return isObject(request) && typeof request['uid'] === 'string' ? request['uid'] : '';
}

/**
 * The conversion webhook for any number of kinds, at `/convert`. Each object
 * converts spoke → hub → spoke (skipping a step when one side is the hub,
 * and copying an object already in the desired version). The answer keeps
 * the request's order. A failed conversion fails the whole review with a
 * message naming the object, its position and both versions (the API server
 * accepts all or nothing).
 *
 * @throws {@link WebhookError} `InvalidOptions` when two conversions are for the same kind.
 *
 * @example
 * ```ts
 * server.register(conversionWebhook([defineConversion(HardDiskV2, [hardDiskV1Spoke])]));
 * // CRD: spec.conversion = { strategy: 'Webhook', webhook: { clientConfig: { service: { ..., path: '/convert' } }, conversionReviewVersions: ['v1'] } }
 * ```
 */
export function conversionWebhook(conversions: readonly KindConversion[], options: ConversionWebhookOptions = {}): Webhook {
  const routes = new Map<string, Route>();
  for (const c of conversions) {
    if (!c?.hub) throw new WebhookError('InvalidOptions', 'conversionWebhook takes conversions made by defineConversion');
    const key = `${c.hub.group}/${c.hub.kind}`;
    if (routes.has(key)) throw new WebhookError('InvalidOptions', `conversionWebhook: ${c.hub.kind}.${c.hub.group} has two conversions`);
    routes.set(key, { hub: c.hub, spokes: new Map(c.spokes.map((s) => [s.kind.version, s])) });
  }

  async function convertOne(route: Route, obj: Record<string, unknown>, from: string, to: string): Promise<KubeObject> {
    const metadata = obj['metadata'];
    const toHub = from === route.hub.version ? undefined : route.spokes.get(from);
    const fromHub = to === route.hub.version ? undefined : route.spokes.get(to);
    // The objects were parsed from this request's body: nothing else holds them, so they are handed over as they are.
    let current = obj as KubeObject;
    if (toHub) current = await toHub.toHub(current);
    if (fromHub) current = await fromHub.fromHub(current);
    if (!isObject(current)) throw new TypeError(`the conversion returned ${current === null ? 'null' : typeof current}, not an object`);
    const out = current;
    if (out['metadata'] === undefined && metadata !== undefined) out['metadata'] = metadata;
    out['apiVersion'] = route.hub.group ? `${route.hub.group}/${to}` : to;
    out['kind'] = route.hub.kind;
    return out;
  }

  return {
    path: options.path ?? '/convert',
    failure(problem: WebhookProblem): WebhookAnswer {
      // A review that cannot be read is a bad request (controller-runtime answers 400); one that can gets a Failure result.
      const uid = uidOf(problem.body);
      return { status: uid ? 200 : problem.code, body: answer(uid, { status: 'Failure', message: problem.message }) };
    },
    async handle(body: unknown): Promise<WebhookAnswer> {
      if (!isObject(body) || body['apiVersion'] !== 'apiextensions.k8s.io/v1' || body['kind'] !== 'ConversionReview') {
        const got = isObject(body) ? `${String(body['apiVersion'])} ${String(body['kind'])}` : typeof body;
        return failed(uidOf(body), `expected an apiextensions.k8s.io/v1 ConversionReview, got ${got}`, 400);
      }
      const request = body['request'];
      if (!isObject(request) || typeof request['uid'] !== 'string' || request['uid'] === '') {
        return failed('', 'the ConversionReview has no request with a uid', 400);
      }
      const uid = request['uid'];
      const desired = typeof request['desiredAPIVersion'] === 'string' ? splitApiVersion(request['desiredAPIVersion']) : undefined;
      if (!desired) return failed(uid, `desiredAPIVersion ${JSON.stringify(request['desiredAPIVersion'])} is not a group/version`);
      const objects = request['objects'];
      if (!Array.isArray(objects)) return failed(uid, 'the ConversionRequest has no objects list');

      const converted: KubeObject[] = new Array<KubeObject>(objects.length);
      for (let i = 0; i < objects.length; i++) {
        const obj: unknown = objects[i];
        const where = `object ${i + 1} of ${objects.length}`;
        if (!isObject(obj) || typeof obj['apiVersion'] !== 'string' || typeof obj['kind'] !== 'string') {
          return failed(uid, `${where} has no apiVersion and kind`);
        }
        const meta = isObject(obj['metadata']) ? obj['metadata'] : {};
        const name = `${typeof meta['namespace'] === 'string' ? `${meta['namespace']}/` : ''}${typeof meta['name'] === 'string' ? meta['name'] : '(unnamed)'}`;
        const from = splitApiVersion(obj['apiVersion']);
        const route = from ? routes.get(`${from.group}/${obj['kind']}`) : undefined;
        if (!from || !route) return failed(uid, `${where} (${obj['kind']} ${name}, ${obj['apiVersion']}): no conversion is registered for this kind`);
        if (from.group !== desired.group) {
          return failed(uid, `${where} (${obj['kind']} ${name}): cannot convert from group ${from.group} to ${request['desiredAPIVersion'] as string}`);
        }
        const known = (v: string): boolean => v === route.hub.version || route.spokes.has(v);
        for (const v of [from.version, desired.version]) {
          if (!known(v)) {
            const versions = [`${route.hub.version} (hub)`, ...route.spokes.keys()].join(', ');
            return failed(uid, `${where} (${obj['kind']} ${name}): version ${v} of ${route.hub.kind}.${route.hub.group} has no conversion (known: ${versions})`);
          }
        }
        if (from.version === desired.version) {
          converted[i] = obj;
          continue;
        }
        const allowed = unsafeNumbers(obj, new Set());
        const what = `converting ${where} (${obj['kind']} ${name}) from ${obj['apiVersion']} to ${request['desiredAPIVersion'] as string}`;
        let out: KubeObject;
        try {
          out = await convertOne(route, obj, from.version, desired.version);
        } catch (err) {
          return failed(uid, `${what} failed: ${describeError(err)}`);
        }
        const problems = unfaithful(out, [], allowed, []);
        if (problems.length > 0) return failed(uid, `${what} failed: ${problems.map(formatFieldError).join('; ')}`);
        converted[i] = out;
      }
      return { status: 200, body: answer(uid, { status: 'Success' }, converted) };
    },
  };
}
