/**
 * The commands the docs tell users to run: every line of every `sh`, `bash`,
 * `shell` or `console` code block in README.md, docs/*.md and the scaffold's
 * README (packages/create-kubeloop/templates/README.md), with comments and
 * line continuations resolved. test/doc-commands.test.ts checks each one is
 * accounted for below; the registry e2e (test/e2e/registry-docs.test.ts) runs the
 * scaffold's, exactly as written, from a published scaffold; the README's own
 * are run by test/e2e/readme-commands.test.ts. A command added to a doc
 * without a place here fails the first test, so none escapes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One command as a doc shows it. */
export interface DocCommand {
  /** The file, relative to the repository root. */
  readonly file: string;
  /** Its first line, 1-based. */
  readonly line: number;
  /** The command, comments dropped, continuation lines joined. */
  readonly text: string;
  /** Which code block of the file it is in (0-based): a long-running command runs while the rest of its block does. */
  readonly block: number;
}

/** The files whose commands are checked, relative to the repository root. */
export function documentedFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  return ['README.md', ...docs, 'packages/create-kubeloop/templates/README.md'];
}

/** Drops a `# comment` that starts outside quotes after whitespace (or at the start). */
function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) {
      return line.slice(0, i).trimEnd();
    }
  }
  return line.trimEnd();
}

/** Every command of one markdown text. */
export function commandsOf(file: string, markdown: string): DocCommand[] {
  const out: DocCommand[] = [];
  const lines = markdown.split('\n');
  let inBlock = false;
  let block = -1;
  let pending: { text: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const fence = /^\s*```(\S*)/.exec(raw);
    if (fence) {
      if (inBlock) {
        inBlock = false;
      } else if (['sh', 'bash', 'shell', 'console'].includes(fence[1]!)) {
        inBlock = true;
        block++;
      } else {
        // another language's block: skip to its end
        const end = lines.findIndex((l, j) => j > i && /^\s*```\s*$/.test(l));
        i = end < 0 ? lines.length : end;
      }
      continue;
    }
    if (!inBlock) continue;
    const text = stripComment(raw.replace(/^\$ /, '')).trim();
    if (pending) {
      pending.text += ` ${text.replace(/\\$/, '').trim()}`;
      if (!text.endsWith('\\')) {
        out.push({ file, line: pending.line, text: pending.text.replace(/\s+/g, ' ').trim(), block });
        pending = undefined;
      }
      continue;
    }
    if (text === '') continue;
    if (text.endsWith('\\')) pending = { text: text.slice(0, -1).trim(), line: i + 1 };
    else out.push({ file, line: i + 1, text, block });
  }
  return out;
}

/** The project getting-started.md creates; the scaffold's README is read as that project has it. */
export const WALKTHROUGH_PROJECT = 'website-operator';

/** The scaffold's README as `pnpm create kubeloop website-operator` writes it. */
function rendered(file: string, text: string): string {
  if (!file.includes('/templates/')) return text;
  return text.replaceAll('{{name}}', WALKTHROUGH_PROJECT).replaceAll('{{group}}', `${WALKTHROUGH_PROJECT}.example.com`);
}

/** Every command of every documented file. */
export function documentedCommands(root: string): DocCommand[] {
  return documentedFiles(root).flatMap((f) => commandsOf(f, rendered(f, readFileSync(join(root, f), 'utf8'))));
}

/** Where a documented command is run, when not by the registry e2e's walkthrough of a new project. */
export interface RunElsewhere {
  /** The test (or CI step) that runs it, and how. */
  readonly elsewhere: string;
}

/** A command no test can run on the test machine, and why. */
export interface NotHere {
  readonly notHere: string;
}

/**
 * Commands not run by the scaffold walkthrough, keyed by their text. Every
 * other command of getting-started, rbac, schema and the scaffold's README is
 * run by it (the registry e2e).
 */
