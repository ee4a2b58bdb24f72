/**
 * `create-kubeloop`: writes a new kubeloop operator project (`pnpm create
 * kubeloop <name>`), or the same from code.
 *
 * @example
 * ```ts
 * import { createProject } from 'create-kubeloop';
 * await createProject({ name: 'website-operator' });
 * ```
 *
 * @packageDocumentation
 */
export { createProject, ownVersion, validateProjectName } from './create-project.js';
export type { CreateProjectOptions, CreatedProject } from './create-project.js';
export { runCreate } from './cli.js';
export { CreateKubeloopError, isCreateKubeloopError } from './errors.js';
export type { CreateKubeloopErrorReason } from './errors.js';
