/**
 * Watches, as kube-apiserver's watch handler and watch cache serve them:
 * from "now" (an ADDED per selected object), from a resourceVersion
 * (replayed from the history; 410 when compacted), or with initial events
 * ending in the `k8s.io/initial-events-end` bookmark; objects entering or
 * leaving the selection arrive as ADDED or DELETED; bookmarks on request;
 * `timeoutSeconds`.
 */
import { stringifyJson } from '@kubeloop/scheme';
import type { Json } from './json.js';
import { listOptionsInvalid, tooLarge } from './list.js';
import { acceptAs, goBool, parseRv } from './request-info.js';
import type { CoreRequest, Target, WatchSession } from './request-info.js';
import { typeKey } from './resources.js';
import { decodeListQuery, selection } from './selection.js';
import { badRequest, statusOf } from './status.js';
import type { FieldError } from './status.js';
import { apiVersionOf, partial, render } from './storage.js';
import type { Change, Storage } from './storage.js';

interface Watcher {
  readonly typeKey: string;
  readonly match: (obj: Json) => boolean;
  readonly bookmarks: boolean;
  readonly render: (obj: Json) => Json;
  readonly bookmarkObject: (rv: number, annotations?: Record<string, string>) => Json;
  send(line: string): void;
  end(): void;
}

/** The watch line a change gives a watcher with this filter (undefined: not for it). */
function eventFor(c: Change, match: (obj: Json) => boolean, renderObject: (obj: Json) => Json): string | undefined {
  const now = match(c.object);
  const before = c.prev !== undefined && match(c.prev);
  let type: string;
  if (c.type === 'ADDED') {
    if (!now) return undefined;
    type = 'ADDED';
  } else if (c.type === 'DELETED') {
    if (!now && !before) return undefined;
    type = 'DELETED';
  } else if (now && before) type = 'MODIFIED';
  else if (now) type = 'ADDED';
  else if (before) {
    // an object leaving the selection: the watch cache sends the object as it was (what matched), at the change's resourceVersion
    const prev = c.prev;
    const object = { ...prev, metadata: { ...(prev['metadata'] as Json), resourceVersion: (c.object['metadata'] as Json)['resourceVersion'] } };
    return stringifyJson({ type: 'DELETED', object: renderObject(object) });
  } else return undefined;
  return stringifyJson({ type, object: renderObject(c.object) });
}

/** The open watches of one server: fed by the storage's changes. */
export class Watches {
  private readonly watchers = new Set<Watcher>();

  constructor(private readonly storage: Storage) {
    storage.onChange((c) => this.emit(c));
    storage.onTypeRemoved((key) => {
      for (const w of [...this.watchers]) if (w.typeKey === key) w.end();
    });
  }

  private emit(c: Change): void {
    for (const w of this.watchers) {
      if (w.typeKey !== c.typeKey) continue;
      const line = eventFor(c, w.match, w.render);
      if (line) w.send(line);
    }
  }

  /** Send a BOOKMARK with the current resourceVersion to every watch that asked for bookmarks. */
  bookmark(): void {
    for (const w of this.watchers) if (w.bookmarks) w.send(stringifyJson({ type: 'BOOKMARK', object: w.bookmarkObject(this.storage.resourceVersion) }));
  }

  /** End every open watch (as an API server restart would). */
  endAll(): void {
    for (const w of [...this.watchers]) w.end();
  }

