/**
 * The CSV reader reads a file without per-field hooks until the parser rejects a record, then reads
 * the rest again record by record (corpus/csv.ts). Whatever the file, its entries must be exactly
 * those of the record-by-record read from the start: the same documents, rejects, reasons, ids and
 * line numbers, in the same order, and the bytes reported read once each.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { type CsvReadOptions, readCsv, readCsvExactly } from '../../src/corpus/csv.js';
import { IdRegistry } from '../../src/corpus/ids.js';
import type { CorpusEntry } from '../../src/domain.js';
import { random } from '../output/fixtures.js';
import { type Brief, brief, put, tempFolder } from './helpers.js';

const folder = await tempFolder();
let count = 0;

async function entriesOf(
  read: (options: CsvReadOptions) => AsyncGenerator<CorpusEntry[]>,
  path: string,
): Promise<{ entries: Brief[]; bytes: number }> {
  const ids = new IdRegistry();
  let bytes = 0;
  const entries: Brief[] = [];
  try {
    const options: CsvReadOptions = {
      path,
      file: path,
      idField: 'id',
      textField: 'text',
      ids,
      maxRecordBytes: 1 << 20,
      onBytes: (n) => {
        bytes += n;
      },
    };
    for await (const piece of read(options)) for (const entry of piece) entries.push(brief(entry));
  } finally {
    ids.close();
  }
  return { entries, bytes };
}

const TEXTS = [
  'plain words',
  '"quoted, with a comma"',
  '"say ""hi"" twice"',
  '"two\nlines"',
  '"two\r\nCRLF lines"',
  '"blank\r\n\r\nline inside"',
  '"漢字とかな、😀‍🔥 and עברית"',
  'é́ combining',
  '""',
];

/** Records that the parser rejects, each of a kind the reader names differently. */
const MALFORMED = ['x,too,many,fields', 'lonely', 'a stray "quote",here', '"closed" then text,more'];

/**
 * A CSV of `rows` records in the given line break, each past the first `clean` malformed with
 * probability `faults` (the fast read is a 64 KiB read ahead of its entries: a fault in the first
 * read switches before any entry).
 */
function csvText(seed: number, rows: number, faults: number, eol: string, clean = 0): string {
  const next = random(seed);
  const lines = ['id,text'];
  for (let i = 0; i < rows; i++) {
    if (i >= clean && next() < faults) lines.push(MALFORMED[Math.floor(next() * MALFORMED.length)]!);
    else lines.push(`${next() < 0.05 ? 'dup' : `r${i}`},${TEXTS[Math.floor(next() * TEXTS.length)]}`);
    if (next() < 0.1) lines.push('');
  }
  return lines.join(eol) + (next() < 0.5 ? eol : '');
}

async function expectSameAsExact(content: string | Buffer): Promise<void> {
  const path = await put(folder, `f${count++}.csv${Buffer.isBuffer(content) ? '.gz' : ''}`, content);
  const fast = await entriesOf(readCsv, path);
  const exact = await entriesOf(readCsvExactly, path);
  expect(fast.entries).toEqual(exact.entries);
  expect(fast.bytes).toBe(exact.bytes);
}

describe('the fast CSV read and its switch to the exact read', () => {
  it.each([
    ['LF, no malformed record', 1, 0, '\n', 0],
    ['CRLF, no malformed record', 2, 0, '\r\n', 0],
    ['LF, a few malformed records', 3, 0.002, '\n', 0],
    ['CRLF, many malformed records', 4, 0.05, '\r\n', 0],
    ['lone CR, some malformed records', 5, 0.01, '\r', 0],
    ['LF, malformed records after the first reads', 10, 0.01, '\n', 4000],
    ['CRLF, malformed records after the first reads', 11, 0.01, '\r\n', 4000],
    ['lone CR, malformed records after the first reads', 12, 0.01, '\r', 4000],
  ])('%s: the entries of the exact read, over several 64 KiB reads', async (_, seed, faults, eol, clean) => {
    await expectSameAsExact(csvText(seed, 6000, faults, eol, clean));
  });

  it('switches at a malformed record far into a file, after multi-line records and blank lines', async () => {
    const good = csvText(6, 3000, 0, '\r\n');
    await expectSameAsExact(`${good}\r\nbad,"closed" then text\r\nlast,"one\r\nmore"\r\n`);
  });

  it('switches at a quote left open at the end, naming the line it opened on', async () => {
    const good = csvText(7, 2000, 0, '\n');
    const path = await put(folder, `f${count++}.csv`, `${good}\nopen,"never closed\nx,y\n`);
    const fast = await entriesOf(readCsv, path);
    expect(fast.entries).toEqual((await entriesOf(readCsvExactly, path)).entries);
    expect(fast.entries.at(-1)).toMatchObject({ reject: expect.stringContaining('quote') });
  });

  it('switches at the first record, and reads a gzip file again from its start', async () => {
    await expectSameAsExact(`id,text\nonly,one,too many\nr1,fine\n`);
    await expectSameAsExact(gzipSync(Buffer.from(csvText(8, 3000, 0.01, '\n'))));
  });

  it('keeps a BOM out of the header either way', async () => {
    await expectSameAsExact(`\uFEFF${csvText(9, 500, 0.02, '\r\n')}`);
  });
});
