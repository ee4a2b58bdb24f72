/**
 * Type-checks every `@example` in the TSDoc of the packages' sources, as
 * Rust's doctests and Go's example_test.go are compiled: a stale example
 * (a renamed option, a removed function, a wrong argument) fails this
 * check. Each ```ts block after an `@example` becomes a module of its own,
 * checked with the workspace's compiler options against the packages'
 * sources (`@kubeloop/*` resolve to `src/`, no build needed), as if it sat
 * next to the file it documents.
 *
 * What an example may use without importing it: the exports of every
 * `@kubeloop/*` entry point (its own package first), and the names in
 * scripts/examples-prelude.ts (the application's objects an example takes
 * for granted: `manager`, `client`, `HardDisk`, `signal`...). Anything else
 * must be imported or declared in the example. Imports written in the
 * example are kept as they are.
 *
 *   node scripts/check-examples.ts            (from the repository root; .ci/run runs it through scripts/test.sh)
 *   node scripts/check-examples.ts --list     (the examples found, one per line)
 *
 * Prints one line per failing example (file:line and the compiler's
 * message) and ends with "examples: N checked, N failed".
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PRELUDE = join(root, 'scripts', 'examples-prelude.ts');

interface Example {
  readonly file: string;
  /** 1-based line of the first code line in `file`. */
  readonly line: number;
  readonly code: string;
  /** The package directory the example belongs to. */
  readonly pkg: string;
}

/** Every ```ts block that follows an `@example` tag, in every TSDoc comment of `file`. */
function examplesOf(file: string, pkg: string): Example[] {
  const text = readFileSync(file, 'utf8');
  const out: Example[] = [];
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const body = comment[0];
    let at = body.indexOf('@example');
    while (at >= 0) {
      const fence = body.indexOf('```', at);
      const nextTag = body.slice(at + 8).search(/\n\s*\*\s*@\w/);
      if (fence < 0 || (nextTag >= 0 && fence > at + 8 + nextTag)) break;
      const open = body.indexOf('\n', fence);
      const close = body.indexOf('```', open);
      if (open < 0 || close < 0) break;
      const lines = body
        .slice(open + 1, close)
        .split('\n')
        .map((l) => l.replace(/^\s*\*( |$)/, ''));
      while (lines.length > 0 && lines.at(-1)!.trim() === '') lines.pop();
      const line = text.slice(0, (comment.index ?? 0) + open + 1).split('\n').length;
      out.push({ file, line, code: lines.join('\n'), pkg });
      at = body.indexOf('@example', close);
    }
  }
  return out;
}

function sourcesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourcesUnder(path));
    else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** `@kubeloop/x[/sub]` → its source entry, from each package's `@kubeloop/source` export condition. */
function entryPoints(): Map<string, string> {
  const out = new Map<string, string>();
  for (const dir of readdirSync(join(root, 'packages'))) {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')) as { name: string; exports?: Record<string, { '@kubeloop/source'?: string }> };
    for (const [sub, conditions] of Object.entries(manifest.exports ?? {})) {
      const source = conditions['@kubeloop/source'];
      if (source) out.set(sub === '.' ? manifest.name : `${manifest.name}/${sub.slice(2)}`, join(root, 'packages', dir, source));
    }
  }
  return out;
}

const entries = entryPoints();
// The example operator's kinds and classes (HardDisk, HardDiskReconciler...) are the world the examples talk about.
entries.set('@kubeloop/example-harddisk-operator', join(root, 'examples', 'harddisk-operator', 'src', 'index.ts'));
const examples = readdirSync(join(root, 'packages'))
  .filter((dir) => statSync(join(root, 'packages', dir, 'src'), { throwIfNoEntry: false })?.isDirectory())
  .flatMap((dir) => sourcesUnder(join(root, 'packages', dir, 'src')).flatMap((file) => examplesOf(file, join(root, 'packages', dir))));

if (process.argv.includes('--list')) {
  for (const e of examples) console.log(`${relative(root, e.file)}:${e.line}`);
  process.exit(0);
}

const base = ts.readConfigFile(join(root, 'tsconfig.base.json'), (path) => ts.sys.readFile(path)).config as { compilerOptions: object };
const parsed = ts.convertCompilerOptionsFromJson(base.compilerOptions, root);
const options: ts.CompilerOptions = {
  ...parsed.options,
  noEmit: true,
  composite: false,
  incremental: false,
  declaration: false,
  declarationMap: false,
  sourceMap: false,
  // As users' builds with decorator metadata (the DI examples use tsyringe's legacy decorators).
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  customConditions: ['@kubeloop/source'],
  baseUrl: root,
  paths: Object.fromEntries([...entries].map(([specifier, file]) => [specifier, [relative(root, file)]])),
};

