/**
 * A corpus that is hard in the ways real ones are: long multi-chunk documents, unicode, CSV quoting
 * (commas, quotes, newlines), duplicates, empty and whitespace-only text, a malformed row.
 */
import { writeFile } from 'node:fs/promises';

const WORDS =
  'river glass owl comet tide bread bee volcano tea coffee lantern harbor meadow cipher orbit quartz willow ember'.split(
    ' ',
  );

function sentence(rand: () => number, words = 8 + Math.floor(rand() * 12)): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(WORDS[Math.floor(rand() * WORDS.length)]!);
  const s = out.join(' ');
  return `${s[0]!.toUpperCase()}${s.slice(1)}.`;
}

export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function longDocument(rand: () => number, paragraphs: number): string {
  const out: string[] = [];
  for (let p = 0; p < paragraphs; p++) {
    const sentences: string[] = [];
    for (let s = 0; s < 3 + Math.floor(rand() * 6); s++) sentences.push(sentence(rand));
    out.push(sentences.join(' '));
  }
  return out.join('\n\n');
}

const csvCell = (s: string) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

export interface HardCorpus {
  /** Valid documents by id, exactly as their text must come back. */
  valid: Map<string, string>;
  /** Ids (or descriptions) of the rows that must be rejected, with the CSV line they start on. */
  rejectedLines: number[];
}

/** Writes a CSV with `docs` valid documents plus the hard cases; returns what must come out. */
export async function writeHardCsv(path: string, docs: number, seed = 1): Promise<HardCorpus> {
  const rand = seeded(seed);
  const valid = new Map<string, string>();
  const lines: string[] = ['id,title,text'];
  const rejectedLines: number[] = [];
  let line = 2;
  const add = (id: string, text: string, ok: boolean) => {
    const record = `${csvCell(id)},${csvCell(`Title of ${id}`)},${csvCell(text)}`;
    if (ok) valid.set(id, text);
    else rejectedLines.push(line);
    lines.push(record);
    line += record.split('\n').length;
  };
  for (let i = 0; i < docs; i++) {
    const kind = i % 10;
    const id = `doc-${String(i).padStart(5, '0')}`;
    if (kind === 0) add(id, longDocument(rand, 20 + Math.floor(rand() * 30)), true);
    else if (kind === 1)
      add(id, `Unicode ${i}: 東京 café naïve Ελληνικά 🚀🌍 עברית «quotes» ${sentence(rand)}`, true);
    else if (kind === 2)
      add(
        id,
        `Quoting ${i}: "a quoted phrase", commas, and\na newline inside the cell. ${sentence(rand)}`,
        true,
      );
    else add(id, `${sentence(rand)} ${sentence(rand)}`, true);
  }
  add('doc-00003', 'a duplicate of an earlier id', false);
  add('empty-text', '', false);
  add('blank-text', '   \t  ', false);
  add('', 'a row without an id', false);
  // A record with a stray quote in an unquoted field: csv-parse rejects it and goes on.
  rejectedLines.push(line);
  lines.push('bad-quote,Title,this "field" is malformed');
  line += 1;
  add('after-bad', 'the row after the malformed one still counts', true);
  await writeFile(path, `${lines.join('\n')}\n`);
  return { valid, rejectedLines };
}
