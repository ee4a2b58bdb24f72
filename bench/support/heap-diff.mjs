/**
 * What grew between two heap snapshots of one process (`pnpm bench:soak
 * --heap-snapshots=4,11`, or `node --heapsnapshot-signal=SIGUSR2` and two
 * `kill -USR2`): V8 keeps a node's id across snapshots of one isolate, so a
 * node of the later snapshot whose id the earlier one lacks was allocated
 * in between and is still alive.
 *
 * Prints, largest first (bytes are V8's self sizes, MB = 10^6 bytes):
 * - by constructor: count and self size in each snapshot, and the change;
 * - the owners of what is new: every new node is walked up the shortest
 *   path from the root (weak edges left out) to the first node the earlier
 *   snapshot had, and its size given to that node; an old Map, array or
 *   object that keeps taking new entries is at the top, with its path;
 * - with --strings, samples of the new strings under each top owner.
 *
 *   node --max-old-space-size=4000 bench/support/heap-diff.mjs before.heapsnapshot after.heapsnapshot [--top=30] [--strings]
 */
import { readFileSync } from 'node:fs';

const [fileA, fileB] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (!fileA || !fileB) throw new Error('heap-diff.mjs: name two .heapsnapshot files, the earlier first');
const top = Number(process.argv.find((a) => a.startsWith('--top='))?.slice(6) ?? 30);
const showStrings = process.argv.includes('--strings');

function load(file) {
  const s = JSON.parse(readFileSync(file, 'utf8'));
  const meta = s.snapshot.meta;
  const NF = meta.node_fields.length;
  const EF = meta.edge_fields.length;
  const f = (name) => meta.node_fields.indexOf(name);
  const ef = (name) => meta.edge_fields.indexOf(name);
  return {
    nodes: s.nodes,
    edges: s.edges,
    strings: s.strings,
    NF,
    EF,
    count: s.nodes.length / NF,
    nodeTypes: meta.node_types[0],
    edgeTypes: meta.edge_types[0],
    TYPE: f('type'),
    NAME: f('name'),
    ID: f('id'),
    SIZE: f('self_size'),
    EDGES: f('edge_count'),
    ETYPE: ef('type'),
    ENAME: ef('name_or_index'),
    ETO: ef('to_node'),
  };
}

const A = load(fileA);
const B = load(fileB);
const typeOf = (S, i) => S.nodeTypes[S.nodes[i * S.NF + S.TYPE]];
const nameOf = (S, i) => S.strings[S.nodes[i * S.NF + S.NAME]];
const idOf = (S, i) => S.nodes[i * S.NF + S.ID];
const sizeOf = (S, i) => S.nodes[i * S.NF + S.SIZE];
/** A node's label for grouping: objects and closures by constructor or name, the rest by type. */
const label = (S, i) => {
  const t = typeOf(S, i);
  if (t === 'object' || t === 'closure' || t === 'native') return `${t} ${nameOf(S, i)}`;
  if (t === 'hidden' || t === 'array' || t === 'code' || t === 'object shape') return `(${t}) ${nameOf(S, i).slice(0, 40)}`;
  return `(${t})`;
};

// --- by constructor ---
const byLabel = new Map();
for (const [S, k] of [[A, 0], [B, 1]]) {
  for (let i = 0; i < S.count; i++) {
    const l = label(S, i);
    const row = byLabel.get(l) ?? [0, 0, 0, 0];
    row[k * 2] += 1;
    row[k * 2 + 1] += sizeOf(S, i);
    byLabel.set(l, row);
  }
}
const mb = (b) => (b / 1e6).toFixed(3);
const totalA = [...byLabel.values()].reduce((a, r) => a + r[1], 0);
const totalB = [...byLabel.values()].reduce((a, r) => a + r[3], 0);
process.stdout.write(`\nheap: ${mb(totalA)} MB in ${A.count} nodes -> ${mb(totalB)} MB in ${B.count} nodes\n\nby constructor (largest change first):\n\n`);
process.stdout.write('| label | count before | count after | change | MB before | MB after | change MB |\n|---|---:|---:|---:|---:|---:|---:|\n');
const rows = [...byLabel.entries()].sort((x, y) => Math.abs(y[1][3] - y[1][1]) - Math.abs(x[1][3] - x[1][1])).slice(0, top);
for (const [l, [ca, sa, cb, sb]] of rows) process.stdout.write(`| ${l.replace(/\|/g, '\\|')} | ${ca} | ${cb} | ${cb - ca} | ${mb(sa)} | ${mb(sb)} | ${mb(sb - sa)} |\n`);