// Pass 1: what each entry point exports (values and types), and what the prelude declares.
const names = new Map<string, { from: string; typeOnly: boolean }>();
{
  const order = [...entries.keys()];
  const program = ts.createProgram([...entries.values(), PRELUDE, ...new Set(examples.map((e) => e.file))], options);
  const checker = program.getTypeChecker();
  const exportsOf = (file: string): ts.Symbol[] => {
    const source = program.getSourceFile(file);
    const symbol = source && checker.getSymbolAtLocation(source);
    return symbol ? checker.getExportsOfModule(symbol) : [];
  };
  for (const specifier of order) {
    for (const s of exportsOf(entries.get(specifier)!)) {
      const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
      const typeOnly = (target.flags & ts.SymbolFlags.Value) === 0;
      const key = `${specifier}\u0000${s.name}`;
      names.set(key, { from: specifier, typeOnly });
    }
  }
  for (const s of exportsOf(PRELUDE)) {
    const typeOnly = (s.flags & ts.SymbolFlags.Value) === 0;
    names.set(`prelude\u0000${s.name}`, { from: 'prelude', typeOnly });
  }
  // What each documented file exports: an example may use its own file's functions (internal ones included).
  for (const file of new Set(examples.map((e) => e.file))) {
    for (const s of exportsOf(file)) {
      const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
      names.set(`${file}\u0000${s.name}`, { from: file, typeOnly: (target.flags & ts.SymbolFlags.Value) === 0 });
    }
  }
}

/** Names of Node.js and third-party modules an example may use without importing them. */
const THIRD_PARTY_TYPES: Record<string, string> = { V1ConfigMap: '@kubernetes/client-node', V1Pod: '@kubernetes/client-node' };
const THIRD_PARTY: Record<string, string> = {
  CoreV1Api: '@kubernetes/client-node',
  X509Certificate: 'node:crypto',
  Registry: 'prom-client',
  injectable: 'tsyringe',
  inject: 'tsyringe',
  interval: 'rxjs',
  map: 'rxjs',
  existsSync: 'node:fs',
  readFileSync: 'node:fs',
  execFileSync: 'node:child_process',
  expect: 'vitest',
  it: 'vitest',
  describe: 'vitest',
  beforeEach: 'vitest',
  afterEach: 'vitest',
  afterAll: 'vitest',
};

