/**
 * The error family of `@kubeloop/mapper`: one class, a discriminated
 * `reason`, the cause kept, and guards that work across two copies of the
 * package.
 */

/** Why a mapping failed. */
export type MapperErrorReason =
  /** No resource serves this group/kind (in the asked versions). */
  | 'NoKindMatch'
  /** No resource matches this (partial) group/version/resource. */
  | 'NoResourceMatch'
  /** A partial resource matches more than one resource or kind. */
  | 'AmbiguousResource'
  /** Discovery answered with an error, an unreadable body, or not at all. */
  | 'DiscoveryFailed';

const BRAND = Symbol.for('@kubeloop/mapper/MapperError');

/**
 * An error raised by a RESTMapper.
 *
 * @example
 * ```ts
 * try {
 *   await mapper.restMapping({ group: 'crd-demo.io', kind: 'HardDisk' });
 * } catch (err) {
 *   if (isNoKindMatch(err)) console.log(`install the CRD first: ${err.message}`);
 * }
 * ```
 */
export class MapperError extends Error {
  override readonly name = 'MapperError';
  readonly reason: MapperErrorReason;
  /** For AmbiguousResource: the candidates, formatted. */
  readonly candidates: readonly string[];
  readonly [BRAND] = true;

  constructor(reason: MapperErrorReason, message: string, options: { cause?: unknown; candidates?: readonly string[] } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.candidates = options.candidates ?? [];
  }
}

/** True for any {@link MapperError}, even one from another copy of this package. */
export function isMapperError(value: unknown): value is MapperError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** True when no resource serves the kind (controller-runtime's `meta.IsNoMatchError` for kinds). */
export function isNoKindMatch(value: unknown): value is MapperError {
  return isMapperError(value) && value.reason === 'NoKindMatch';
}

/** True when no resource matches. */
export function isNoResourceMatch(value: unknown): value is MapperError {
  return isMapperError(value) && value.reason === 'NoResourceMatch';
}

/** True when a partial resource matched several. */
export function isAmbiguousResource(value: unknown): value is MapperError {
  return isMapperError(value) && value.reason === 'AmbiguousResource';
}
