export { batchIdOf } from './batch-id.js';
export { OPEN_BATCHES, type PlanOptions, planBatches } from './planner.js';
