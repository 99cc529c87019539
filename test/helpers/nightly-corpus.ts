/**
 * Corpora for nightly-run tests: multi-chunk documents of mixed scripts (prose, CJK, code, emoji
 * sequences, RTL with digits, combining marks, long unbroken tokens, CRLF), boilerplate paragraphs
 * shared across documents (the same chunk text under many ids), and the night-to-night changes a
 * real corpus sees: edits, inserts, deletes, reorders and copies of other documents' texts.
 */
import { writeFile } from 'node:fs/promises';
import { type Random, randomDocument } from '../chunking/generate.js';

export interface Doc {
  id: string;
  text: string;
}

const pick = <T>(rand: Random, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;

const RTL = [
  'مرحبا بالعالم، هذا نص تجريبي رقم ٣٤٥ مع كلمة API في الوسط.',
  'שלום עולם, זה טקסט לדוגמה עם המספר 42 ו-"ציטוט".',
  'سلامٌ عَلَيْكُم — النصّ مع الحركات والتطويل: كـــتاب.',
];
const COMBINING = ['Cafe\u0301 na\u0131\u0308ve re\u0301sume\u0301', 'Ã̲ ë̤ ő̵ ṫ̈ x̧̌', 'Ǹ̶͈ô̷̮ ť̸͚ ẽ̸̡ n̶̢̛ơ̵̰'];
const BOILERPLATE = [
  'This message and any attachment are confidential. If you are not the intended recipient, delete it.',
  '— 送信元: 社内ポータル 📎 返信不要 —',
  '```\nnpm install && npm test\n```',
];

/** A document of 2–6 paragraphs of mixed kinds, one in three ending with a shared boilerplate line. */
export function mixedDocument(rand: Random): string {
  const parts: string[] = [];
  for (let p = 2 + Math.floor(rand() * 5); p > 0; p--) {
    const r = rand();
    if (r < 0.15) parts.push(pick(rand, RTL));
    else if (r < 0.25) parts.push(pick(rand, COMBINING));
    else parts.push(randomDocument(rand).trim() || pick(rand, RTL));
  }
  if (rand() < 0.33) parts.push(pick(rand, BOILERPLATE));
  const text = parts.join(rand() < 0.15 ? '\r\n\r\n' : '\n\n');
  return text.trim() === '' ? pick(rand, RTL) : text;
}

/**
 * A document with a paragraph of every script the corpus uses: first in a corpus, the calibration's
 * probes (drawn from the first documents) meet every script at once, so no later document opens a
 * new calibration epoch (see docs/design.md, "Chunk sizing").
 */
export const SAMPLER: Doc = {
  id: 'aaa-sampler',
  text: [
    'The pipeline embeds documents quickly, über naïve café Straße résumé.',
    '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学。',
    'データから天気へ時間は「電車」ユーザーよりありがとうございます、ｶﾀｶﾅ。',
    '한국어 문장과 공백이 있습니다. Ελληνικά και Русский текст, ђ љ џ.',
    ...RTL,
    ...COMBINING,
    '😀 👍🏽 👨‍👩‍👧 🇫🇷 𝕏 🧪 ❤️ 𠀀𠀁',
    '  const v0 = items[0]?.value ?? 0;\n{"id":1,"tags":["a","b"],"ok":true}\t<|endoftext|>',
  ].join('\n\n'),
};

/**
 * `count` mixed documents after the SAMPLER; `sampler: false` leaves it out, so that scripts the
 * probes did not meet open epochs mid-corpus (lazy probes) and documents get re-planned.
 */
export function makeDocs(count: number, rand: Random, prefix = 'doc', { sampler = true } = {}): Doc[] {
  return [
    ...(sampler ? [SAMPLER] : []),
    ...Array.from({ length: count }, (_, i) => ({
      id: `${prefix}-${String(i).padStart(4, '0')}`,
      text: mixedDocument(rand),
    })),
  ];
}

export interface Changes {
  edited: number;
  deleted: number;
  added: number;
  /** Documents whose text became another document's. */
  copied: number;
  reordered: boolean;
}

/** The next night's corpus: `share` of the documents edited, half that deleted, a quarter added, some copied, a stretch reordered. */
export function nextNight(
  docs: readonly Doc[],
  rand: Random,
  night: number,
  share = 0.05,
): { docs: Doc[]; changes: Changes } {
  const out: Doc[] = [];
  const changes: Changes = { edited: 0, deleted: 0, added: 0, copied: 0, reordered: false };
  for (const doc of docs) {
    if (doc === SAMPLER) {
      out.push(doc);
      continue;
    }
    const r = rand();
    if (r < share / 2) {
      changes.deleted += 1;
      continue;
    }
    if (r < share * 1.5) {
      changes.edited += 1;
      const paragraphs = doc.text.split('\n\n');
      const at = Math.floor(rand() * (paragraphs.length + 1));
      paragraphs.splice(at, rand() < 0.5 ? 1 : 0, mixedDocument(rand));
      out.push({ id: doc.id, text: paragraphs.join('\n\n') });
    } else if (r < share * 1.8 && out.length > 0) {
      changes.copied += 1;
      out.push({ id: doc.id, text: pick(rand, out).text });
    } else out.push(doc);
    if (rand() < share / 4) {
      changes.added += 1;
      out.push({ id: `new-${night}-${changes.added}`, text: mixedDocument(rand) });
    }
  }
  if (out.length > 8 && rand() < 0.5) {
    changes.reordered = true;
    const start = 1 + Math.floor(rand() * (out.length - 9));
    const stretch = out.splice(start, 8);
    out.splice(1 + Math.floor(rand() * (out.length - 1)), 0, ...stretch.reverse());
  }
  return { docs: out, changes };
}

export async function writeJsonl(path: string, docs: readonly Doc[]): Promise<void> {
  await writeFile(path, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
}