export const NOT_IN_WALKTHROUGH: Readonly<Record<string, RunElsewhere | NotHere>> = {
  'bash scripts/test.sh': { elsewhere: '.ci/run runs exactly this on a clean checkout for every submission' },
  'bash scripts/dev.sh': { elsewhere: 'test/e2e/readme-commands.test.ts (the README main job, then the commands that follow it)' },
  'export KUBECONFIG=/tmp/kubeloop-envtest-XXXX/kubeconfig': { elsewhere: 'test/e2e/readme-commands.test.ts, with the path scripts/dev.sh logged' },
  'kubectl get namespaces': { elsewhere: 'test/e2e/readme-commands.test.ts' },
  'kubectl get harddisks,configmaps': { elsewhere: 'test/e2e/readme-commands.test.ts' },
  'curl -s 127.0.0.1:8080/metrics | grep controller_runtime_reconcile_total': { elsewhere: 'test/e2e/readme-commands.test.ts' },
  "curl -s '127.0.0.1:8081/readyz?verbose'": { elsewhere: 'test/e2e/readme-commands.test.ts' },
  'pnpm create kubeloop my-operator': { elsewhere: 'the registry e2e runs `pnpm create kubeloop demo` and `pnpm create kubeloop website-operator`; only the name differs' },
  'pnpm -s exec vitest run packages/testing/test/fuzz/': { elsewhere: 'scripts/test.sh (CI) runs every test file, the fuzz suite among them, with its fixed seed' },
  'KUBELOOP_FUZZ_SEED=random KUBELOOP_FUZZ_RUNS=150 KUBELOOP_FUZZ_BUDGET_MS=900000 pnpm -s exec vitest run packages/testing/test/fuzz/': {
    notHere: 'an exploratory run: a random seed is meant to find disagreements nobody has seen (docs/testing-fake.md lists the open ones), so it would fail CI at random; CI runs the same suite with its fixed seed (the command above), and the session notes give the random runs made by hand',
  },
  'pnpm -s exec vitest run packages/testing/test/fuzz/schema-changes.test.ts': { elsewhere: 'scripts/test.sh (CI) runs every test file, the schema-change fuzzer among them, with its fixed seed' },
  'KUBELOOP_SCHEMA_SEED=random KUBELOOP_SCHEMA_RUNS=100 KUBELOOP_SCHEMA_REPORT=/tmp/schemas.txt pnpm -s exec vitest run packages/testing/test/fuzz/schema-changes.test.ts': {
    notHere: 'an exploratory run: a random seed is meant to find disagreements nobody has seen, so it would fail CI at random; CI runs the same file with its fixed seed (the command above), and the session notes give the random runs made by hand',
  },
  'pnpm -s exec vitest run packages/testing/test/conformance/': { elsewhere: 'scripts/test.sh (CI) runs every test file, the conformance suite among them' },
  'kubectl create namespace harddisk-system': { elsewhere: 'examples/harddisk-operator/test/main.test.ts runs it exactly as written (sh -c, KUBECONFIG its control plane) before the command below' },
  'node dist/main.js --shard-ring harddisk-operator --shard-namespace harddisk-system --no-sample --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0': {
    elsewhere: 'examples/harddisk-operator/test/main.test.ts runs it exactly as written twice (sh -c in the example\'s directory, KUBECONFIG its control plane) and checks the two split the disks',
  },
  'KUBELOOP_SHARDING_FULL=1 pnpm -s exec vitest run examples/harddisk-operator/test/sharded.test.ts': {
    elsewhere: 'scripts/test.sh (CI) runs the same file at its CI size (120 disks, 3 s leases); the full size (3,000 disks) is an on-demand run of several minutes, whose figures the session notes give',
  },
  'kubeloop shards --ring harddisk-operator -n harddisk-system': { elsewhere: 'packages/cli/test/shards.test.ts runs it exactly as written (sh -c, with `kubeloop` on PATH the built bin and KUBECONFIG the test plane) while a ring of that name runs' },
  'kubeloop profile https://127.0.0.1:8443 --cpu 10s -o harddisk.cpuprofile --token-file token --insecure-skip-tls-verify': {
    elsewhere: 'test/profiles.test.ts runs docs/tracing.md\'s commands exactly as written (sh -c, `kubeloop` on PATH the built bin, in a directory holding `token`) against a manager serving profiles on 127.0.0.1:8443',
  },
  'kubeloop profile https://127.0.0.1:8443 --heap -o harddisk.heapsnapshot --token-file token --insecure-skip-tls-verify': { elsewhere: 'test/profiles.test.ts (as above)' },
  'LOG_LEVEL=debug OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=harddisk-operator node examples/harddisk-operator/dist/operator.js --envtest > operator.log 2>&1 &': {
    elsewhere: 'test/observability.test.ts runs docs/observability.md\'s commands exactly as written (bash -c from the repository root, a real Jaeger on 127.0.0.1:4318 and 16686): this one first, then the others in one shell once the sample is reconciled and its spans are in Jaeger',
  },
  "curl -s -H 'Accept: application/openmetrics-text' 127.0.0.1:8080/metrics | grep '^controller_runtime_reconcile_time_seconds_bucket.*trace_id'": { elsewhere: 'test/observability.test.ts (as above)' },
  'TRACE_ID=$(curl -s -H \'Accept: application/openmetrics-text\' 127.0.0.1:8080/metrics | grep \'^controller_runtime_reconcile_time_seconds_bucket.*trace_id\' | tail -1 | sed \'s/.*trace_id="\\([0-9a-f]*\\)".*/\\1/\')': { elsewhere: 'test/observability.test.ts (as above)' },
  'curl -s "127.0.0.1:16686/api/traces/$TRACE_ID" | jq -r \'.data[0].spans[] | "\\(.duration) \\(.operationName)"\'': { elsewhere: 'test/observability.test.ts (as above)' },
  'grep "$TRACE_ID" operator.log': { elsewhere: 'test/observability.test.ts (as above)' },
  'kubeloop generate helm': { elsewhere: 'packages/cli/test/helm.test.ts runs docs/helm.md\'s commands exactly as written, in order (sh -c in a new website-operator project with webhooks, `kubeloop` the built bin and `helm` the real helm v4 on PATH, KUBECONFIG a control plane of its own)' },
  'helm lint dist/chart': { elsewhere: 'packages/cli/test/helm.test.ts (as above)' },
  'kubectl create namespace website-operator-system': { elsewhere: 'packages/cli/test/helm.test.ts (as above)' },
  'helm template website-operator dist/chart --namespace website-operator-system | kubectl apply --server-side --dry-run=server -f -': { elsewhere: 'packages/cli/test/helm.test.ts (as above)' },
  'helm status website-operator --namespace website-operator-system': { elsewhere: 'packages/cli/test/helm.test.ts (as above)' },
  'helm install website-operator dist/chart --namespace website-operator-system --set manager.image.repository=registry.example.com/website-operator --set manager.image.tag=0.1.0': {
    elsewhere: 'packages/cli/test/helm.test.ts (as above): every object is created; the Deployment\'s pods never run (envtest has no kubelet)',
  },
  'kubectl -n harddisk-system create serviceaccount inspector': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubectl create clusterrole kubeloop-inspector --verb=get,post --non-resource-url=/metrics --non-resource-url=/inspect --non-resource-url=\'/inspect/*\'': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubectl create clusterrolebinding kubeloop-inspector --clusterrole=kubeloop-inspector --serviceaccount=harddisk-system:inspector': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'export METRICS=https://127.0.0.1:8443': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'export TOKEN=$(kubectl -n harddisk-system create token inspector)': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubeloop inspect "$METRICS" --token "$TOKEN" --insecure-skip-tls-verify': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubeloop inspect "$METRICS" harddisk default/disk-1 --token "$TOKEN" --insecure-skip-tls-verify': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubectl get harddisk disk-2 -o jsonpath=\'{.metadata.annotations}\'': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubectl annotate harddisk disk-2 kubeloop.dev/paused-': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubeloop inspect "$METRICS" harddisk --resume --token "$TOKEN" --insecure-skip-tls-verify': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'curl -sk -H "Authorization: Bearer $TOKEN" "$METRICS/metrics" | grep -E \'^(kubeloop_controller_paused|kubeloop_reconcile_paused_total|controller_runtime_reconcile_errors_total)\'': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'curl -sk -H "Authorization: Bearer $TOKEN" "$METRICS/metrics" | grep \'kubeloop_reconcile_triggers_total{controller="harddisk"\'': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubectl get events --field-selector reason=SelfTriggering': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubeloop inspect "$METRICS" harddisk --token "$TOKEN" --insecure-skip-tls-verify': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubeloop inspect "$METRICS" harddisk default/disk-3 --token "$TOKEN" --insecure-skip-tls-verify': { elsewhere: 'packages/cli/test/troubleshooting.test.ts runs docs/troubleshooting.md\'s commands exactly as written, in order (sh -c, `kubeloop` the built bin, KUBECONFIG a control plane of its own, the exports first in the same shell) against a manager serving secure metrics on 127.0.0.1:8443' },
  'kubectl -n harddisk-system port-forward deployment/harddisk-operator-manager 8443 &': { notHere: 'envtest runs no pods to forward to: packages/cli/test/troubleshooting.test.ts binds the manager\'s metrics server to 127.0.0.1:8443 itself, where the forward would put it, and runs the rest' },
  'docker build -t registry.example.com/website-operator:0.1.0 .': { notHere: 'no container runtime on the test machine; the Dockerfile is what the image is built from' },
  'docker push registry.example.com/website-operator:0.1.0': { notHere: 'no container runtime or image registry on the test machine' },
  'docker build -t website-operator:latest .': { notHere: 'no container runtime on the test machine' },
};

