/**
 * Which stages a controller runs around its reconciles, from its options:
 * the one place a new stage is listed (a third scale dimension, a per-key
 * filter). The stage contract is in stage.ts.
 */
import type { ControllerOptions } from './controller.js';
import { pauseStage } from './pause.js';
import { shardStage } from './shard-stage.js';
import type { ReconcileStage, StageDeps } from './stage.js';

/**
 * The stages of a controller, outermost first. The shard stage is outside
 * the pause check, so a key another replica owns is neither read nor
 * counted as paused here, and a `Paused` condition write runs under the
 * bucket's fence.
 */
export function stagesFor(options: ControllerOptions, deps: StageDeps): ReconcileStage[] {
  const stages: ReconcileStage[] = [];
  if (options.shard) stages.push(shardStage(options.shard, deps));
  if (options.pause !== false && deps.forKind !== undefined) stages.push(pauseStage(options.pause ?? {}, deps.forKind, deps));
  return stages;
}

