/**
 * Where a CPU profile's time went: `node bench/support/cpu-profile-top.mjs <dir of .cpuprofile> [N] [bundle source map]`
 * prints, per profile, self time by category (Node's internal modules, native frames, the bundle), the bundle's
 * self time by original source file (through its source map, e.g. examples/harddisk-operator/dist/operator.js.map),
 * and the N (default 50) functions with the most self time. Sampled wall time of the main thread: a busy
 * machine inflates it (a syscall preempted counts), so read profiles against each other, not as CPU seconds.
 *
 *   node bench/support/cpu-profile-top.mjs /tmp/prof-s 70 examples/harddisk-operator/dist/operator.js.map
 */
import { readFileSync, readdirSync } from 'node:fs';
import { SourceMap } from 'node:module';
const dir = process.argv[2];
const mapFile = process.argv[4];
const sm = mapFile ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8'))) : undefined;
const files = readdirSync(dir).filter(f => f.endsWith('.cpuprofile'));
for (const f of files) {
  const p = JSON.parse(readFileSync(`${dir}/${f}`, 'utf8'));
  const byId = new Map(p.nodes.map(n => [n.id, n]));
  const self = new Map();
  const dt = p.timeDeltas; let total = 0;
  for (let i = 0; i < p.samples.length; i++) { const d = dt[i] ?? 0; total += d; self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + d); }
  const byFn = new Map(); const byCat = new Map(); const bySrc = new Map();
  for (const [id, t] of self) {
    const n = byId.get(id); const cf = n.callFrame;
    let url = cf.url, src = '';
    if (sm && cf.url.includes('operator.js')) { const e = sm.findEntry(cf.lineNumber, cf.columnNumber); src = (e.originalSource ?? '?').replace(/^.*?(packages|node_modules|examples)\//, '$1/').replace(/^.*\.pnpm\/[^/]*\/node_modules\//,'nm:'); url = src; bySrc.set(src, (bySrc.get(src) ?? 0) + t); }
    const key = `${cf.functionName || '(anon)'} ${url.replace(/^.*\/node_modules\//, 'nm:')}:${cf.lineNumber}`;
    byFn.set(key, (byFn.get(key) ?? 0) + t);
    let cat = cf.url.startsWith('node:') ? cf.url.split('/').slice(0,2).join('/') : cf.url === '' ? cf.functionName : cf.url.includes('operator.js') ? 'bundle' : cf.url;
    byCat.set(cat, (byCat.get(cat) ?? 0) + t);
  }
  console.log(`${f}: total ${(total/1e6).toFixed(2)} s`);
  const top = (m, n) => [...m].sort((a,b)=>b[1]-a[1]).slice(0,n).map(([k,v]) => `${(v/1e3).toFixed(0).padStart(7)} ms  ${k}`).join('\n');
  console.log('--- by category'); console.log(top(byCat, 25));
  console.log('--- bundle by source'); console.log(top(bySrc, 40));
  console.log('--- by function'); console.log(top(byFn, Number(process.argv[3] ?? 50)));
}