/** Names an example declares itself (so they are not imported). */
function declared(code: string): Set<string> {
  const out = new Set<string>();
  const source = ts.createSourceFile('x.ts', code, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const visit = (node: ts.Node): void => {
    if ((ts.isVariableDeclaration(node) || ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isEnumDeclaration(node)) && node.name) {
      const bind = (n: ts.BindingName | ts.Identifier): void => {
        if (ts.isIdentifier(n)) out.add(n.text);
        else for (const el of n.elements) if (!ts.isOmittedExpression(el)) bind(el.name);
      };
      bind(node.name);
    }
    if (ts.isImportDeclaration(node) && node.importClause) {
      const c = node.importClause;
      if (c.name) out.add(c.name.text);
      if (c.namedBindings && ts.isNamedImports(c.namedBindings)) for (const el of c.namedBindings.elements) out.add(el.name.text);
      if (c.namedBindings && ts.isNamespaceImport(c.namedBindings)) out.add(c.namedBindings.name.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** Identifiers an example refers to (not property names, which belong to their object). */
function used(code: string): Set<string> {
  const out = new Set<string>();
  const source = ts.createSourceFile('x.ts', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node)) {
      const p = node.parent;
      const isName =
        (ts.isPropertyAccessExpression(p) && p.name === node) ||
        ((ts.isPropertyAssignment(p) || ts.isPropertySignature(p) || ts.isPropertyDeclaration(p) || ts.isMethodDeclaration(p) || ts.isMethodSignature(p) || ts.isGetAccessor(p) || ts.isSetAccessor(p)) && p.name === node) ||
        (ts.isQualifiedName(p) && p.right === node) ||
        (ts.isBindingElement(p) && p.propertyName === node) ||
        ts.isLabeledStatement(p);
      if (!isName) out.add(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/**
 * The example as a module: imports of what it uses and does not declare,
 * its own imports, then its code as the body of an async function (so a
 * snippet may `await` and `return` as the code it stands for would).
 */
function moduleOf(example: Example): { text: string; header: number } {
  const pkg = [...entries].find(([, file]) => file.startsWith(`${example.pkg}/`))?.[0];
  const mine = declared(example.code);
  const byModule = new Map<string, string[]>();
  const namespaces: string[] = [];
  for (const name of used(example.code)) {
    if (mine.has(name)) continue;
    if (name === 'http') {
      namespaces.push("import * as http from 'node:http';");
      continue;
    }
    // Its own file, its own package, then package roots before subpaths (`Validator` is the webhook's, not scheme/validation's).
    const candidates = [example.file, pkg, ...[...entries.keys()].sort((a, b) => Number(a.split('/').length > 2) - Number(b.split('/').length > 2))].filter((s): s is string => s !== undefined);
    const found = candidates.map((from) => names.get(`${from}\u0000${name}`)).find((n) => n !== undefined) ??
      (THIRD_PARTY[name] ? { from: THIRD_PARTY[name], typeOnly: false } : THIRD_PARTY_TYPES[name] ? { from: THIRD_PARTY_TYPES[name], typeOnly: true } : names.get(`prelude\u0000${name}`));
    if (!found) continue;
    const list = byModule.get(found.from) ?? [];
    list.push(found.typeOnly ? `type ${name}` : name);
    byModule.set(found.from, list);
  }
  const specifier = (from: string): string => {
    if (from !== 'prelude' && !from.startsWith('/')) return from;
    const path = relative(dirname(example.file), from === 'prelude' ? PRELUDE : from).replace(/\.ts$/, '.js');
    return path.startsWith('.') ? path : `./${path}`;
  };
  const imports = [...namespaces, ...[...byModule].map(([from, list]) => `import { ${list.join(', ')} } from ${JSON.stringify(specifier(from))};`)];
  const lines = example.code.split('\n');
  // The example's own imports go to the top; their lines stay (blank) so line numbers hold.
  const own = lines.map((l) => (/^import\s/.test(l) ? l : ''));
  const body = lines.map((l) => (/^import\s/.test(l) ? '' : l));
  // An example that exports or declares is a module of its own; any other is the body of a function.
  if (lines.some((l) => /^(export|declare)\s/.test(l))) {
    const header = [...imports, ...own.filter((l) => l !== '')];
    return { text: `${header.join('\n')}\n${body.join('\n')}\nexport {};\n`, header: header.length };
  }
  const header = [...imports, ...own.filter((l) => l !== ''), 'export {};', 'export async function example(): Promise<any> {'];
  return { text: `${header.join('\n')}\n${body.join('\n')}\n}\n`, header: header.length };
}

// Pass 2: every example as a module next to the file it documents (so its package's dependencies resolve).
const virtual = new Map<string, { example: Example; text: string; header: number }>();
examples.forEach((example, i) => {
  const name = join(dirname(example.file), `__example_${i}.ts`);
  virtual.set(name, { example, ...moduleOf(example) });
});
const host = ts.createCompilerHost(options);
const readFile = host.readFile.bind(host);
const fileExists = host.fileExists.bind(host);
const getSourceFile = host.getSourceFile.bind(host);
host.readFile = (f) => virtual.get(f)?.text ?? readFile(f);
host.fileExists = (f) => virtual.has(f) || fileExists(f);
host.getSourceFile = (f, lang, onError, create) => {
  const v = virtual.get(f);
  return v ? ts.createSourceFile(f, v.text, lang, true, ts.ScriptKind.TS) : getSourceFile(f, lang, onError, create);
};
const program = ts.createProgram([...virtual.keys()], options, host);
let failures = 0;
const failedExamples = new Set<string>();
for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
  if (diagnostic.file?.fileName === PRELUDE) {
    console.log(`${relative(root, PRELUDE)}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n  ')}`);
    failures++;
    continue;
  }
  const v = diagnostic.file && virtual.get(diagnostic.file.fileName);
  if (!v) continue; // the packages themselves are checked by `pnpm typecheck`
  const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
  console.log(`${relative(root, v.example.file)}:${v.example.line + line - v.header}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n  ')}`);
  failedExamples.add(diagnostic.file!.fileName);
  failures++;
}
console.log(`examples: ${examples.length} checked, ${failedExamples.size} failed (${failures} errors)`);
process.exit(failures > 0 ? 1 : 0);
