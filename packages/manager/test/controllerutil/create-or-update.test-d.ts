/**
 * createOrUpdate's types: a full object infers its kind; a kind whose spec
 * is required can start from its kind and key alone when the type is named,
 * and `mutate` then sees the whole type.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { AnyClient } from '@kubeloop/client/internal';
import { defineKind } from '@kubeloop/scheme';
import type { ConfigMap, ObjectOf } from '@kubeloop/scheme';
import { Type } from '@kubeloop/scheme/schema';
import { createOrPatch, createOrUpdate } from '../../src/index.js';

const Certificate = defineKind({
  group: 'cert-manager.io',
  version: 'v1',
  kind: 'Certificate',
  plural: 'certificates',
  namespaced: true,
  schema: { spec: Type.Object({ secretName: Type.String(), dnsNames: Type.Array(Type.String()) }) },
});
type Certificate = ObjectOf<typeof Certificate>;
declare const client: AnyClient;
expectTypeOf(Certificate.kind).toEqualTypeOf<'Certificate'>();

describe('createOrUpdate', () => {
  it('infers the kind of a full starting object', () => {
    const cm: ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } };
    void createOrUpdate(client, cm, (c) => expectTypeOf(c.data).toEqualTypeOf<Record<string, string> | undefined>());
  });

  it('starts a kind with a required spec from its kind and key, mutate setting the spec', () => {
    void createOrUpdate<Certificate>(client, { apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'web', namespace: 'default' } }, (c) => {
      expectTypeOf(c.spec).toEqualTypeOf<{ secretName: string; dnsNames: string[] }>();
      c.spec = { secretName: 'web-tls', dnsNames: ['web.example.com'] };
    });
    void createOrPatch<Certificate>(client, { apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'web' } }, (c) => {
      c.spec.dnsNames.push('www.example.com');
    });
    // Without the kind named, a bare key is not taken for a Certificate.
    // @ts-expect-error the starting object has no apiVersion
    void createOrUpdate<Certificate>(client, { kind: 'Certificate', metadata: { name: 'web' } }, () => undefined);
  });
});
