/**
 * Which parts of the node binary a running process holds in memory: its
 * resident pages of the binary (from /proc/<pid>/maps and /proc/<pid>/pagemap),
 * by ELF section and, inside .text and .rodata, by the symbol each page
 * starts in (from `nm`), grouped by the component that symbol belongs to
 * (V8, OpenSSL, ICU, Node, ...). File-backed pages of the binary are most of
 * an operator's file RSS (docs/benchmarks.md, "Inside the node binary").
 *
 *   node bench/support/binary-pages.ts <pid>        (as root: pagemap needs it; `nm` and `readelf` on PATH)
 *
 * A pid to look at: `pnpm bench:memory --sizes=0 --harddisks=1000 --only=example --hold=600` logs one.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readlinkSync, readSync } from 'node:fs';

const PAGE = 4096;
const pid = Number(process.argv[2]);
if (!Number.isInteger(pid) || pid <= 0) {
  console.error('usage: node bench/support/binary-pages.ts <pid>');
  process.exit(2);
}
const binary = readlinkSync(`/proc/${pid}/exe`);

/** The process's mappings of the binary: address range, file offset. */
const mappings = readFileSync(`/proc/${pid}/maps`, 'utf8')
  .split('\n')
  .map((line) => line.trim().split(/\s+/))
  .filter((f) => f[5] === binary)
  .map((f) => {
    const [lo, hi] = f[0]!.split('-').map((h) => parseInt(h, 16)) as [number, number];
    return { lo, hi, offset: parseInt(f[2]!, 16) };
  });

/** Section headers: name, address, file offset, size. */
const sections = execFileSync('readelf', ['-S', '-W', binary], { encoding: 'utf8', maxBuffer: 1 << 26 })
  .split('\n')
  .map((l) => /^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)/.exec(l))
  .filter((m): m is RegExpExecArray => m !== null && parseInt(m[2]!, 16) > 0)
  .map((m) => ({ name: m[1]!, addr: parseInt(m[2]!, 16), offset: parseInt(m[3]!, 16), size: parseInt(m[4]!, 16) }));

/** Defined symbols by address (demangled), with their sizes where `nm` knows them. */
const symbols = execFileSync('nm', ['-C', '-S', '--defined-only', '-n', binary], { encoding: 'utf8', maxBuffer: 1 << 30 })
  .split('\n')
  .map((l) => /^([0-9a-f]+) (?:([0-9a-f]+) )?\S (.*)$/.exec(l))
  .filter((m): m is RegExpExecArray => m !== null)
  .map((m) => ({ addr: parseInt(m[1]!, 16), size: m[2] ? parseInt(m[2], 16) : 0, name: m[3]! }));

/** The symbol a byte belongs to, or undefined when it lies past the end of the nearest one (data without a symbol). */
function symbolAt(addr: number): string | undefined {
  let lo = 0;
  let hi = symbols.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (symbols[mid]!.addr <= addr) lo = mid;
    else hi = mid - 1;
  }
  const found = symbols[lo];
  if (!found || found.addr > addr) return undefined;
  // A symbol without a size (a label) covers up to the next one only when that is near.
  const end = found.size > 0 ? found.addr + found.size : (symbols[lo + 1]?.addr ?? found.addr) - found.addr < 65536 ? symbols[lo + 1]!.addr : found.addr + 1;
  return addr < end ? found.name : undefined;
}

const file = openSync(binary, 'r');
const sample = Buffer.alloc(PAGE);
/** What a page without a symbol holds, judged by its bytes: Node's built-in JavaScript sources are text; the rest is binary data. */
function unsymbolized(fileOffset: number): string {
  readSync(file, sample, 0, PAGE, fileOffset);
  let text = 0;
  for (const b of sample) if (b === 9 || b === 10 || (b >= 32 && b < 127)) text++;
  return text > PAGE * 0.97 ? '(no symbol: text, Node\'s built-in JavaScript sources)' : '(no symbol: binary data, Node\'s embedded V8 snapshot and code cache)';
}

