/** Inputs that used to pass as nothing: gzip files, mixed line breaks, empty files, wrong field names. */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { detectFormat } from '../../src/corpus/index.js';
import { UsageError } from '../../src/errors.js';
import { put, readAll, readBrief, tempFolder } from './helpers.js';

const folder = await tempFolder();
const jsonl = (rows: object[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;

describe('gzip input', () => {
  const rows = jsonl([
    { id: 'a', text: 'alpha' },
    { id: 'b', text: 'béta 🚀' },
  ]);
  const expected = [
    { doc: 'a', text: 'alpha', line: 1 },
    { doc: 'b', text: 'béta 🚀', line: 2 },
  ];

  it('reads a gzip file named .jsonl, sniffing the magic bytes', async () => {
    const path = await put(folder, 'packed.jsonl', gzipSync(rows));
    expect(await readBrief({ path })).toEqual(expected);
  });

  it('reads .jsonl.gz and .csv.gz, the format from the name inside', async () => {
    expect(await readBrief({ path: await put(folder, 'docs.jsonl.gz', gzipSync(rows)) })).toEqual(expected);
    const csv = gzipSync('id,text\r\na,alpha\r\nb,béta 🚀\r\n');
    expect(await readBrief({ path: await put(folder, 'docs.csv.gz', csv) })).toEqual(
      expected.map((row) => ({ ...row, line: row.line + 1 })),
    );
    expect(detectFormat('x/DOCS.CSV.GZ', { isDirectory: () => false })).toBe('csv');
  });

  it('reads a large gzip file streamed, line numbers intact', async () => {
    const many = jsonl(Array.from({ length: 20_000 }, (_, i) => ({ id: `d${i}`, text: `text ${i}` })));
    const entries = await readAll({ path: await put(folder, 'big.jsonl.gz', gzipSync(many)) });
    expect(entries).toHaveLength(20_000);
    expect(entries.at(-1)).toMatchObject({ kind: 'document', document: { id: 'd19999', line: 20_000 } });
  });

  it('stops with a UsageError on a damaged gzip file', async () => {
    const damaged = gzipSync(rows).subarray(0, 20);
    await expect(readAll({ path: await put(folder, 'damaged.jsonl.gz', damaged) })).rejects.toThrow(
      /damaged gzip/,
    );
  });
});

describe('CSV line breaks', () => {
  it('reads a file mixing CRLF and LF as separate rows', async () => {
    const path = await put(
      folder,
      'mixed.csv',
      'id,text\r\na,one\r\nb,two\nc,three\r\nd,"multi\nline"\ne,five\n',
    );
    expect(await readBrief({ path })).toEqual([
      { doc: 'a', text: 'one', line: 2 },
      { doc: 'b', text: 'two', line: 3 },
      { doc: 'c', text: 'three', line: 4 },
      { doc: 'd', text: 'multi\nline', line: 5 },
      { doc: 'e', text: 'five', line: 7 },
    ]);
  });
});

describe('empty input', () => {
  it('throws a UsageError for an empty JSONL file, and one of blank lines', async () => {
    for (const content of ['', '\n\n  \n']) {
      const path = await put(folder, 'empty.jsonl', content);
      await expect(readAll({ path })).rejects.toThrow(UsageError);
      await expect(readAll({ path })).rejects.toThrow(/no documents in the input/);
    }
  });
});

describe('wrong field names', () => {
  it('stops after 100 leading rows without the fields, naming the fields found and the flags', async () => {
    const path = await put(
      folder,
      'named.jsonl',
      jsonl(Array.from({ length: 150 }, (_, i) => ({ doc_id: `d${i}`, body: `text ${i}` }))),
    );
    const error = await readAll({ path }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(/first 100 rows/);
    expect((error as Error).message).toMatch(/"doc_id", "body"/);
    expect((error as Error).message).toMatch(/--id-field.*--text-field/);
    expect(await readAll({ path, idField: 'doc_id', textField: 'body' })).toHaveLength(150);
  });

  it('keeps going once a row had the fields: later rows missing them are rejects', async () => {
    const rows = [{ id: 'ok', text: 'fine' }, ...Array.from({ length: 120 }, (_, i) => ({ other: i }))];
    const entries = await readAll({ path: await put(folder, 'late.jsonl', jsonl(rows)) });
    expect(entries).toHaveLength(121);
    expect(entries.filter((e) => e.kind === 'reject')).toHaveLength(120);
  });
});
