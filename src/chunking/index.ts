export { type BudgetOptions, chunkTokenBudget } from './budget.js';
export {
  BYTE_BOUND,
  type CalibrationEpoch,
  type CalibrationState,
  TokenCalibration,
  type TokenObservation,
} from './calibration.js';
export { type ChunkOptions, chunkDocument } from './chunker.js';
export { contentHash } from './hash.js';
export { MIN_SPAN_BYTES, type Span, splitIntoSpans } from './spans.js';
export { utf8Length } from './utf8.js';
