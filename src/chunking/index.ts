export { contentHash, imageContentHash } from '../content-hash.js';
export { type BudgetOptions, chunkTokenBudget } from './budget.js';
export {
  type CalibrationState,
  featureShares,
  isEvidence,
  MEASURED_SHARE,
  TokenCalibration,
  type TokenObservation,
} from './calibration.js';
export { type ChunkOptions, chunkDocument } from './chunker.js';
export type { CalibrationEpoch } from './epoch-replay.js';
export {
  BYTE_BOUND_WEIGHTS,
  CLASSES,
  costOf,
  estimate,
  profileOf,
  type Weights,
} from './profile.js';
export { type Span, splitIntoSpans } from './spans.js';
export { prefixWithinBytes, utf8Length } from './utf8.js';
