/**
 * `@kubeloop/scheme/schema`: define kinds by their schema. TypeBox's `Type`
 * builds JSON Schema values whose static types TypeScript infers; `k8s`
 * adds Kubernetes' extensions (int-or-string, quantities, list and map
 * types, CEL rules, embedded resources, preserve-unknown-fields, status
 * conditions); `generateCRDs` turns schema-first kinds into
 * CustomResourceDefinitions after checking them with the API server's rules
 * (`checkStructural`). A separate entry point, so programs that never define
 * a schema never load TypeBox.
 *
 * @example
 * ```ts
 * import { defineKind } from '@kubeloop/scheme';
 * import { Type, k8s, generateCRDs } from '@kubeloop/scheme/schema';
 *
 * export const Backup = defineKind({
 *   group: 'example.com', version: 'v1', kind: 'Backup', plural: 'backups', namespaced: true,
 *   schema: {
 *     spec: Type.Object({
 *       schedule: Type.String({ minLength: 1 }),
 *       retain: Type.Integer({ minimum: 1, default: 7 }),
 *       targets: k8s.ListMap(Type.Object({ name: Type.String(), size: k8s.Quantity() }), ['name']),
 *     }, k8s.rules({ rule: 'self.retain <= 100', message: 'retain at most 100 backups' })),
 *     status: Type.Object({ conditions: Type.Optional(k8s.Conditions()) }),
 *   },
 *   crd: { shortNames: ['bk'], subresources: { status: true }, printerColumns: [{ name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' }] },
 * });
 * const [crd] = generateCRDs([Backup]);
 * ```
 *
 * @packageDocumentation
 */
export { Type } from 'typebox';
export type { Static, TSchema } from 'typebox';
export * as k8s from './k8s.js';
export type { EmbeddedObject, SchemaOptions } from './k8s.js';
export { QUANTITY_PATTERN } from './k8s.js';
export { crdSchemaOf, generateCRDs } from './crd.js';
export type { GeneratedCRD } from './crd.js';
export { checkStructural } from './structural.js';
export type { StructuralCheckOptions } from './structural.js';
export type { SchemaProblem } from '../errors.js';
