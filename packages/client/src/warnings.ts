/**
 * The API server's `Warning` response headers (RFC 7234 form, code 299):
 * deprecated API versions, unknown or duplicate fields under
 * `fieldValidation=Warn`, admission webhooks' warnings. The transport hands
 * each to `onWarning`; the manager logs each distinct text once and counts
 * them all.
 */

/** One warning the API server sent with an answer. */
export interface ApiWarning {
  /** The warn-code: 299 ("miscellaneous persistent warning") from the API server. */
  readonly code: number;
  /** The warn-agent: `-` from the API server. */
  readonly agent: string;
  /** The warning's text, unquoted. */
  readonly text: string;
  /** The request that drew it. */
  readonly method: string;
  readonly path: string;
}

/**
 * Node hands header values over as Latin-1 (one character per byte); the
 * API server writes its warnings' text in UTF-8 ("é" arrives as "Ã©"), so
 * the bytes are decoded again. A value with characters above U+00FF did not
 * come off the wire that way and is kept as it is.
 */
function utf8(value: string): string {
  // eslint-disable-next-line no-control-regex
  if (!/[^\x00-\x7f]/.test(value) || /[^\x00-\xff]/.test(value)) return value;
  return Buffer.from(value, 'latin1').toString('utf8');
}

/**
 * Parse `Warning` header values: each is `code agent "text"` with an
 * optional quoted date; Node joins repeated headers with `, `. Values that
 * do not parse are kept whole as the text (a warning is never dropped).
 */
export function parseWarningHeader(value: string | readonly string[] | undefined): { code: number; agent: string; text: string }[] {
  if (value === undefined) return [];
  const out: { code: number; agent: string; text: string }[] = [];
  for (const header of typeof value === 'string' ? [value] : value) {
    let rest = utf8(header).trim();
    while (rest.length > 0) {
      const m = /^(\d{3})\s+(\S+)\s+"((?:[^"\\]|\\.)*)"(?:\s+"[^"]*")?\s*(?:,\s*)?/.exec(rest);
      if (!m) {
        out.push({ code: 299, agent: '-', text: rest });
        break;
      }
      out.push({ code: Number(m[1]), agent: m[2]!, text: m[3]!.replace(/\\(.)/g, '$1') });
      rest = rest.slice(m[0].length);
    }
  }
  return out;
}
