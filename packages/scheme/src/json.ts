/**
 * JSON as the API server means it: an integer the server keeps as int64 is
 * read and written exactly, never through a JavaScript number (which holds
 * integers exactly only up to 2^53 - 1). {@link parseJson} gives an integer
 * outside `Number.isSafeInteger` as a `bigint`; {@link stringifyJson} writes
 * a `bigint` as the plain JSON integer it stands for. Every other value is
 * what `JSON.parse` / `JSON.stringify` give.
 *
 * Both keep the native fast path: a text without a number of 16 digits
 * cannot hold an unsafe integer (2^53 has 16 digits) and goes to plain `JSON.parse`;
 * a value without a bigint goes to plain `JSON.stringify`. Only the rest pays
 * for a reviver (JSON.parse source text access, `context.source`) or a
 * replacer (`JSON.rawJSON`), both in Node.js since 21 (V8 11.4; kubeloop
 * needs 22.19). docs/benchmarks.md, "Lossless JSON", has the cost.
 *
 * Here, at the bottom of the import graph, so that the scheme's validator,
 * the client, the cache, the webhook server and the fake all read and write
 * numbers the same way; `@kubeloop/client` re-exports both.
 */

/** The reviver's third argument (JSON.parse source text access); not in TypeScript's lib yet. */
interface ReviverContext {
  readonly source?: string;
}
type SourceReviver = (this: unknown, key: string, value: unknown, context?: ReviverContext) => unknown;
interface JsonWithSource {
  parse(text: string, reviver: SourceReviver): unknown;
  rawJSON?(text: string): unknown;
}
const NativeJSON = JSON as unknown as JsonWithSource;

/**
 * A number of 16 digits or more: the shortest unsafe integer
 * (9007199254740992) has 16. In JSON a number follows `:`, `,`, `[` or
 * whitespace, or starts the text; asking for that character first lets the
 * regular expression skip most of the text (half the cost of a bare
 * `\d{16}`, docs/benchmarks.md "Lossless JSON"). A digit run inside a string
 * after one of them only sends that text to the exact path.
 */
const LONG_NUMBER = /[:,[ \t\n\r]-?\d{16}/;
/** The same at the start of the text (a bare number); anchored, so it looks at the first characters only. */
const LONG_NUMBER_FIRST = /^-?\d{16}/;
const INTEGER = /^-?\d+$/;

function reviveInt64(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value !== 'number' || Number.isSafeInteger(value)) return value;
  const source = context?.source;
  if (source === undefined) {
    throw new Error('this Node.js has no JSON.parse source text access; kubeloop needs Node.js >= 22.19 to read integers beyond 2^53 exactly');
  }
  // 1e20 or 12345678901234567.5 are floats on the server too (an int64 is written as digits alone).
  return INTEGER.test(source) ? BigInt(source) : value;
}

/**
 * Parse JSON text, giving integers outside the safe range
 * (`Number.isSafeInteger`) as `bigint`s, exactly as written. Throws what
 * `JSON.parse` throws (a `SyntaxError`) for text that is not JSON.
 *
 * @example
 * ```ts
 * const disk = parseJson('{"spec":{"capacity":{"value":9007199254740993,"unit":"Gi"}}}') as { spec: { capacity: { value: number | bigint } } };
 * disk.spec.capacity.value; // 9007199254740993n
 * ```
 */
export function parseJson(text: string): unknown {
  if (!LONG_NUMBER.test(text) && !LONG_NUMBER_FIRST.test(text)) return JSON.parse(text);
  return NativeJSON.parse(text, reviveInt64);
}

function writeBigint(this: unknown, _key: string, value: unknown): unknown {
  if (typeof value !== 'bigint') return value;
  if (NativeJSON.rawJSON === undefined) {
    throw new Error('this Node.js has no JSON.rawJSON; kubeloop needs Node.js >= 22.19 to write a bigint');
  }
  return NativeJSON.rawJSON(value.toString());
}

/**
 * `JSON.stringify` that writes a `bigint` as a JSON integer (`5n` as `5`),
 * so an int64 read by {@link parseJson} goes back unchanged. Anything else
 * (cycles, `toJSON`, `undefined`) is as `JSON.stringify` has it.
 *
 * @example
 * ```ts
 * stringifyJson({ spec: { capacity: { value: 9007199254740993n, unit: 'Gi' } } });
 * // '{"spec":{"capacity":{"value":9007199254740993,"unit":"Gi"}}}'
 * ```
 */
export function stringifyJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    // V8: "Do not know how to serialize a BigInt". Anything else (a cycle) is the caller's.
    if (!(err instanceof TypeError) || !err.message.includes('BigInt')) throw err;
  }
  return JSON.stringify(value, writeBigint);
}