// --- owners of the new nodes in B ---
const oldIds = new Set();
for (let i = 0; i < A.count; i++) oldIds.add(idOf(A, i));
const firstEdge = new Uint32Array(B.count + 1);
for (let i = 0, e = 0; i < B.count; i++) {
  firstEdge[i] = e;
  e += B.nodes[i * B.NF + B.EDGES] * B.EF;
  firstEdge[i + 1] = e;
}
const WEAK = B.edgeTypes.indexOf('weak');
const SHORTCUT = B.edgeTypes.indexOf('shortcut');
const ELEMENT = B.edgeTypes.indexOf('element');
const HIDDEN = B.edgeTypes.indexOf('hidden');
// Breadth first from the root: each node's parent on a shortest path, and the edge's name.
const parent = new Int32Array(B.count).fill(-1);
const parentEdge = new Int32Array(B.count).fill(-1);
parent[0] = 0;
let queue = [0];
while (queue.length > 0) {
  const nextQueue = [];
  for (const n of queue) {
    for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += B.EF) {
      const et = B.edges[e + B.ETYPE];
      if (et === WEAK || et === SHORTCUT) continue;
      const to = B.edges[e + B.ETO] / B.NF;
      if (parent[to] !== -1) continue;
      parent[to] = n;
      parentEdge[to] = e;
      nextQueue.push(to);
    }
  }
  queue = nextQueue;
}
const edgeName = (e) => {
  const et = B.edges[e + B.ETYPE];
  const v = B.edges[e + B.ENAME];
  return et === ELEMENT || et === HIDDEN ? `[${v}]` : `.${B.strings[v]}`;
};
const pathTo = (n) => {
  const parts = [];
  for (let k = n, depth = 0; k !== 0 && depth < 12; k = parent[k], depth++) parts.push(`${edgeName(parentEdge[k])}`);
  return parts.reverse().join('').slice(-220);
};
const owner = new Int32Array(B.count).fill(-2); // -2 unknown, -1 unreachable
const ownerOf = (n) => {
  const chain = [];
  let k = n;
  while (owner[k] === -2) {
    if (parent[k] === -1) {
      owner[k] = -1;
      break;
    }
    if (oldIds.has(idOf(B, k)) || k === 0) {
      owner[k] = k;
      break;
    }
    chain.push(k);
    k = parent[k];
  }
  for (const c of chain) owner[c] = owner[k];
  return owner[n];
};
const owners = new Map();
let newBytes = 0;
let newCount = 0;
for (let i = 0; i < B.count; i++) {
  if (oldIds.has(idOf(B, i))) continue;
  const o = ownerOf(i);
  if (o < 0) continue;
  newBytes += sizeOf(B, i);
  newCount++;
  const row = owners.get(o) ?? { bytes: 0, count: 0, samples: [] };
  row.bytes += sizeOf(B, i);
  row.count++;
  if (showStrings && typeOf(B, i) === 'string' && row.samples.length < 8) row.samples.push(nameOf(B, i).slice(0, 80));
  owners.set(o, row);
}
process.stdout.write(`\nnew since the earlier snapshot and reachable: ${newCount} nodes, ${mb(newBytes)} MB; their nearest old owners (largest first):\n\n`);
process.stdout.write('| owner | id | new nodes | new MB | path from the root |\n|---|---:|---:|---:|---|\n');
for (const [o, row] of [...owners.entries()].sort((x, y) => y[1].bytes - x[1].bytes).slice(0, top)) {
  process.stdout.write(`| ${label(B, o).replace(/\|/g, '\\|')} | ${idOf(B, o)} | ${row.count} | ${mb(row.bytes)} | ${pathTo(o).replace(/\|/g, '\\|')} |\n`);
  if (row.samples.length > 0) process.stdout.write(`|  | | | | strings: ${row.samples.map((s) => JSON.stringify(s)).join(', ').replace(/\|/g, '\\|')} |\n`);
}
