/** Seeded generators of awkward documents for the chunker's property tests. */

export type Random = () => number;

/** Deterministic LCG in [0, 1), so a failing case can be replayed from its seed. */
export function seeded(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const pick = <T>(rand: Random, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const int = (rand: Random, min: number, max: number): number => min + Math.floor(rand() * (max - min + 1));

const WORDS = [
  'the',
  'pipeline',
  'embeds',
  'documents',
  'quickly',
  'and',
  'a',
  'gateway',
  'answers',
  'with',
  'vectors',
  'über',
  'naïve',
  'café',
  'Straße',
  'résumé',
  'x',
  'tokenizer',
  'boundary',
  'it',
];
const EMOJI = ['😀', '👍🏽', '👨‍👩‍👧', '🇫🇷', '𝕏', '🧪', '❤️'];
const CJK = '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学';
const TERMINATORS = ['.', '!', '?', '…', '."', '?)'];
const SPACES = [' ', ' ', ' ', '  ', '\t', '\u00a0', ' \n', '   '];

function word(rand: Random): string {
  const r = rand();
  if (r < 0.08) return pick(rand, EMOJI);
  if (r < 0.12) return String(int(rand, 0, 99999));
  if (r < 0.14) return '<|endoftext|>';
  return pick(rand, WORDS);
}

function sentence(rand: Random): string {
  const words = Array.from({ length: int(rand, 1, 18) }, () => word(rand));
  return words.map((w, i) => (i === 0 ? w : pick(rand, SPACES) + w)).join('') + pick(rand, TERMINATORS);
}

function cjkSentence(rand: Random): string {
  let s = '';
  for (let i = int(rand, 3, 40); i > 0; i--) s += pick(rand, [...CJK]);
  return s + pick(rand, ['。', '！', '？', '，', '']);
}

function code(rand: Random): string {
  const lines = Array.from({ length: int(rand, 1, 12) }, (_, i) =>
    pick(rand, [
      `  const v${i} = items[${i}]?.value ?? 0;`,
      `{"id":${int(rand, 0, 999)},"tags":["a","b"],"ok":true}`,
      `    if (x > ${i}) { return y.map((z) => z * 2); }`,
      '',
    ]),
  );
  return lines.join('\n');
}

function giantWord(rand: Random): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=😀中';
  let s = '';
  for (let i = int(rand, 50, 3000); i > 0; i--) s += pick(rand, [...alphabet]);
  return s;
}

/** A run the tokenizer would keep as one pre-token, longer than the chunker's MAX_RUN cap. */
function longRun(rand: Random): string {
  const length = int(rand, 1000, 2600);
  return pick(rand, ['a', 'z', '=', '😀', ' ', '\n', '中']).repeat(length);
}

/** A document of mixed paragraphs: prose, CJK, code, emoji, a giant word, whitespace runs. */
export function randomDocument(rand: Random): string {
  const paragraphs: string[] = [];
  for (let p = int(rand, 0, 8); p > 0; p--) {
    const kind = rand();
    if (kind < 0.45) paragraphs.push(Array.from({ length: int(rand, 1, 8) }, () => sentence(rand)).join(' '));
    else if (kind < 0.6)
      paragraphs.push(Array.from({ length: int(rand, 1, 8) }, () => cjkSentence(rand)).join(''));
    else if (kind < 0.75) paragraphs.push(code(rand));
    else if (kind < 0.85) paragraphs.push(giantWord(rand));
    else if (kind < 0.92)
      paragraphs.push(' '.repeat(int(rand, 1, 60)) + sentence(rand) + '\n'.repeat(int(rand, 1, 5)));
    else if (kind < 0.97) paragraphs.push(pick(rand, EMOJI).repeat(int(rand, 1, 80)));
    else paragraphs.push(longRun(rand));
  }
  const leading = rand() < 0.2 ? '\n\n  ' : '';
  return leading + paragraphs.join(pick(rand, ['\n\n', '\n\n\n', '\r\n\r\n', '\n \n']));
}
