/**
 * Redaction of serialised log lines, by key and by kind: values under
 * sensitive keys, the payload of any Secret (and of every item of a
 * SecretList), the `kubectl.kubernetes.io/last-applied-configuration`
 * annotation of a Secret and any JSON string that holds a Secret are
 * censored, at any depth; bearer credentials are cut out of every string.
 *
 * It works on the line pino has serialised, so everything that reaches the
 * output is covered (fields, child bindings, error serialisers, causes) and
 * the caller's objects are never touched: the walk runs over a fresh parse.
 * The walk is iterative with a node budget, and a line it cannot check is
 * withheld rather than written.
 */
import { parseJson, stringifyJson } from '@kubeloop/scheme';

/** What replaces a censored value. */
export const CENSOR = '[REDACTED]';

/** The annotation `kubectl apply` writes: the whole object as applied, Secret payloads included. */
export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Keys whose values are never written, at any depth (compared without case: `Authorization` is a header too). */
const SENSITIVE_KEYS = new Set(['data', 'stringdata', 'token', 'bearertoken', 'password', 'authorization', 'proxy-authorization', 'client-key-data']);

/** A bearer credential quoted in a string (an error message, a log message). */
const BEARER = /\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*/gi;

/**
 * Cheap test for a line that may need the walk: a sensitive key (also as
 * escaped JSON inside a string) or a last-applied annotation. Lines without
 * either pass untouched and unparsed.
 */
const SUSPECT = /last-applied-configuration|\\*"(?:data|stringData|token|bearerToken|password|authorization|proxy-authorization|client-key-data)\\*"\s*:/i;

/** Bounds of the walk over one line. */
export interface RedactLimits {
  /** Longest line (in UTF-16 units) that is parsed and checked; a longer suspect line is withheld. Default: 8 MiB. */
  readonly maxLineLength: number;
  /** Most values visited in one line, embedded JSON included; past it the line is withheld. Default: 1 000 000. */
  readonly maxNodes: number;
  /** JSON strings nested in JSON strings checked this deep; a deeper suspect string is censored. Default: 8. */
  readonly maxEmbeddedDepth: number;
}

/** The limits {@link redactLine} uses unless told otherwise. */
export const DEFAULT_REDACT_LIMITS: RedactLimits = Object.freeze({ maxLineLength: 8 * 1024 * 1024, maxNodes: 1_000_000, maxEmbeddedDepth: 8 });

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A core Secret: `kind: Secret` with `apiVersion: v1` (or none given). */
function isSecret(o: Json): boolean {
  return o['kind'] === 'Secret' && (o['apiVersion'] === 'v1' || o['apiVersion'] === undefined);
}

function isSecretList(o: Json): boolean {
  return o['kind'] === 'SecretList' && (o['apiVersion'] === 'v1' || o['apiVersion'] === undefined);
}

/** Thrown (and caught in {@link redactLine}) when the node budget runs out. */
class BudgetExhausted extends Error {}

interface Walk {
  readonly limits: RedactLimits;
  nodes: number;
  chars: number;
}

interface Outcome {
  /** Something was censored. */
  changed: boolean;
  /** A Secret (or a SecretList) was found. */
  secret: boolean;
}

function spend(walk: Walk, n: number): void {
  walk.nodes += n;
  if (walk.nodes > walk.limits.maxNodes) throw new BudgetExhausted();
}

/** Censor the payload and last-applied annotation of a Secret, in place (`o` is our own parsed copy). */
function censorSecret(o: Json, out: Outcome): void {
  out.secret = true;
  for (const key of ['data', 'stringData']) {
    if (key in o && o[key] !== CENSOR) {
      o[key] = CENSOR;
      out.changed = true;
    }
  }
  const annotations = isObject(o['metadata']) ? o['metadata']['annotations'] : undefined;
  if (isObject(annotations) && LAST_APPLIED in annotations && annotations[LAST_APPLIED] !== CENSOR) {
    annotations[LAST_APPLIED] = CENSOR;
    out.changed = true;
  }
}

/**
 * A string that may be JSON worth checking: the last-applied annotation
 * always; any other string that looks like a JSON object or array and names
 * a sensitive key. Returns the string to write instead (the same one when it
 * is clean).
 */
