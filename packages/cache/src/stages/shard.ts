/**
 * The shard stage: a list-watch that keeps one shard of a kind. It asks the
 * API server to filter (`shardSelector`, KEP-5866) where the filter allows,
 * checks every object that comes back anyway, drops what is out of range
 * before the reflector sees it, and stops asking once the server has shown
 * it ignores the selector (a server without the `ShardedListAndWatch` gate
 * answers as if it was not there). A change of the filter's ranges tells
 * the reflector to relist; a shard that holds no range covers nothing.
 *
 * What it does shows in the reflector's stats: `shardServer`,
 * `shardDropped`, and `watchEvents` (events it dropped count there too:
 * what the API server sent).
 */
import type { ShardRange, ShardSelector, WatchEvent } from '@kubeloop/client';
import { eventsInScope, pageInScope } from './scope.js';
import type { KubeObject, ObjectList } from '@kubeloop/scheme';
import type { ListPageOptions, ListWatchStage, ListWatcher, WatchFromOptions } from '../list-watch.js';
import type { ReflectorStats } from '../reflector.js';
import { inShard, serverSelector } from '../shard-filter.js';
import type { ShardFilter } from '../shard-filter.js';

type ShardStats = Pick<ReflectorStats, 'shardServer' | 'shardDropped' | 'watchEvents'>;

/**
 * A stage that keeps the objects in `filter`'s ranges (see
 * {@link ShardFilter}). The informer cache applies it for `byKind` options
 * with a `shard`; use it directly around a list-watch of your own.
 *
 * @example
 * ```ts
 * const lw = withStages(clientListWatcher(client, ConfigMap), [shardStage(staticShard('uid', [{ start: 0n, end: 1n << 63n }]))]);
 * const held = new Map<string, ConfigMap>();
 * const reflector = new Reflector(lw, {
 *   replace: (objects) => { held.clear(); for (const o of objects) held.set(`${o.metadata?.namespace}/${o.metadata?.name}`, o); },
 *   apply: (type, o) => (type === 'DELETED' ? held.delete(`${o.metadata?.namespace}/${o.metadata?.name}`) : held.set(`${o.metadata?.namespace}/${o.metadata?.name}`, o)),
 * });
 * ```
 */
export function shardStage<T extends KubeObject>(filter: ShardFilter): ListWatchStage<T> {
  return (inner) => new ShardListWatcher(inner, filter);
}

class ShardListWatcher<T extends KubeObject> implements ListWatcher<T> {
  /** The ranges of the current list and the watches after it. */
  private ranges: readonly ShardRange[] = [];
  private stats: ShardStats = { shardServer: 'off', shardDropped: 0, watchEvents: 0 };

  constructor(
    private readonly inner: ListWatcher<T>,
    private readonly filter: ShardFilter,
  ) {}

  attach(stats: ReflectorStats): void {
    this.stats = stats;
    this.inner.attach?.(stats);
  }

  subscribe(listener: () => void): () => void {
    const mine = this.filter.subscribe?.(listener);
    const theirs = this.inner.subscribe?.(listener);
    return () => {
      mine?.();
      theirs?.();
    };
  }

  coversNothing(): boolean {
    return this.filter.ranges().length === 0 || this.inner.coversNothing?.() === true;
  }

  /** The selector to send now: none once the server has shown it ignores it. */
  private selector(): ShardSelector | undefined {
    return this.stats.shardServer === 'ignored' ? undefined : serverSelector(this.filter, this.ranges);
  }

  private asked(selector: ShardSelector | undefined): void {
    if (selector !== undefined && this.stats.shardServer === 'off') this.stats.shardServer = 'honoured';
  }

  /** Whether an object is in range; one out of range that the server was asked to filter shows it ignores the selector. */
  private admit(object: KubeObject, asked: boolean): boolean {
    if (inShard(object, this.filter, this.ranges)) return true;
    this.stats.shardDropped++;
    if (asked) this.stats.shardServer = 'ignored';
    return false;
  }

  async list(options: ListPageOptions): Promise<ObjectList<T>> {
    // A new list (not its next page) takes the filter's current ranges.
    if (options.continue === undefined) this.ranges = [...this.filter.ranges()];
    const selector = this.selector();
    const page = await this.inner.list(selector ? { ...options, shardSelector: selector } : options);
    this.asked(selector);
    return pageInScope(page, (item) => this.admit(item, selector !== undefined));
  }

  async watch(options: WatchFromOptions): Promise<AsyncIterableIterator<WatchEvent<T>>> {
    // A streaming list is a new list: the filter's current ranges.
    if (options.sendInitialEvents) this.ranges = [...this.filter.ranges()];
    const selector = this.selector();
    const events = await this.inner.watch(selector ? { ...options, shardSelector: selector } : options);
    this.asked(selector);
    const asked = selector !== undefined;
    // Dropped events count in watchEvents too: sent by the server, counted as the reflector counts what it sees.
    return eventsInScope(events, (object) => this.admit(object, asked), options.sendInitialEvents === true, () => this.stats.watchEvents++);
  }
}
