/** Go's time.Duration text (`10s`, `1m30s`, `500ms`, `1.5h`), as the API server writes its `timeout` query parameter. */

const UNITS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds in a Go duration string, or undefined when it is not one (or not positive). */
export function parseGoDuration(text: string | null | undefined): number | undefined {
  if (!text || text.length > 64) return undefined;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let at = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number.parseFloat(m[1]!) * UNITS[m[2]!]!;
    at = re.lastIndex;
  }
  return at === text.length && total > 0 && Number.isFinite(total) ? total : undefined;
}
