/** Events (events.k8s.io/v1) about objects, as `kubectl describe` shows them. */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { AnyKubeObject, Writer } from '@kubeloop/client';

/** Records events about objects. */
export interface EventRecorder {
  /**
   * Record an event. Never throws and never blocks the reconcile: failures are logged.
   *
   * @example
   * ```ts
   * recorder.event(disk, 'Normal', 'Provisioned', 'Reconcile', `created ConfigMap ${name}`);
   * ```
   */
  event(regarding: AnyKubeObject, type: 'Normal' | 'Warning', reason: string, action: string, note: string): void;
  /** Resolves when every event recorded so far has been written (tests, shutdown). */
  flush(): Promise<void>;
}

/** Makes recorders named after their controller. */
export interface EventRecorderProvider {
  recorderFor(name: string): EventRecorder;
  /** Resolves when every event recorded so far, by any recorder of this provider, has been written. */
  flush(): Promise<void>;
}

function microTime(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** An event recorder writing events.k8s.io/v1 Events through `client`. */
export function createEventRecorderProvider(client: Pick<Writer, 'create'>, logger: Logger, instance: string): EventRecorderProvider {
  const pending = new Set<Promise<void>>();
  return {
    recorderFor(name: string): EventRecorder {
      return {
        event(regarding, type, reason, action, note) {
          const m = regarding.metadata ?? {};
          const namespace = m.namespace ?? 'default';
          const body = {
            apiVersion: 'events.k8s.io/v1',
            kind: 'Event',
            metadata: { name: `${m.name ?? 'object'}.${randomBytes(8).toString('hex')}`, namespace },
            eventTime: microTime(),
            reportingController: name,
            reportingInstance: instance,
            action,
            reason,
            type,
            note: note.length > 1024 ? `${note.slice(0, 1021)}...` : note,
            regarding: {
              apiVersion: regarding.apiVersion,
              kind: regarding.kind,
              name: m.name,
              namespace: m.namespace,
              uid: m.uid,
              resourceVersion: m.resourceVersion,
            },
          };
          const p = client
            .create(body)
            .then(() => undefined)
            .catch((err: unknown) => logger.warn({ err, reason, object: `${namespace}/${m.name ?? ''}` }, 'could not record event'))
            .finally(() => pending.delete(p));
          pending.add(p);
        },
        flush: async () => {
          await Promise.all([...pending]);
        },
      };
    },
    flush: async () => {
      await Promise.all([...pending]);
    },
  };
}
