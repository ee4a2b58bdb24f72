import { describe, expect, it } from 'vitest';
import { isEnvtestError } from '../src/errors.js';
import {
  assertNoUnresolvedStaging,
  etcdWrapperGoMod,
  goDirective,
  kubernetesWrapperGoMod,
  stagingModules,
  stagingVersion,
  toolsGo,
} from '../src/internal/go-wrapper.js';

// The shape of k8s.io/kubernetes's own go.mod: requires at v0.0.0, replaced by ./staging paths.
const UPSTREAM = `module k8s.io/kubernetes

go 1.26.0

require (
	k8s.io/api v0.0.0
	k8s.io/apimachinery v0.0.0
	k8s.io/streaming v0.0.0
	github.com/spf13/cobra v1.10.2
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery
	k8s.io/streaming => ./staging/src/k8s.io/streaming
	k8s.io/kms => ./staging/src/k8s.io/kms
)
`;

describe('kube-apiserver wrapper module', () => {
  it('finds every staging module, and nothing else', () => {
    expect(stagingModules(UPSTREAM)).toEqual(['k8s.io/api', 'k8s.io/apimachinery', 'k8s.io/kms', 'k8s.io/streaming']);
  });

  it('also reads single-line replace directives', () => {
    expect(stagingModules('replace k8s.io/api => ./staging/src/k8s.io/api\n')).toEqual(['k8s.io/api']);
  });

  it('pairs k8s.io/kubernetes v1.N.P with staging v0.N.P', () => {
    expect(stagingVersion('v1.37.2')).toBe('v0.37.2');
    expect(() => stagingVersion('1.37')).toThrow(/v1\.N\.P/);
    expect(() => stagingVersion('v2.0.0')).toThrow();
  });

  it('writes a go.mod that requires kubernetes and replaces each staging module with its release', () => {
    const mod = kubernetesWrapperGoMod('v1.37.2', UPSTREAM);
    expect(goDirective(mod)).toBe('1.26.0');
    expect(mod).toContain('require k8s.io/kubernetes v1.37.2');
    expect(mod).toContain('replace k8s.io/api => k8s.io/api v0.37.2');
    expect(mod).toContain('replace k8s.io/streaming => k8s.io/streaming v0.37.2');
    expect(mod.match(/^replace /gm)).toHaveLength(4);
  });

  it('refuses a go.mod with no staging replaces', () => {
    let caught: unknown;
    try {
      kubernetesWrapperGoMod('v1.37.2', 'module x\n\ngo 1.26\n');
    } catch (err) {
      caught = err;
    }
    expect(isEnvtestError(caught) && caught.reason).toBe('BuildFailed');
  });

  it('fails loudly when a staging module is left at v0.0.0', () => {
    const tidied = 'require (\n\tk8s.io/api v0.0.0\n\tk8s.io/kms v0.0.0\n)\nreplace k8s.io/api => k8s.io/api v0.37.2\n';
    expect(() => assertNoUnresolvedStaging(tidied)).toThrow(/k8s\.io\/kms/);
    expect(() => assertNoUnresolvedStaging(tidied + 'replace k8s.io/kms => k8s.io/kms v0.37.2\n')).not.toThrow();
  });
});

describe('etcd wrapper module', () => {
  it('requires the server and etcdctl at one version', () => {
    const mod = etcdWrapperGoMod('v3.6.16');
    expect(mod).toContain('require go.etcd.io/etcd/server/v3 v3.6.16');
    expect(mod).toContain('require go.etcd.io/etcd/etcdctl/v3 v3.6.16');
    expect(() => etcdWrapperGoMod('v2.3.0')).toThrow(/3\.x/);
  });

  it('pins main packages with a tools.go behind a build tag', () => {
    expect(toolsGo(['a/b', 'c/d'])).toBe('//go:build tools\n\npackage tools\n\nimport _ "a/b"\nimport _ "c/d"\n');
  });
});