/** The component a symbol belongs to, by its name. */
function component(name: string): string {
  if (/icudt|^icu_|icu::/.test(name)) return 'ICU';
  if (/maglev/i.test(name)) return 'V8 Maglev';
  if (/compiler::|turboshaft/.test(name)) return 'V8 TurboFan';
  if (/wasm/i.test(name)) return 'V8 WebAssembly';
  if (/v8::|v8_|cppgc|Builtins_/.test(name)) return 'V8';
  if (/^(ossl|EVP|SSL|X509|BN_|OPENSSL|ASN1|CRYPTO|EC_|ec_|RSA|SHA|AES|aesni|gcm_|ecp_|ERR_|PEM_|BIO_|OBJ_|nid_|tls|dtls|ssl)/.test(name) || /ncrypto|node::crypto/.test(name)) return 'OpenSSL and node:crypto';
  if (/^uv_|^uv__/.test(name)) return 'libuv';
  if (/simdjson|simdutf/.test(name)) return 'simdjson, simdutf';
  if (/^ada::/.test(name)) return 'ada (URLs)';
  if (/llhttp|nghttp|ngtcp|nbytes/.test(name)) return 'HTTP parsers';
  if (/node::|^node_/.test(name)) return 'Node';
  return 'other';
}

const pagemap = openSync(`/proc/${pid}/pagemap`, 'r');
const bySection = new Map<string, number>();
const byComponent = new Map<string, number>();
const bySymbol = new Map<string, number>();
const add = (m: Map<string, number>, k: string): void => void m.set(k, (m.get(k) ?? 0) + PAGE);
for (const { lo, hi, offset } of mappings) {
  const pages = (hi - lo) / PAGE;
  const entries = Buffer.alloc(pages * 8);
  readSync(pagemap, entries, 0, entries.length, (lo / PAGE) * 8);
  for (let i = 0; i < pages; i++) {
    if ((entries.readBigUInt64LE(i * 8) >> 63n) === 0n) continue; // not resident
    // Where this page is in the file, then where that is in the ELF address space (a remapped copy has its own address).
    const fileOffset = offset + i * PAGE;
    const section = sections.find((s) => fileOffset >= s.offset && fileOffset < s.offset + s.size);
    const remapped = lo !== (section ? section.addr - section.offset + offset : lo);
    add(bySection, section ? `${section.name}${remapped ? ' (remapped copy)' : ''}` : '(between sections)');
    if (section && (section.name === '.text' || section.name === '.rodata')) {
      // The page's first byte, or the first byte in it that belongs to a symbol.
      let name: string | undefined;
      for (let b = 0; b < PAGE && name === undefined; b += 256) name = symbolAt(section.addr + (fileOffset - section.offset) + b);
      const what = name === undefined ? unsymbolized(fileOffset) : component(name);
      add(byComponent, `${section.name} ${what}`);
      add(bySymbol, `${section.name} ${name === undefined ? what : name.slice(0, 100)}`);
    }
  }
}
closeSync(pagemap);
closeSync(file);

const mib = (b: number): string => (b / 2 ** 20).toFixed(2).padStart(7);
const table = (title: string, m: Map<string, number>, n = Infinity): void => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${mib(v)} MiB  ${k}`);
};
const total = [...bySection.values()].reduce((a, b) => a + b, 0);
console.log(`${binary}: ${mib(total)} MiB resident in process ${pid}`);
table('by section', bySection);
table('.text and .rodata by the component of the symbol in each page (a page without one: judged by its bytes)', byComponent);
table('the symbols with the most pages', bySymbol, 15);
console.log(JSON.stringify({ bench: 'binary-pages', pid, binary, residentMiB: +(total / 2 ** 20).toFixed(2), sections: Object.fromEntries([...bySection].map(([k, v]) => [k, +(v / 2 ** 20).toFixed(2)])) }));
