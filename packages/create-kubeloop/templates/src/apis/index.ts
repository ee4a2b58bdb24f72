/**
 * The project's kinds. `kubeloop generate crds` imports the built copy of
 * this file (dist/apis/index.js, see "kubeloop" in package.json) and writes
 * a CRD for every schema-first kind exported here.
 */
export { Website, WEBSITE_FINALIZER } from './website.js';
