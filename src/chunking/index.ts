export { MAX_RUN } from './boundaries.js';
export { type BudgetOptions, chunkTokenBudget, MIN_CHUNK_TOKENS } from './budget.js';
export { type ChunkOptions, chunkDocument } from './chunker.js';
export { contentHash } from './hash.js';
export { countTokens, tokensWithin } from './tokenizer.js';
