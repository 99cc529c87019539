import { describe, expect, it } from 'vitest';
import { chunkTokenBudget } from '../../src/chunking/index.js';
import { DEFAULTS } from '../../src/config/defaults.js';
import { ConfigError } from '../../src/errors.js';

function configErrorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('chunkTokenBudget', () => {
  it('takes the context length minus the safety margin', () => {
    expect(chunkTokenBudget({ contextLength: 8192 })).toBe(
      Math.floor(8192 * (1 - DEFAULTS.contextSafetyMargin)),
    );
    expect(chunkTokenBudget({ contextLength: 512, safetyMargin: 0 })).toBe(512);
    expect(chunkTokenBudget({ contextLength: 1000, safetyMargin: 0.25 })).toBe(750);
    expect(chunkTokenBudget({ contextLength: 8191, safetyMargin: 0.1 })).toBe(7371);
  });

  it('falls back to the documented default context length', () => {
    expect(chunkTokenBudget()).toBe(7372);
    expect(chunkTokenBudget({})).toBe(
      Math.floor(DEFAULTS.fallbackContextLength * (1 - DEFAULTS.contextSafetyMargin)),
    );
    expect(chunkTokenBudget({ safetyMargin: 0.5 })).toBe(4096);
    expect(chunkTokenBudget({ contextLength: undefined })).toBe(7372);
  });

  it('lets an override win, up to the context length', () => {
    expect(chunkTokenBudget({ maxTokensOverride: 100 })).toBe(100);
    expect(chunkTokenBudget({ contextLength: 8192, maxTokensOverride: 8192 })).toBe(8192);
    expect(chunkTokenBudget({ maxTokensOverride: 50_000 })).toBe(50_000);
  });

  it('rejects an override above the context length or below the minimum', () => {
    expect(configErrorOf(() => chunkTokenBudget({ contextLength: 512, maxTokensOverride: 513 })).field).toBe(
      'max-tokens',
    );
    for (const bad of [0, -5, 1.5, Number.NaN, 4 - 1]) {
      expect(configErrorOf(() => chunkTokenBudget({ maxTokensOverride: bad })).field).toBe('max-tokens');
    }
    expect(chunkTokenBudget({ maxTokensOverride: 4 })).toBe(4);
  });

  it('rejects nonsensical margins and context lengths', () => {
    expect(configErrorOf(() => chunkTokenBudget({ safetyMargin: 1 })).field).toBe('safety-margin');
    expect(configErrorOf(() => chunkTokenBudget({ safetyMargin: -0.1 })).field).toBe('safety-margin');
    expect(configErrorOf(() => chunkTokenBudget({ contextLength: 0 })).field).toBe('context-length');
    expect(configErrorOf(() => chunkTokenBudget({ contextLength: 4, safetyMargin: 0.5 })).field).toBe(
      'max-tokens',
    );
  });
});
