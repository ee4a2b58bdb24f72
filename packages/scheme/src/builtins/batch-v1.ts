/**
 * Built-in kinds of the `batch` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { batchv1 } from '@kubeloop/scheme';
 *
 * const d = batchv1.Job; // { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', ... }
 * const obj: batchv1.Job = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'example' } };
 * ```
 */
import type { V1CronJob, V1Job } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `batch` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'batch', version: 'v1' });

/** A job: pods that run to completion. */
export type Job = WireObject<V1Job, 'batch/v1', 'Job'>;
/** Descriptor of Job.v1.batch: `jobs`, namespaced, lists are `JobList`. */
export const Job = defineKind<Job>({ group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', namespaced: true, listKind: 'JobList' });

/** A cron job: jobs on a schedule. */
export type CronJob = WireObject<V1CronJob, 'batch/v1', 'CronJob'>;
/** Descriptor of CronJob.v1.batch: `cronjobs`, namespaced, lists are `CronJobList`. */
export const CronJob = defineKind<CronJob>({ group: 'batch', version: 'v1', kind: 'CronJob', plural: 'cronjobs', namespaced: true, listKind: 'CronJobList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([Job, CronJob]);
