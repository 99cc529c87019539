import { countTokens, decode, encode, isWithinTokenLimit } from 'gpt-tokenizer/encoding/cl100k_base';

/**
 * Token counting as the emulated gateway does it: cl100k_base, with special-token checks off, so a
 * document containing `<|endoftext|>` is counted as the plain text it is instead of throwing.
 */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

export function tokenCount(text: string): number {
  return countTokens(text, PLAIN_TEXT);
}

/** The token count when it is at most `limit`, else false (without counting the whole text). */
export function tokensWithin(text: string, limit: number): number | false {
  return isWithinTokenLimit(text, limit, PLAIN_TEXT);
}

/** The text decoded from the first `limit` tokens of `text`. */
export function truncateToTokens(text: string, limit: number): string {
  return decode(encode(text, PLAIN_TEXT).slice(0, limit));
}
