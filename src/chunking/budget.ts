/**
 * The chunk budget: how many of the gateway's tokens one chunk may hold for a model.
 */
import { DEFAULTS } from '../config/defaults.js';
import { ConfigError } from '../errors.js';

/** The smallest usable budget: one code point may count up to 4 tokens (a byte-level tokenizer). */
const MIN_CHUNK_TOKENS = 4;

export interface BudgetOptions {
  /** The model's `context_length`, when the gateway lists one. */
  readonly contextLength?: number | undefined;
  /** Fraction of the context kept free (our tokenizer may not be the gateway's); default DEFAULTS.contextSafetyMargin. */
  readonly safetyMargin?: number | undefined;
  /** `--max-tokens`: wins over the context length, but may not exceed it. */
  readonly maxTokensOverride?: number | undefined;
}

/**
 * Tokens per chunk: the override when given (at least MIN_CHUNK_TOKENS and not above a known
 * context length, else ConfigError('max-tokens')); otherwise floor(contextLength × (1 − margin));
 * otherwise floor(DEFAULTS.fallbackContextLength × (1 − margin)), i.e. 7372 with the defaults.
 */
export function chunkTokenBudget(options: BudgetOptions = {}): number {
  const { contextLength, maxTokensOverride } = options;
  const margin = options.safetyMargin ?? DEFAULTS.contextSafetyMargin;
  if (!(margin >= 0 && margin < 1)) {
    throw new ConfigError('safety-margin', `must be at least 0 and below 1, got ${margin}`);
  }
  if (contextLength !== undefined && !(Number.isInteger(contextLength) && contextLength > 0)) {
    throw new ConfigError('context-length', `must be a positive integer, got ${contextLength}`);
  }
  if (maxTokensOverride !== undefined) {
    if (!Number.isInteger(maxTokensOverride) || maxTokensOverride < MIN_CHUNK_TOKENS) {
      throw new ConfigError(
        'max-tokens',
        `must be an integer of at least ${MIN_CHUNK_TOKENS}, got ${maxTokensOverride}`,
      );
    }
    if (contextLength !== undefined && maxTokensOverride > contextLength) {
      throw new ConfigError(
        'max-tokens',
        `${maxTokensOverride} is above the model's context length of ${contextLength} tokens`,
      );
    }
    return maxTokensOverride;
  }
  const budget = Math.floor((contextLength ?? DEFAULTS.fallbackContextLength) * (1 - margin));
  if (budget < MIN_CHUNK_TOKENS) {
    throw new ConfigError(
      'max-tokens',
      `the model's context length of ${contextLength} tokens is too small to chunk for`,
    );
  }
  return budget;
}
