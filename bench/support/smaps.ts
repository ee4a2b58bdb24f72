/**
 * A process's resident memory by what backs it, from /proc/<pid>/smaps: each
 * mapping's Rss given to one group (docs/benchmarks.md, "Where the optimizing
 * compilers' memory is"). The groups are read from the mappings themselves,
 * so they are a classification by shape, not by owner:
 *
 * - the node binary (the file /proc/<pid>/exe points at): its executable
 *   mappings (machine code) and the others (read-only data, relocations,
 *   .data);
 * - glibc's main arena: the `[heap]` mapping (brk);
 * - the other threads' malloc arenas: anonymous mappings that start on a
 *   64 MiB boundary and, with the PROT_NONE mapping right after them, span
 *   64 MiB (glibc reserves each thread arena's heap that way);
 * - V8's code space: anonymous executable mappings;
 * - V8's heap pages: anonymous read-write mappings whose start and size are
 *   multiples of 256 KiB (V8's page size; adjacent pages merge into one
 *   mapping), the arenas above excepted;
 * - stacks (`[stack]`), other files (libraries, ICU data if loaded from a
 *   file), other anonymous memory.
 *
 *   node bench/support/smaps.ts <pid>       (one JSON line: MiB per group)
 *   pnpm bench:memory ... --smaps           (the same for every HardDisk operator, read when its figures are)
 */
import { readFileSync, readlinkSync } from 'node:fs';

const KIB_256 = 256 * 1024;
const MIB_64 = 64 * 1024 * 1024;

/** The groups, in the order they are reported. */
export const SMAPS_GROUPS = [
  'node binary, machine code',
  'node binary, read-only data and data',
  "V8's heap pages (256 KiB mappings)",
  "glibc's main arena ([heap])",
  "the other threads' malloc arenas",
  "V8's code space (anonymous, executable)",
  'stacks',
  'other files',
  'other anonymous',
] as const;
export type SmapsGroup = (typeof SMAPS_GROUPS)[number];

interface Mapping {
  readonly lo: number;
  readonly hi: number;
  readonly perms: string;
  readonly path: string;
  rss: number;
}

function mappingsOf(pid: number): Mapping[] {
  const out: Mapping[] = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      out.push({ lo: parseInt(head[1]!, 16), hi: parseInt(head[2]!, 16), perms: head[3]!, path: head[4]!.trim(), rss: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && out.length > 0) out.at(-1)!.rss = Number(rss[1]) * 1024;
  }
  return out;
}

/** Resident bytes of `pid` per group, and their total (VmRSS, give or take the moment between the two reads). */
export function smapsGroups(pid: number): { total: number; groups: Record<SmapsGroup, number> } {
  const exe = readlinkSync(`/proc/${pid}/exe`);
  const maps = mappingsOf(pid);
  const groups = Object.fromEntries(SMAPS_GROUPS.map((g) => [g, 0])) as Record<SmapsGroup, number>;
  const arenaAt = (i: number): boolean => {
    const m = maps[i]!;
    if (m.path !== '' || m.lo % MIB_64 !== 0) return false;
    if (m.hi - m.lo === MIB_64) return true;
    const next = maps[i + 1];
    return next !== undefined && next.lo === m.hi && next.path === '' && next.perms.startsWith('---') && next.hi - m.lo === MIB_64;
  };
  maps.forEach((m, i) => {
    const path = m.path.replace(/ \(deleted\)$/, '');
    let group: SmapsGroup;
    if (path === exe) group = m.perms.includes('x') ? 'node binary, machine code' : 'node binary, read-only data and data';
    else if (path === '[heap]') group = "glibc's main arena ([heap])";
    else if (path.startsWith('[stack')) group = 'stacks';
    else if (path.startsWith('/')) group = 'other files';
    else if (path !== '') group = 'other anonymous'; // [vdso], [vvar], [anon:...]
    else if (arenaAt(i) || (m.perms.startsWith('---') && i > 0 && arenaAt(i - 1))) group = "the other threads' malloc arenas";
    else if (m.perms.includes('x')) group = "V8's code space (anonymous, executable)";
    else if (m.perms.startsWith('rw') && m.lo % KIB_256 === 0 && (m.hi - m.lo) % KIB_256 === 0) group = "V8's heap pages (256 KiB mappings)";
    else group = 'other anonymous';
    groups[group] += m.rss;
  });
  return { total: maps.reduce((sum, m) => sum + m.rss, 0), groups };
}

if (import.meta.main) {
  const pid = Number(process.argv[2]);
  if (!Number.isInteger(pid) || pid <= 0) {
    console.error('usage: node bench/support/smaps.ts <pid>');
    process.exit(2);
  }
  const { total, groups } = smapsGroups(pid);
  const mib = (b: number): number => Number((b / 1048576).toFixed(1));
  console.log(JSON.stringify({ pid, totalMiB: mib(total), groupsMiB: Object.fromEntries(Object.entries(groups).map(([k, v]) => [k, mib(v)])) }));
}