function checkString(s: string, key: string | undefined, walk: Walk, depth: number): string {
  const lastApplied = key === LAST_APPLIED;
  if (!lastApplied) {
    const first = s.charCodeAt(0);
    if ((first !== 0x7b && first !== 0x5b) || !SUSPECT.test(s)) return s; // '{' or '['
  }
  // Past the limits we cannot tell what it holds: censor rather than guess.
  if (depth >= walk.limits.maxEmbeddedDepth) return CENSOR;
  walk.chars += s.length;
  if (walk.chars > walk.limits.maxLineLength) return CENSOR;
  let parsed: unknown;
  try {
    parsed = parseJson(s);
  } catch {
    // Not JSON after all. A last-applied annotation that does not parse, or
    // text that looks like JSON naming a secret key, is not written either.
    return CENSOR;
  }
  const inner = walkTree(parsed, walk, depth + 1);
  if (inner.secret) return CENSOR;
  if (!inner.changed) return s;
  try {
    return stringifyJson(parsed);
  } catch {
    return CENSOR;
  }
}

/**
 * Censor `root` in place (it is always a fresh parse, never a caller's
 * object). Iterative: depth costs heap, not stack; every value visited is
 * charged to the budget.
 */
function walkTree(root: unknown, walk: Walk, depth: number): Outcome {
  const out: Outcome = { changed: false, secret: false };
  // [value, is it a Secret by context (an item of a SecretList)]
  const stack: [unknown, boolean][] = [[root, false]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, secretByContext] = next;
    if (Array.isArray(value)) {
      spend(walk, value.length);
      for (let i = 0; i < value.length; i++) {
        const v: unknown = value[i];
        if (typeof v === 'string') {
          const r = checkString(v, undefined, walk, depth);
          if (r !== v) {
            value[i] = r;
            out.changed = true;
          }
        } else if (typeof v === 'object' && v !== null) {
          stack.push([v, secretByContext]);
        }
      }
      continue;
    }
    if (!isObject(value)) continue;
    if (secretByContext || isSecret(value)) censorSecret(value, out);
    const itemsAreSecrets = isSecretList(value);
    if (itemsAreSecrets) out.secret = true;
    const keys = Object.keys(value);
    spend(walk, keys.length);
    for (const key of keys) {
      const v = value[key];
      if (SENSITIVE_KEYS.has(key.toLowerCase())) {
        if (v !== CENSOR) {
          value[key] = CENSOR;
          out.changed = true;
        }
      } else if (typeof v === 'string') {
        const r = checkString(v, key, walk, depth);
        if (r !== v) {
          value[key] = r;
          out.changed = true;
        }
      } else if (typeof v === 'object' && v !== null) {
        stack.push([v, itemsAreSecrets && key === 'items']);
      }
    }
  }
  return out;
}

/** The stand-in for a line that could not be checked: its level and time, and why. */
function withheld(line: string, why: string): string {
  const head = /^\{"level":(\d+|"[A-Za-z]+"),"time":("[0-9A-Za-z:.+-]*"|\d+)/.exec(line);
  const prefix = head ? `"level":${head[1]},"time":${head[2]},` : '';
  return `{${prefix}"msg":"log line withheld: ${why}","withheldLength":${line.length}}\n`;
}

/**
 * Redact one serialised log line (pino's `hooks.streamWrite`). Clean lines
 * (the usual case) cost two regular-expression scans and are returned as
 * they are.
 *
 * @example
 * ```ts
 * redactLine('{"level":30,"secret":{"kind":"Secret","apiVersion":"v1","data":{"p":"aHVudGVyMg=="}}}\n');
 * // '{"level":30,"secret":{"kind":"Secret","apiVersion":"v1","data":"[REDACTED]"}}\n'
 * ```
 */
export function redactLine(line: string, limits: RedactLimits = DEFAULT_REDACT_LIMITS): string {
  const cut = line.replace(BEARER, `$1 ${CENSOR}`);
  if (!SUSPECT.test(cut)) return cut;
  if (cut.length > limits.maxLineLength) return withheld(cut, 'too large to check for secrets');
  const walk: Walk = { limits, nodes: 0, chars: 0 };
  try {
    const record: unknown = parseJson(cut);
    const { changed } = walkTree(record, walk, 0);
    return changed ? `${stringifyJson(record)}${cut.endsWith('\n') ? '\n' : ''}` : cut;
  } catch (err) {
    return withheld(cut, err instanceof BudgetExhausted ? 'too large to check for secrets' : 'could not be checked for secrets');
  }
}
