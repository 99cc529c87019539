import { createRequire } from 'node:module';
import { countPieces, piecesWithin, truncateToPieces } from './pieces.js';

/** How an emulated model counts tokens: context length, truncation, the 400 message and usage. */
export const TOKENIZER_NAMES = ['pieces', 'cl100k'] as const;
export type TokenizerName = (typeof TOKENIZER_NAMES)[number];

/** A model's tokenizer unless its config names one: unlike the client's planning count (cl100k). */
export const DEFAULT_TOKENIZER: TokenizerName = 'pieces';

export interface Tokenizer {
  count(text: string): number;
  /** The count when it is at most `limit`, else false (without counting the whole text). */
  countWithin(text: string, limit: number): number | false;
  /** The text kept when `text` is cut to `limit` tokens. */
  truncate(text: string, limit: number): string;
}

/**
 * cl100k_base, with special-token checks off, so a document containing `<|endoftext|>` is counted
 * as the plain text it is instead of throwing.
 */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

type Cl100kModule = typeof import('gpt-tokenizer/encoding/cl100k_base');
let cl100kModule: Cl100kModule | undefined;
/**
 * Its ranks are slow to load (docs/benchmarks.md, "Design figures"), and the default models count pieces:
 * loaded on first use.
 */
const bpe = (): Cl100kModule =>
  (cl100kModule ??= createRequire(import.meta.url)('gpt-tokenizer/encoding/cl100k_base') as Cl100kModule);

export const CL100K: Tokenizer = {
  count: (text) => bpe().countTokens(text, PLAIN_TEXT),
  countWithin: (text, limit) => bpe().isWithinTokenLimit(text, limit, PLAIN_TEXT),
  truncate: (text, limit) => bpe().decode(bpe().encode(text, PLAIN_TEXT).slice(0, limit)),
};

/** The SentencePiece-like count of pieces.ts. */
export const PIECES: Tokenizer = {
  count: countPieces,
  countWithin: piecesWithin,
  truncate: truncateToPieces,
};

export function tokenizer(name: TokenizerName = DEFAULT_TOKENIZER): Tokenizer {
  return name === 'cl100k' ? CL100K : PIECES;
}
