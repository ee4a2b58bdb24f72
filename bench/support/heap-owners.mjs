/**
 * Who holds an operator's V8 heap: reads a heap snapshot (`node
 * --heapsnapshot-signal=SIGWINCH ...`, then `kill -WINCH <pid>`), builds its
 * dominator tree (weak edges left out, so what a node dominates is what
 * would be freed with it) and gives every live node's own size to the
 * nearest dominator that names an owner:
 *
 * - Node's builtins: functions compiled from `node:` scripts, and the
 *   builtins' source strings (external strings in the binary's pages);
 * - the example's bundle (`dist/operator.js`): its source string and every
 *   function compiled from it;
 * - a few framework objects by constructor: the informers (stores and
 *   indexes), the event recorder, prom-client's registry and default
 *   metrics (the event loop delay histogram is native memory), the scheme;
 * - js-yaml (loaded from node_modules to read a kubeconfig file);
 * - the rest by kind ("other: strings", "other: code", ...): data reached
 *   only through shared structures (for the floor, its Map of objects).
 *
 * Prints one table (MiB, largest first) and one JSON line.
 *
 *   node --max-old-space-size=4000 bench/support/heap-owners.mjs Heap.*.heapsnapshot
 */
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) throw new Error('heap-owners.mjs: name a .heapsnapshot file');
const snapshot = JSON.parse(readFileSync(file, 'utf8'));
const meta = snapshot.snapshot.meta;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const { nodes, edges, strings } = snapshot;
const count = nodes.length / NF;
const nodeTypes = meta.node_types[0];
const edgeTypes = meta.edge_types[0];
const TYPE = meta.node_fields.indexOf('type');
const NAME = meta.node_fields.indexOf('name');
const SIZE = meta.node_fields.indexOf('self_size');
const EDGES = meta.node_fields.indexOf('edge_count');
const type = (i) => nodeTypes[nodes[i * NF + TYPE]];
const name = (i) => strings[nodes[i * NF + NAME]];
const size = (i) => nodes[i * NF + SIZE];

const firstEdge = new Uint32Array(count + 1);
for (let i = 0, e = 0; i < count; i++) {
  firstEdge[i] = e;
  e += nodes[i * NF + EDGES] * EF;
  firstEdge[i + 1] = e;
}
const WEAK = edgeTypes.indexOf('weak');
const SHORTCUT = edgeTypes.indexOf('shortcut');

// Depth-first post-order from the root (node 0), with each node's predecessors.
const postOrder = new Int32Array(count).fill(-1);
const order = [];
const reached = new Uint8Array(count);
const preds = Array.from({ length: count }, () => []);
const next = Uint32Array.from(firstEdge.subarray(0, count));
const stack = [0];
reached[0] = 1;
while (stack.length > 0) {
  const v = stack[stack.length - 1];
  let descended = false;
  while (next[v] < firstEdge[v + 1]) {
    const e = next[v];
    next[v] += EF;
    if (edges[e] === WEAK || edges[e] === SHORTCUT) continue;
    const w = edges[e + 2] / NF;
    preds[w].push(v);
    if (!reached[w]) {
      reached[w] = 1;
      stack.push(w);
      descended = true;
      break;
    }
  }
  if (!descended) {
    stack.pop();
    postOrder[v] = order.length;
    order.push(v);
  }
}

// Immediate dominators (Cooper, Harvey and Kennedy's iterative algorithm).
const idom = new Int32Array(count).fill(-1);
idom[0] = 0;
const intersect = (a, b) => {
  while (a !== b) {
    while (postOrder[a] < postOrder[b]) a = idom[a];
    while (postOrder[b] < postOrder[a]) b = idom[b];
  }
  return a;
};
for (let changed = true; changed; ) {
  changed = false;
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k];
    if (v === 0) continue;
    let d = -1;
    for (const p of preds[v]) if (idom[p] !== -1) d = d === -1 ? p : intersect(p, d);
    if (d !== -1 && idom[v] !== d) {
      idom[v] = d;
      changed = true;
    }
  }
}

