/**
 * The inspect endpoint on the metrics server: JSON views of the manager's
 * controllers (queue depth by priority, oldest wait, keys in flight and in
 * backoff, suspected self-triggers), of one key (its triggers and last
 * reconciles), and pause / resume of a controller. It sits behind the
 * metrics server's authentication and authorization (secure metrics:
 * TokenReview + SubjectAccessReview of the path and verb); changes
 * (`POST .../pause`, `.../resume`) are refused unless that authorization
 * is on.
 *
 * - `GET /inspect`: every controller.
 * - `GET /inspect/<controller>`: one controller, with its recent reconciles.
 * - `GET /inspect/<controller>/<namespace>/<name>` (or `/<name>` for a
 *   cluster-scoped kind): one key.
 * - `POST /inspect/<controller>/pause`, `POST /inspect/<controller>/resume`.
 */
import type { ControllerInspection, KeyInspection, ReconcileRecord } from '../controller/inspection.js';

/** What the endpoint reads and changes: the manager's controllers. */
export interface InspectTarget {
  /** Names of the registered controllers. */
  names(): readonly string[];
  /** One controller's views, or undefined when no controller has that name. */
  controller(name: string): { inspect(): ControllerInspection; inspectKey(key: string): KeyInspection; recent(): readonly ReconcileRecord[] } | undefined;
  pause(name: string): Promise<void>;
  resume(name: string): void;
}

/** A request the metrics server routes here (already authorized when authorization is on). */
export interface InspectRequest {
  readonly method: string;
  /** Path segments, decoded, `inspect` first. */
  readonly segments: readonly string[];
  /** Whether the request passed the server's authentication and authorization (secure metrics). */
  readonly authorized: boolean;
}

/** The answer: a status and a JSON body. */
export interface InspectAnswer {
  readonly status: number;
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** How many of a controller's recent reconciles its view lists. */
const RECENT = 20;

const json = (status: number, value: unknown, headers?: Record<string, string>): InspectAnswer => ({ status, body: `${JSON.stringify(value, null, 2)}\n`, ...(headers ? { headers } : {}) });
const problem = (status: number, message: string, headers?: Record<string, string>): InspectAnswer => json(status, { error: message }, headers);

/**
 * The handler of `/inspect` requests for `target` (the manager passes it to
 * its metrics server as `ServerOptions.inspect`).
 */
export function inspectHandler(target: InspectTarget): (request: InspectRequest) => Promise<InspectAnswer> {
  return async ({ method, segments, authorized }) => {
    const [, name, ...rest] = segments;
    const read = method === 'GET' || method === 'HEAD';
    if (name === undefined) {
      if (!read) return problem(405, 'method not allowed', { allow: 'GET, HEAD' });
      return json(200, { controllers: target.names().flatMap((n) => target.controller(n)?.inspect() ?? []) });
    }
    const controller = target.controller(name);
    if (controller === undefined) return problem(404, `no controller named ${JSON.stringify(name.slice(0, 100))}; GET /inspect lists them`);
    if (method === 'POST') {
      const action = rest.length === 1 ? rest[0] : undefined;
      if (action !== 'pause' && action !== 'resume') return problem(404, 'POST /inspect/<controller>/pause or /inspect/<controller>/resume');
      // Changing a controller needs an authenticated, authorized caller: never on a plain metrics server.
      if (!authorized) return problem(403, `${action} needs the metrics server's authorization (secureMetrics with authorization on); this server does not authenticate callers`);
      if (action === 'pause') await target.pause(name);
      else target.resume(name);
      return json(200, controller.inspect());
    }
    if (!read) return problem(405, 'method not allowed', { allow: 'GET, HEAD, POST' });
    if (rest.length === 0) return json(200, { ...controller.inspect(), reconciles: controller.recent().slice(-RECENT) });
    if (rest.length > 2 || rest.some((s) => s === '' || s.includes('/'))) return problem(404, 'a key is /inspect/<controller>/<namespace>/<name>, or /inspect/<controller>/<name> for a cluster-scoped kind');
    return json(200, controller.inspectKey(rest.join('/')));
  };
}
