/**
 * An immutable picture of what discovery has told the mapper so far. A
 * reload builds a new snapshot and swaps one reference, so a reader sees the
 * old picture or the new one, never a half-updated one.
 */
import type { GroupInfo, ResourceInfo } from './documents.js';
import { gvKey } from './documents.js';

export class Snapshot {
  private kindIndex: Map<string, ResourceInfo[]> | undefined;

  constructor(
    /** Every known group by name ('' is core), versions preferred first. */
    readonly groups: ReadonlyMap<string, GroupInfo>,
    /** Resources of each loaded group-version, keyed `group/version`. */
    readonly loaded: ReadonlyMap<string, readonly ResourceInfo[]>,
  ) {}

  static readonly empty = new Snapshot(new Map(), new Map());

  /** Resources of `group` with this kind, across loaded versions. */
  byGroupKind(group: string, kind: string): readonly ResourceInfo[] {
    if (!this.kindIndex) {
      const index = new Map<string, ResourceInfo[]>();
      for (const list of this.loaded.values()) {
        for (const r of list) {
          const key = `${r.group}\u0000${r.kind}`;
          const bucket = index.get(key);
          if (bucket) bucket.push(r);
          else index.set(key, [r]);
        }
      }
      this.kindIndex = index;
    }
    return this.kindIndex.get(`${group}\u0000${kind}`) ?? [];
  }

  /** Versions of `group` (preferred first) that are not loaded yet, limited to `wanted` when given. */
  unloadedVersions(group: string, wanted: readonly string[]): string[] {
    const info = this.groups.get(group);
    if (!info) return [];
    const versions = wanted.length > 0 ? wanted.filter((v) => info.versions.includes(v)) : info.versions;
    return versions.filter((v) => !this.loaded.has(gvKey(group, v)));
  }

  /** Replace the groups that one group-list document covers, keeping the others. */
  withGroupList(
    covers: (group: string) => boolean,
    groups: readonly GroupInfo[],
    resources: ReadonlyMap<string, readonly ResourceInfo[]> | undefined,
    reloadGroup: string | undefined,
  ): Snapshot {
    const nextGroups = new Map<string, GroupInfo>();
    for (const [name, info] of this.groups) if (!covers(name)) nextGroups.set(name, info);
    for (const g of groups) nextGroups.set(g.name, g);
    const nextLoaded = new Map<string, readonly ResourceInfo[]>();
    for (const [key, list] of this.loaded) {
      const group = key.slice(0, key.lastIndexOf('/'));
      const version = key.slice(key.lastIndexOf('/') + 1);
      if (covers(group)) {
        // Keep a group-version only if the new list still serves it, and it
        // is not the group a miss asked to reload.
        if (group === reloadGroup) continue;
        if (!nextGroups.get(group)?.versions.includes(version)) continue;
      }
      nextLoaded.set(key, list);
    }
    if (resources) for (const [key, list] of resources) nextLoaded.set(key, list);
    return new Snapshot(nextGroups, nextLoaded);
  }

  /** Add (or replace) one group-version's resources. */
  withGroupVersion(group: string, version: string, resources: readonly ResourceInfo[]): Snapshot {
    const loaded = new Map(this.loaded);
    loaded.set(gvKey(group, version), resources);
    return new Snapshot(this.groups, loaded);
  }

  /** Drop a group-version the server no longer serves (it answered 404). */
  withoutGroupVersion(group: string, version: string): Snapshot {
    const loaded = new Map(this.loaded);
    loaded.delete(gvKey(group, version));
    const groups = new Map(this.groups);
    const info = groups.get(group);
    if (info) {
      const versions = info.versions.filter((v) => v !== version);
      if (versions.length > 0) groups.set(group, { name: group, versions });
      else groups.delete(group);
    }
    return new Snapshot(groups, loaded);
  }

  /**
   * Drop what is known of one kind of a group (its CRD was deleted): the
   * next lookup of it misses here and so asks the server again.
   */
  withoutKind(group: string, kind: string): Snapshot {
    if (this.byGroupKind(group, kind).length === 0) return this;
    const loaded = new Map<string, readonly ResourceInfo[]>();
    for (const [key, list] of this.loaded) loaded.set(key, list.some((r) => r.group === group && r.kind === kind) ? list.filter((r) => !(r.group === group && r.kind === kind)) : list);
    return new Snapshot(this.groups, loaded);
  }

  /** Every loaded resource, groups and versions in preference order. */
  allResources(): ResourceInfo[] {
    const out: ResourceInfo[] = [];
    for (const info of this.groups.values()) {
      for (const v of info.versions) out.push(...(this.loaded.get(gvKey(info.name, v)) ?? []));
    }
    return out;
  }
}
