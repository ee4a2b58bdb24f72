/**
 * The manager's HTTP servers, as its options ask for them: health probes
 * (`/healthz`, `/readyz`) and metrics (`/metrics`, plain or secured). They
 * start first and close last.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { selfSignedCertificate } from '@kubeloop/webhook';
import type { TokenAuthorizer } from '@kubeloop/webhook';
import { describeError, ManagerError } from '../errors.js';
import { serves } from '../options.js';
import type { ManagerOptions } from '../options.js';
import type { Probes } from '../readiness.js';
import { startHealthServer, startMetricsServer } from './http-servers.js';
import type { InspectAnswer, InspectRequest } from './inspect.js';
import { Profiler } from './profiles.js';

/** The servers that listen, their URLs, and how to close them. */
export interface ManagerServers {
  readonly healthUrl: string | undefined;
  readonly metricsUrl: string | undefined;
  /** Close every server, last started first. */
  close(): Promise<void>;
}

/**
 * Start the probe and metrics servers `options` ask for.
 *
 * @throws {@link ManagerError} `InvalidOptions` when one cannot listen (the others are closed first).
 */
export async function startManagerServers(
  options: Pick<ManagerOptions, 'healthProbeBindAddress' | 'metricsBindAddress' | 'secureMetrics' | 'inspect' | 'profiling'>,
  deps: {
    readonly probes: Probes;
    readonly registry: Registry;
    readonly authorizer: TokenAuthorizer | undefined;
    readonly log: Logger;
    readonly signal: AbortSignal;
    /** The `/inspect` handler; served when `options.inspect` is true, or by default when the metrics server authorizes requests. Default: none. */
    readonly inspect?: (request: InspectRequest) => Promise<InspectAnswer>;
    /** Answer scrapers that prefer OpenMetrics in it, exemplars included (while tracing is on). Default: false. */
    readonly openMetrics?: boolean;
  },
): Promise<ManagerServers> {
  const { log } = deps;
  const closers: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    for (const c of closers.splice(0).reverse()) await c();
  };
  let healthUrl: string | undefined;
  let metricsUrl: string | undefined;
  try {
    if (serves(options.healthProbeBindAddress)) {
      const s = await startHealthServer(options.healthProbeBindAddress, deps.probes.healthz, deps.probes.readyz, { onError: (err) => log.error({ err }, 'health probe server error') });
      healthUrl = s.url;
      closers.push(s.close);
      log.info({ url: s.url }, 'health probes listening');
    }
    if (serves(options.metricsBindAddress)) {
      const secure = options.secureMetrics;
      const authorizer = deps.authorizer;
      const s = await startMetricsServer(options.metricsBindAddress, deps.registry, {
        onError: (err) => log.error({ err }, 'metrics server error'),
        ...(secure ? { tls: { certificates: secure.certificates ?? selfSignedCertificate(), ...(secure.minTlsVersion ? { minVersion: secure.minTlsVersion } : {}) } } : {}),
        // By default only where requests are authenticated and authorized: object names and errors are not for anyone who reaches the port.
        ...(deps.inspect && (options.inspect ?? authorizer !== undefined) ? { inspect: deps.inspect } : {}),
        ...(options.profiling ? { profiler: new Profiler(options.profiling === true ? {} : options.profiling) } : {}),
        ...(deps.openMetrics === true ? { openMetrics: true } : {}),
        ...(authorizer ? { authorize: (request: { authorization?: string | undefined; path: string; verb: string }) => authorizer.authorize(request, deps.signal) } : {}),
      });
      metricsUrl = s.url;
      closers.push(s.close);
      log.info({ url: s.url }, 'metrics listening');
    }
  } catch (cause) {
    for (const c of closers) await c();
    throw new ManagerError('InvalidOptions', `cannot listen: ${describeError(cause)}`, { cause });
  }
  return { healthUrl, metricsUrl, close };
}
