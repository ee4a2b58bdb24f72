/**
 * Built-in kinds of the `events.k8s.io` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { eventsv1 } from '@kubeloop/scheme';
 *
 * const d = eventsv1.Event; // { apiVersion: 'events.k8s.io/v1', kind: 'Event', plural: 'events', ... }
 * const obj: eventsv1.Event = { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'example' }, eventTime: '2026-01-01T00:00:00.000000Z' };
 * ```
 */
import type { EventsV1Event } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `events.k8s.io` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'events.k8s.io', version: 'v1' });

/** An events.k8s.io/v1 event, the form event recorders write; `eventTime` is a string (MicroTime) on the wire. */
export type Event = WireObject<EventsV1Event, 'events.k8s.io/v1', 'Event'>;
/** Descriptor of Event.v1.events.k8s.io: `events`, namespaced, lists are `EventList`. */
export const Event = defineKind<Event>({ group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, listKind: 'EventList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([Event]);
