/**
 * Recognising "this input is too long" among 400 answers. Gateways word it differently per
 * provider, so the match is on the common phrasings; the stated limit, when present, sizes the
 * re-chunking.
 */
const TOO_LONG =
  /context length|context window|too long|too many tokens|maximum (?:input )?length|exceeds? (?:the )?(?:maximum|max|limit)|token limit|input length/i;

export function isTooLongMessage(message: string): boolean {
  return TOO_LONG.test(message);
}

/** The token limit a rejection names ("maximum context length is 4096 tokens"), if any. */
export function statedTokenLimit(message: string): number | undefined {
  const match =
    /(?:context length|limit|maximum)[^0-9]{0,40}?(\d{2,7})\s*tokens?/i.exec(message) ??
    /(\d{2,7})\s*tokens?/i.exec(message);
  const value = match?.[1] ? Number(match[1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

/** The input's own count a rejection names ("input 3 has 9120 tokens"): a number of tokens above the limit. */
export function statedInputTokens(message: string): number | undefined {
  const limit = statedTokenLimit(message) ?? 0;
  let largest: number | undefined;
  for (const match of message.matchAll(/(\d{1,9})\s*tokens?/gi)) {
    const value = Number(match[1]);
    if (value > limit && (largest === undefined || value > largest)) largest = value;
  }
  return largest;
}
