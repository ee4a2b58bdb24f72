/**
 * Duplicate keys in a JSON body, as kube-apiserver's decoder reports them
 * (sigs.k8s.io/json): a key given twice in one object is `duplicate field
 * "spec.color"` (list items as `spec.ports[0].name`), a warning by default,
 * with `fieldValidation=Strict` the decoder's 400 before its unknown fields;
 * `Ignore` keeps the last value silently. JavaScript's JSON.parse keeps the
 * last value too and says nothing, so the text is scanned once more, here,
 * only for write bodies (create and update), which are small.
 */
import { isScalar, LineCounter, parseDocument, visit } from 'yaml';
import type { BufferedResponse, CoreRequest, Target } from './request-info.js';
import { buffered } from './request-info.js';
import { ApiError, badRequest } from './status.js';

/** The paths of the keys a JSON text repeats, in the order the repeats come; the text must be valid JSON. */
export function duplicateFields(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  const end = (): void => {
    if (i >= text.length) throw new Error('the JSON text ends early');
  };
  const space = (): void => {
    while (i < text.length && ' \t\r\n'.includes(text[i]!)) i++;
  };
  const string = (): string => {
    const start = i;
    i++; // "
    while (text[i] !== '"') {
      end();
      i += text[i] === '\\' ? 2 : 1;
    }
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (path: string): void => {
    space();
    const c = text[i];
    if (c === '{') {
      i++;
      const seen = new Set<string>();
      space();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        space();
        end();
        const key = string();
        const at = path === '' ? key : `${path}.${key}`;
        if (seen.has(key)) out.push(at);
        seen.add(key);
        space();
        i++; // :
        value(at);
        space();
        if (text[i++] === '}') return;
      }
    }
    if (c === '[') {
      i++;
      space();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (let n = 0; ; n++) {
        end();
        value(`${path}[${n}]`);
        space();
        if (text[i++] === ']') return;
      }
    }
    if (c === '"') {
      string();
      return;
    }
    while (i < text.length && !',}] \t\r\n'.includes(text[i]!)) i++;
  };
  value('');
  return out;
}

/** Whether a request's body is JSON (the default), the only form scanned for duplicates. */
function isJson(req: CoreRequest): boolean {
  const type = (req.contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  return type === '' || type === 'application/json' || type === '*/*';
}

function isStrictDecoding(err: ApiError): boolean {
  return err.code === 400 && (err.body.message ?? '').includes(' strict decoding error: ');
}

/**
 * Run a create or update (`write`, given the request to run) with what the
 * decoder says of duplicate keys: warnings first (also on a failed write),
 * or with `Strict` the decoder's 400 naming them before the unknown fields
 * (the write is then tried as a dry run, for what else the decoder would
 * say); checks the server makes before decoding still come first.
 */
export function withDuplicateFields(t: Target, req: CoreRequest, mode: 'Ignore' | 'Warn' | 'Strict', write: (req: CoreRequest) => BufferedResponse): BufferedResponse {
  const dups = mode === 'Ignore' || req.body === undefined || !isJson(req) ? [] : safeDuplicates(req.body);
  if (dups.length === 0) return write(req);
  const listed = dups.map((p) => `duplicate field ${JSON.stringify(p)}`);
  if (mode === 'Strict') {
    const prefix = `${t.st.type.kind} in version ${JSON.stringify(t.version)} cannot be handled as a ${t.st.type.kind}: strict decoding error: `;
    const query = new URLSearchParams(req.query);
    query.set('dryRun', 'All');
    try {
      write({ ...req, query });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (isStrictDecoding(err)) throw badRequest(`${prefix}${listed.join(', ')}, ${err.body.message!.slice(err.body.message!.indexOf(' strict decoding error: ') + ' strict decoding error: '.length)}`);
      if (err.code === 400 || err.code === 415) throw err;
    }
    throw badRequest(`${prefix}${listed.join(', ')}`);
  }
  const warning = listed.map((w) => `299 - ${JSON.stringify(w)}`).join(', ');
  const lead = (res: BufferedResponse): BufferedResponse => ({ ...res, headers: { ...res.headers, warning: res.headers['warning'] ? `${warning}, ${res.headers['warning']}` : warning } });
  try {
    return lead(write(req));
  } catch (err) {
    if (!(err instanceof ApiError) || err.code === 400 || err.code === 415) throw err;
    throw new ApiError(err.body, lead(buffered(err.code, err.body, err.headers)).headers);
  }
}

/** The scan, on text JSON.parse already took; anything it cannot follow is no duplicate. */
export function safeDuplicates(text: string): string[] {
  try {
    return duplicateFields(text);
  } catch {
    return [];
  }
}

/**
 * The keys a YAML (or JSON) text repeats within one mapping, as go-yaml's
 * decoder words each (`line 7: key "a" already set in map`: the line of the
 * repeat, a string key quoted, another printed as it reads), in the text's
 * order; and the value with the last of each repeated key, as the server keeps
 * it. The text is read as YAML 1.1, as go-yaml v2 reads it.
 */
export function yamlDuplicates(text: string): { readonly problems: readonly string[]; readonly value: unknown } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { version: '1.1', uniqueKeys: false, lineCounter: lines });
  if (doc.errors.length > 0) throw doc.errors[0]!;
  const problems: { at: number; text: string }[] = [];
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key: unknown = isScalar(pair.key) ? pair.key.value : pair.key;
        const id = typeof key === 'string' ? `s:${key}` : `o:${String(key)}`;
        if (seen.has(id)) {
          const at = isScalar(pair.key) && pair.key.range ? pair.key.range[0] : 0;
          problems.push({ at, text: `line ${lines.linePos(at).line}: key ${typeof key === 'string' ? JSON.stringify(key) : String(key)} already set in map` });
        }
        seen.add(id);
      }
    },
  });
  return { problems: problems.sort((a, b) => a.at - b.at).map((p) => p.text), value: doc.toJS() };
}
