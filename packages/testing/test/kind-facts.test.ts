/**
 * The per-kind facts the fake reads are kube-apiserver's: the regeneration
 * command, in --check mode against the shared envtest, finds them current.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { testKubeconfigPath } from '../../../test/support/env.js';

describe('the per-kind facts', () => {
  it('are current: node packages/testing/scripts/kind-facts.mjs --check', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['packages/testing/scripts/kind-facts.mjs', '--kubeconfig', testKubeconfigPath(), '--check'], { cwd: new URL('../../../', import.meta.url) });
    expect(stdout).toMatch(/^the per-kind facts are current \(v1\.37\.2, 37 kinds\)/);
  });
});