  /** Open a watch for a request. */
  watch(t: Target, req: CoreRequest): WatchSession {
    const s = this.storage;
    const q = req.query;
    const rvParam = q.get('resourceVersion') ?? '';
    const rvMatch = q.get('resourceVersionMatch') ?? '';
    const sie = q.get('sendInitialEvents');
    const bookmarks = goBool(q.get('allowWatchBookmarks'));
    // the query decoded first (malformed integers and selectors are 400s), the options validated, then the kind's
    // support of the field selector (a ListOptions 422 before its 400, as for a list)
    const decoded = decodeListQuery(q);
    const timeoutSeconds = decoded.timeoutSeconds;
    if (timeoutSeconds < 0) throw badRequest(`invalid timeoutSeconds: ${JSON.stringify(q.get('timeoutSeconds'))}`);
    const sendInitial = goBool(sie);
    // the watch's options checked as the API server's ListOptions validation checks them: every problem at once
    const errors: FieldError[] = [];
    if (sie !== null && rvMatch !== 'NotOlderThan') errors.push({ type: 'FieldValueForbidden', field: 'resourceVersionMatch', detail: 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan' });
    if (rvMatch !== '') {
      if (sie === null) errors.push({ type: 'FieldValueForbidden', field: 'resourceVersionMatch', detail: 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided' });
      if (rvMatch !== 'NotOlderThan') errors.push({ type: 'FieldValueNotSupported', field: 'resourceVersionMatch', value: rvMatch, detail: 'supported values: "NotOlderThan"' });
    }
    if (errors.length > 0) throw listOptionsInvalid(errors);
    const { match } = selection(t.st, t.namespace, decoded, q);
    const metadataOnly = acceptAs(req.accept) === 'PartialObjectMetadata';
    const apiVersion = apiVersionOf(t.st.type, t.version);
    const renderObject = (obj: Json): Json => {
      const r = render(t.st, obj, t.version);
      return metadataOnly ? partial(r) : r;
    };
    const bookmarkObject = (rv: number, annotations?: Record<string, string>): Json =>
      metadataOnly
        ? { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: String(rv), ...(annotations ? { annotations } : {}) } }
        : { kind: t.st.type.kind, apiVersion, metadata: { resourceVersion: String(rv), ...(annotations ? { annotations } : {}) } };

    // What to send first.
    const initial: string[] = [];
    let ended = false;
    const event = (type: string, object: Json): string => stringifyJson({ type, object });
    const key = typeKey(t.st.type.group, t.st.type.plural);
    // initial events: asked for (`sendInitialEvents=true`), or a watch from "any" or "now" that did not say `sendInitialEvents=false`;
    // the end bookmark to a watch that takes bookmarks (also without sendInitialEvents, as kube-apiserver v1.37 does)
    if (sendInitial || (sie === null && (rvParam === '' || rvParam === '0'))) {
      if (sendInitial && rvParam !== '' && rvParam !== '0') {
        const rv = parseRv(rvParam, 'resourceVersion', true);
        if (rv > s.resourceVersion) throw tooLarge();
      }
      for (const k of [...t.st.objects.keys()].sort()) {
        const obj = t.st.objects.get(k)!;
        if (match(obj)) initial.push(event('ADDED', renderObject(obj)));
      }
      // the initial events are the watch cache's state, at its resourceVersion: brought up to the newest for a watch
      // from "" (with sendInitialEvents or without), to the one asked for from N, as it is from "any" (`0`); measured
      // on kube-apiserver v1.37.2 with Secrets written after the last ConfigMap
      let cacheRv: number;
      if (rvParam === '') cacheRv = s.cacheResourceVersion(t.st, s.resourceVersion);
      else if (rvParam === '0') cacheRv = s.cacheResourceVersion(t.st);
      else cacheRv = s.cacheResourceVersion(t.st, parseRv(rvParam, 'resourceVersion', true));
      if (bookmarks) initial.push(event('BOOKMARK', bookmarkObject(cacheRv, { 'k8s.io/initial-events-end': 'true' })));
    } else if (rvParam !== '' && rvParam !== '0') {
      const from = parseRv(rvParam, 'resourceVersion', true);
      if (from < s.compacted) {
        initial.push(event('ERROR', statusOf(410, 'Expired', `too old resource version: ${from} (${s.compacted})`) as unknown as Json));
        ended = true;
      } else {
        for (const c of s.changesSince(from, key)) {
          const line = eventFor(c, match, renderObject);
          if (line) initial.push(line);
        }
      }
    }

    let watcher: Watcher | undefined;
    let timer: NodeJS.Timeout | undefined;
    const close = (): void => {
      if (watcher) this.watchers.delete(watcher);
      watcher = undefined;
      if (timer) clearTimeout(timer);
      timer = undefined;
    };
    return {
      kind: 'watch',
      status: 200,
      headers: { 'content-type': metadataOnly ? 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' : 'application/json', 'transfer-encoding': 'chunked' },
      start: (onLine, onEnd) => {
        for (const line of initial) onLine(line);
        if (ended) {
          onEnd();
          return;
        }
        watcher = {
          typeKey: key,
          match,
          bookmarks,
          render: renderObject,
          bookmarkObject,
          send: onLine,
          end: () => {
            close();
            onEnd();
          },
        };
        this.watchers.add(watcher);
        if (timeoutSeconds > 0) {
          // Node's timers hold at most 2^31-1 ms (past it they fire at once): a longer timeout is one no test outlives
          timer = setTimeout(() => watcher?.end(), Math.min(timeoutSeconds * 1000, 2 ** 31 - 1));
          timer.unref();
        }
      },
      close,
    };
  }
}
