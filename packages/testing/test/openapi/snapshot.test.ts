/**
 * The OpenAPI snapshot the fake reads is kube-apiserver's: the
 * regeneration command, in --check mode against the shared envtest, finds
 * it current.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { testKubeconfigPath } from '../../../../test/support/env.js';

describe('the OpenAPI snapshot', () => {
  it('is current: node packages/testing/scripts/openapi-snapshot.mjs --check', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['packages/testing/scripts/openapi-snapshot.mjs', '--kubeconfig', testKubeconfigPath(), '--check'], { cwd: new URL('../../../../', import.meta.url) });
    expect(stdout).toMatch(/^the OpenAPI snapshot is current \(v1\.37\.2, 40 kinds, \d+ definitions\)/);
  });
});