const edgeTo = (i, edgeName) => {
  for (let e = firstEdge[i]; e < firstEdge[i + 1]; e += EF) {
    const t = edgeTypes[edges[e]];
    if (t !== 'element' && t !== 'hidden' && strings[edges[e + 1]] === edgeName) return edges[e + 2] / NF;
  }
  return -1;
};
/** The script a closure or a SharedFunctionInfo was compiled from. */
const scriptOf = (i) => {
  const shared = type(i) === 'closure' ? edgeTo(i, 'shared') : i;
  if (shared < 0) return undefined;
  const script = edgeTo(shared, 'script');
  if (script < 0) return undefined;
  if (name(script)) return name(script);
  const n = edgeTo(script, 'name');
  return n >= 0 ? name(n) : undefined;
};
const BY_CONSTRUCTOR = {
  Informer: 'cache: informers (stores, indexes)',
  Recorders: 'manager: event recorder',
  Registry: 'prom-client: registry, default metrics',
  ELDHistogram: 'prom-client: registry, default metrics',
  SchemeImpl: 'scheme: registrations',
};
const BUILTIN_SOURCE = /^(\/\/ Copyright|'use strict'|\/\* eslint)/;
function ownerOf(i) {
  const t = type(i);
  const n = name(i);
  if (t === 'object' && BY_CONSTRUCTOR[n]) return BY_CONSTRUCTOR[n];
  if (t === 'closure' && n === 'BuiltinModule') return "Node's builtins: code";
  if (t === 'string' && size(i) > 8192 && BUILTIN_SOURCE.test(n)) return "Node's builtins: sources";
  let script;
  if (t === 'code' && /^(file:|\/|node:)/.test(n)) script = n;
  else if (t === 'closure' || t === 'code') script = scriptOf(i);
  if (!script) return undefined;
  if (/\/dist\/operator[^/]*\.js$/.test(script)) return 'bundle: its source and compiled functions';
  if (script.includes('/js-yaml/')) return 'js-yaml (kubeconfig file)';
  if (script.startsWith('node:') || !script.includes('/')) return "Node's builtins: code";
  return `script ${script.split('/').slice(-2).join('/')}`;
}

// Each node's owner: its own, else its immediate dominator's (memoised along the chain).
const owners = [];
const ownerIndex = new Map();
const memo = new Int32Array(count).fill(-2);
function owner(i) {
  const path = [];
  let v = i;
  let found = -1;
  for (;;) {
    if (memo[v] !== -2) {
      found = memo[v];
      break;
    }
    path.push(v);
    const o = ownerOf(v);
    if (o) {
      if (!ownerIndex.has(o)) {
        ownerIndex.set(o, owners.length);
        owners.push(o);
      }
      found = ownerIndex.get(o);
      break;
    }
    if (v === 0) break;
    v = idom[v];
  }
  for (const p of path) memo[p] = found;
  return found;
}
const totals = new Map();
let live = 0;
for (let i = 0; i < count; i++) {
  if (!reached[i]) continue;
  const o = owner(i);
  const t = type(i);
  const key = o >= 0 ? owners[o] : `other: ${t === 'object' ? 'objects' : t === 'concatenated string' || t === 'sliced string' ? 'string' : t}`;
  totals.set(key, (totals.get(key) ?? 0) + size(i));
  live += size(i);
}
const mib = (bytes) => Number((bytes / 1048576).toFixed(2));
const rows = [...totals].sort((a, b) => b[1] - a[1]);
console.log(`| owner | MiB |\n|---|---:|\n| **live, all** | **${mib(live)}** |`);
for (const [key, bytes] of rows) if (bytes >= 20 * 1024) console.log(`| ${key} | ${mib(bytes)} |`);
console.log(JSON.stringify({ bench: 'heap-owners', file, liveMiB: mib(live), owners: Object.fromEntries(rows.map(([k, v]) => [k, mib(v)])) }));
