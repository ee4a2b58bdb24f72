/**
 * `kubeloop deploy` on a new project's config/default, against the shared
 * control plane with the real kubectl: the image given at deploy time is the
 * one the API server stores, the project's files are left as they were, and
 * a server-side dry run changes nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from 'create-kubeloop';
import { imageOverride, isCliError, runCli } from '../src/index.js';
import { kubectl, kubectlOk } from '../../../test/support/kubectl.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { io } from './support.js';

let work: string;
let project: string;
const name = uniqueName('dep');

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kubeloop-deploy-'));
  project = (await createProject({ name, cwd: work })).directory;
});
afterAll(async () => {
  await kubectl(['delete', '--ignore-not-found', '--wait=false', '-k', join(project, 'config', 'default')]);
  await rm(work, { recursive: true, force: true });
});

const files = (dir: string): Record<string, string> => Object.fromEntries(readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort().map((f) => [f, (() => { try { return readFileSync(join(dir, f), 'utf8'); } catch { return '<dir>'; } })()]));

describe('kubeloop deploy', () => {
  it('passes a server dry run on a cluster without the operator\'s namespace, creating nothing (pnpm run deploy -- --dry-run server)', async () => {
    const absent = async (): Promise<string> => (await kubectlOk(['get', 'namespace', `${name}-system`, '--ignore-not-found', '-o', 'name'])).trim();
    expect(await absent()).toBe('');
    const dry = io();
    // `pnpm run deploy -- --dry-run server`, as a user types it on a fresh cluster.
    expect(await runCli(['deploy', '--', '--dry-run', 'server', '--kubeconfig', testKubeconfigPath(), '--cwd', project], dry.io), dry.out.join('') + dry.err.join('')).toBe(0);
    const out = dry.out.join('');
    expect(out).toContain(`namespace ${name}-system does not exist yet and a dry run creates none, so its 5 object(s) are checked in namespace default instead (nothing is changed)`);
    for (const object of [`namespace/${name}-system`, `customresourcedefinition.apiextensions.k8s.io/websites.${name}.example.com`, `serviceaccount/${name}-manager`, `role.rbac.authorization.k8s.io/${name}-manager`, `rolebinding.rbac.authorization.k8s.io/${name}-manager`, `deployment.apps/${name}-manager`, `service/${name}-metrics`, `clusterrole.rbac.authorization.k8s.io/${name}-manager`]) {
      expect(out).toContain(`${object} serverside-applied (server dry run)`);
    }
    expect(out).not.toContain('not found');
    // Nothing was made: not the namespace, not the objects checked in default.
    expect(await absent()).toBe('');
    expect((await kubectlOk(['-n', 'default', 'get', 'deployment,serviceaccount,service', '--ignore-not-found', '-o', 'name'])).split('\n').filter((l) => l.includes(name))).toEqual([]);
  });

  it('applies config/default with the image set at deploy time, leaving the project as it was', async () => {
    const before = files(project);
    const image = 'registry.example.com:5000/team/operator:0.1.0';
    const real = io();
    // pnpm run deploy -- --image ... hands the `--` on.
    expect(await runCli(['deploy', '--', '--image', image, '--kubeconfig', testKubeconfigPath(), '--cwd', project], real.io), real.out.join('')).toBe(0);
    const stored = (): Promise<string> => kubectlOk(['-n', `${name}-system`, 'get', 'deployment', `${name}-manager`, '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);
    expect(await stored()).toBe(image);
    expect(files(project)).toEqual(before); // the overlay was temporary

    // A server-side dry run checks everything and changes nothing.
    const dry = io();
    expect(await runCli(['deploy', '--image', 'operator:next', '--dry-run', 'server', '--kubeconfig', testKubeconfigPath(), '--cwd', project], dry.io), dry.out.join('')).toBe(0);
    expect(dry.out.join('')).toContain(`deployment.apps/${name}-manager serverside-applied (server dry run)`);
    expect(await stored()).toBe(image);

    // Without --image, the manifests' own image.
    expect(await runCli(['deploy', '--kubeconfig', testKubeconfigPath(), '--cwd', project], io().io)).toBe(0);
    expect(await stored()).toBe(`${name}:latest`);
  });

  it('splits image references as kustomize wants them and refuses malformed ones', () => {
    expect(imageOverride('demo', 'demo:dev')).toEqual({ name: 'demo', newName: 'demo', newTag: 'dev' });
    expect(imageOverride('demo', 'localhost:5000/demo')).toEqual({ name: 'demo', newName: 'localhost:5000/demo' });
    expect(imageOverride('demo', `ghcr.io/acme/demo@sha256:${'a'.repeat(64)}`)).toEqual({ name: 'demo', newName: 'ghcr.io/acme/demo', digest: `sha256:${'a'.repeat(64)}` });
    for (const bad of ['Demo:1', 'demo:', 'demo@latest', ' demo']) {
      const err = (() => { try { return imageOverride('demo', bad); } catch (e) { return e; } })();
      expect(isCliError(err) && err.reason, bad).toBe('Usage');
    }
  });

  it('says what is wrong with a directory that is not a kustomization', async () => {
    const out = io();
    expect(await runCli(['deploy', '--dir', 'config/samples', '--cwd', project], out.io)).toBe(1);
    expect(out.err.join('')).toContain('config/samples has no kustomization.yaml');
  });
});
