/**
 * Token counting with cl100k_base (gpt-tokenizer), the one tokenizer embedpipe plans with.
 *
 * Documents are data, not prompts: text such as `<|endoftext|>` is counted as the plain characters
 * it is. gpt-tokenizer throws on special-token text by default, so every call passes an empty
 * `disallowedSpecial` set (and allows none), which makes both functions total: they never throw.
 *
 * Cost note, measured on gpt-tokenizer 4: its BPE merge is quadratic in the length of one
 * pre-token (a run of letters, of symbols or of whitespace), e.g. 16k random letters take ~0.1 s and
 * 16k CJK characters without punctuation ~1 s. Callers that may meet such runs cap them first
 * (see `boundaries.ts`, `MAX_RUN`).
 */
import {
  isWithinTokenLimit,
  countTokens as libCountTokens,
  setMergeCacheSize,
} from 'gpt-tokenizer/encoding/cl100k_base';

/**
 * gpt-tokenizer memoises BPE results in an LRU map of 100k entries by default; once full, every
 * miss evicts through `Map.keys().next()`, which walks the map's deleted slots. On text with few
 * repeats (base64, random CJK) that made counting 5× slower (0.28 vs 1.3 M chars/s); 1,000 entries
 * keep the hits that matter (repeated pieces) and lost nothing on prose. The setting is global to
 * the library's shared cl100k_base instance; it changes speed only, never counts.
 */
setMergeCacheSize(1_000);

/** Special-token text is plain text: nothing is disallowed, nothing is allowed as a special token. */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Above this many characters per token of limit, counting a text to the end is likely wasted work,
 * so `tokensWithin` switches to the library's early-exit check (slower per character, but it stops
 * as soon as the limit is passed).
 */
const EARLY_EXIT_CHARS_PER_TOKEN = 4;

/** Exact cl100k_base token count of `text`; special-token text counts as plain text. */
export function countTokens(text: string): number {
  return libCountTokens(text, PLAIN_TEXT);
}

/**
 * The exact token count of `text` when it is at most `limit`, otherwise `false` — without counting
 * the whole text when it is much longer than the limit.
 */
export function tokensWithin(text: string, limit: number): number | false {
  if (text.length <= limit * EARLY_EXIT_CHARS_PER_TOKEN) {
    const count = libCountTokens(text, PLAIN_TEXT);
    return count <= limit ? count : false;
  }
  return isWithinTokenLimit(text, limit, PLAIN_TEXT);
}
