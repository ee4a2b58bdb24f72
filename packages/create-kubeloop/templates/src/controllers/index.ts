/** The project's controllers; main.ts registers each with the manager. */
export { WebsiteReconciler, configMapNameOf, setupWebsiteController } from './website-controller.js';
