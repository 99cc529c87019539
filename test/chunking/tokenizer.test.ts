import { describe, expect, it } from 'vitest';
import { countTokens, tokensWithin } from '../../src/chunking/index.js';

describe('countTokens', () => {
  it('counts cl100k_base tokens', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('x'.repeat(8))).toBe(1);
  });

  it('counts special-token text as plain text instead of throwing', () => {
    for (const special of ['<|endoftext|>', '<|fim_prefix|>', '<|im_start|>', '<|endofprompt|>']) {
      expect(() => countTokens(`before ${special} after`)).not.toThrow();
      // As plain characters a special token is several tokens, never the single special token.
      expect(countTokens(special)).toBeGreaterThan(1);
    }
    expect(countTokens('a<|endoftext|>b')).toBe(countTokens('a<|endoftext|>') + countTokens('b'));
  });

  it('counts one code point as at most 4 tokens', () => {
    expect(countTokens('\u{10000}')).toBe(4);
    expect(countTokens('😀')).toBeLessThanOrEqual(4);
  });
});

describe('tokensWithin', () => {
  it('returns the exact count within the limit and false above it', () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(10);
    const exact = countTokens(text);
    expect(tokensWithin(text, exact)).toBe(exact);
    expect(tokensWithin(text, exact - 1)).toBe(false);
  });

  it('stops early on a long text and never throws on special tokens', () => {
    const long = 'word <|endoftext|> '.repeat(200_000);
    expect(tokensWithin(long, 100)).toBe(false);
    expect(tokensWithin('<|endoftext|>', 100)).toBe(countTokens('<|endoftext|>'));
  });
});
