/** The `create-kubeloop` command line. */
import { parseArgs } from 'node:util';
import { createProject } from './create-project.js';
import { CreateKubeloopError, isCreateKubeloopError } from './errors.js';

const USAGE = `Usage: pnpm create kubeloop <name> [--workspace] [--dir <path>] [--group <api-group>]

  <name>          the project name, a DNS-1123 label (website-operator)
  --workspace     add it as a package of the pnpm workspace this directory is in
  --dir <path>    where to create it (default ./<name>)
  --group <g>     the API group of the example kind (default <name>.example.com)
`;

/**
 * Runs the command with `argv` (without node and the script) and returns the
 * exit code: 0 created, 1 failed, 2 usage error. Messages go to `out`/`err`.
 *
 * @example
 * ```ts
 * process.exitCode = await runCreate(['demo']);
 * ```
 */
export async function runCreate(argv: readonly string[], io: { out?: (s: string) => void; err?: (s: string) => void; cwd?: string } = {}): Promise<number> {
  const out = io.out ?? ((s: string) => process.stdout.write(s));
  const err = io.err ?? ((s: string) => process.stderr.write(s));
  try {
    let parsed;
    try {
      parsed = parseArgs({
        args: [...argv],
        allowPositionals: true,
        options: { workspace: { type: 'boolean', default: false }, dir: { type: 'string' }, group: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
      });
    } catch (cause) {
      throw new CreateKubeloopError('Usage', (cause as Error).message, { cause });
    }
    const { values, positionals } = parsed;
    if (values.help) {
      out(USAGE);
      return 0;
    }
    if (positionals.length !== 1) throw new CreateKubeloopError('Usage', positionals.length === 0 ? 'a project name is required' : `one project name expected, got ${positionals.join(' ')}`);
    const project = await createProject({
      name: positionals[0]!,
      workspace: values.workspace,
      ...(values.dir !== undefined ? { directory: values.dir } : {}),
      ...(values.group !== undefined ? { group: values.group } : {}),
      ...(io.cwd !== undefined ? { cwd: io.cwd } : {}),
    });
    out(`Created ${project.directory} (${project.files.length} files)${project.workspace ? ` in the workspace at ${project.workspace.root}` : ''}.\n\nNext:\n  cd ${project.directory}\n  pnpm install\n  pnpm build && pnpm test\n\nSee README.md there to run it against a cluster and to deploy it.\n`);
    return 0;
  } catch (e) {
    if (isCreateKubeloopError(e)) {
      err(`create-kubeloop: ${e.message}\n${e.reason === 'Usage' ? `\n${USAGE}` : ''}`);
      return e.reason === 'Usage' ? 2 : 1;
    }
    throw e;
  }
}