/** Files whose commands the registry e2e walks through, in this order, in one new project. */
export const WALKTHROUGH_FILES = ['docs/getting-started.md', 'docs/rbac.md', 'docs/schema.md', 'packages/create-kubeloop/templates/README.md'] as const;

/**
 * Commands that run until stopped (a server, a watch): the walkthrough starts
 * each in the background, waits until its output matches `ready`, runs the
 * rest of its code block, then stops it. `pnpm start` runs the bundle
 * (dist/operator.js, as the image does; pnpm echoes the script), `pnpm run
 * dev` tsc's dist/main.js (kubeloop dev logs what it starts), as the
 * scaffold's README says. A long-running command is run again where another
 * doc repeats it: the block after it needs it running.
 */
export const LONG_RUNNING: Readonly<Record<string, { readonly ready: RegExp }>> = {
  'pnpm build && pnpm start -- --kubeconfig ~/.kube/config': { ready: /> node dist\/operator\.js [\s\S]*starting website-operator/ },
  // Without webhooks, once the operator starts; with them (kubeloop dev logs `webhooks: ...` before it starts the operator),
  // once their server answers at the port the configurations point at.
  'pnpm run dev': { ready: /^(?![\s\S]*kubeloop dev: webhooks: )[\s\S]*starting node dist\/main\.js [\s\S]*starting website-operator|kubeloop dev: webhooks answer at https:\/\/127\.0\.0\.1:\d+/ },
  'kubectl get websites -w': { ready: /website-sample/ },
};
