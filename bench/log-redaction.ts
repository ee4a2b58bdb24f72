/**
 * What redaction costs per log line: `createLogger` (line redaction by key
 * and by kind, cause-chain error serialiser) against plain pino with the
 * same options and no redaction, and against pino's own path-based `redact`
 * with the paths kubeloop used before. Records: a typical reconcile line from
 * a per-reconcile child logger, a failed reconcile with an error chain, a
 * ConfigMap (has `data`: walked, nothing of Secret kind), and a Secret as
 * `kubectl apply` leaves it (payload and last-applied annotation censored).
 * Lines go to a stream that drops them; no control plane is needed. Prints a
 * table, then one JSON line of the figures.
 *
 *   pnpm bench:logging        (from the repository root, after a build)
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { createLogger, ManagerError } from '@kubeloop/manager';

const ROUNDS = 7;

/** A sink that drops every line (synchronously), so only the logger is measured. */
const sink = (): Writable =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

const base = { level: 'info', base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
const OLD_PATHS = ['data', 'stringData', '*.data', '*.stringData', 'token', '*.token', 'bearerToken', '*.bearerToken', 'password', '*.password', 'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization', 'client-key-data', '*.client-key-data'];

const loggers: Record<string, () => Logger> = {
  'pino, no redaction': () => pino(base, sink()),
  'pino redact paths': () => pino({ ...base, redact: { paths: OLD_PATHS, censor: '[REDACTED]' } }, sink()),
  kubeloop: () => createLogger({ level: 'info', destination: sink() }),
};

const fields = { controller: 'harddisk', controllerGroup: 'example.com', controllerKind: 'HardDisk', namespace: 'default', name: 'disk-1', reconcileID: '6f1c2a4e-8a57-4c1e-9a43-0b1f6c2d9e11' };

// The shape a real `kubectl apply` leaves (managedFields included), as read back from the API server.
const lastApplied = JSON.stringify({ apiVersion: 'v1', data: { password: 'cDRzc3cwcmQ=' }, kind: 'Secret', metadata: { annotations: {}, labels: { app: 'db' }, name: 'db-credentials', namespace: 'default' }, stringData: { apiKey: 'api-key-7f3a' }, type: 'Opaque' });
const secret = Object.freeze({
  kind: 'Secret',
  apiVersion: 'v1',
  metadata: {
    name: 'db-credentials',
    namespace: 'default',
    uid: '7af630bc-eb98-4afa-b526-a531f183821c',
    resourceVersion: '212',
    creationTimestamp: '2026-01-01T00:00:00Z',
    labels: { app: 'db' },
    annotations: { 'kubectl.kubernetes.io/last-applied-configuration': `${lastApplied}\n` },
    managedFields: [{ manager: 'kubectl-client-side-apply', operation: 'Update', apiVersion: 'v1', time: '2026-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:apiKey': {}, 'f:password': {} }, 'f:type': {} } }],
  },
  data: { password: 'cDRzc3cwcmQ=', apiKey: 'YXBpLWtleS03ZjNh' },
  type: 'Opaque',
});
const configMap = Object.freeze({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'default', resourceVersion: '77' }, data: { mode: 'fast', replicas: '3', region: 'eu-west-1' } });
const failure = new ManagerError('RunnableFailed', 'reconcile failed', { cause: new Error('update disk-1: 409 Conflict') });

const records: Record<string, { n: number; write: (log: Logger) => void }> = {
  'typical reconcile line': { n: 100_000, write: (log) => log.info({ step: 'observed', generation: 3 }, 'reconciling') },
  'failed reconcile (error + cause)': { n: 20_000, write: (log) => log.error({ err: failure }, 'reconcile failed; retrying with backoff') },
  'ConfigMap object': { n: 50_000, write: (log) => log.info({ object: configMap }, 'observed') },
  'Secret from kubectl apply': { n: 20_000, write: (log) => log.info({ object: secret }, 'observed') },
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

const results: { record: string; logger: string; nsPerLine: number }[] = [];
for (const [record, { n, write }] of Object.entries(records)) {
  const samples: Record<string, number[]> = {};
  for (let round = 0; round <= ROUNDS; round++) {
    // loggers interleaved in every round, so drift in machine load hits each alike
    for (const [name, make] of Object.entries(loggers)) {
      const log = make().child(fields);
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) write(log);
      const ns = Number(process.hrtime.bigint() - t0) / n;
      if (round > 0) (samples[name] ??= []).push(ns); // round 0 warms up
    }
  }
  for (const [logger, xs] of Object.entries(samples)) results.push({ record, logger, nsPerLine: Math.round(median(xs)) });
}

const rows = Object.keys(records).map((record) => {
  const of = (logger: string): number => results.find((r) => r.record === record && r.logger === logger)?.nsPerLine ?? Number.NaN;
  const plain = of('pino, no redaction');
  const kl = of('kubeloop');
  return { record, plain, paths: of('pino redact paths'), kl, overhead: kl - plain, ratio: kl / plain };
});
console.log(`log-redaction: ${ROUNDS} rounds, median ns per line (child logger with 6 bindings, lines dropped); node ${process.version}`);
console.log(`${'record'.padEnd(34)}${'pino'.padStart(10)}${'pino+paths'.padStart(12)}${'kubeloop'.padStart(10)}${'overhead'.padStart(10)}${'kl/pino'.padStart(9)}`);
for (const r of rows) {
  console.log(`${r.record.padEnd(34)}${String(r.plain).padStart(10)}${String(r.paths).padStart(12)}${String(r.kl).padStart(10)}${String(r.overhead).padStart(10)}${`${r.ratio.toFixed(2)}x`.padStart(9)}`);
}
console.log(JSON.stringify({ bench: 'log-redaction', node: process.version, rounds: ROUNDS, results }));
