import { describe, expect, it } from 'vitest';
import { openCorpus, openCorpusPieces } from '../../src/corpus/index.js';
import { UsageError } from '../../src/errors.js';
import { bytes, put, readAll, readBrief, tempFolder } from './helpers.js';

const folder = await tempFolder();
let count = 0;
/** A JSONL file with the given content. */
const jsonl = (content: string | Uint8Array, extension = 'jsonl') =>
  put(folder, `j${count++}.${extension}`, content);
const line = (value: unknown) => JSON.stringify(value);

describe('JSONL layout', () => {
  it('reads LF and CRLF lines, a last line without a break, a BOM, and .ndjson', async () => {
    const content = `\uFEFF${line({ id: 'a', text: 'one' })}\r\n${line({ id: 'b', text: 'two' })}\n${line({ id: 'c', text: 'three' })}`;
    const expected = [
      { doc: 'a', text: 'one', line: 1 },
      { doc: 'b', text: 'two', line: 2 },
      { doc: 'c', text: 'three', line: 3 },
    ];
    expect(await readBrief({ path: await jsonl(content) })).toEqual(expected);
    expect(await readBrief({ path: await jsonl(content, 'ndjson') })).toEqual(expected);
  });

  it('skips blank lines silently but counts them', async () => {
    const path = await jsonl(
      `\n${line({ id: 'a', text: 'x' })}\n\n  \t\r\n${line({ id: 'b', text: 'y' })}\n\n`,
    );
    expect(await readBrief({ path })).toEqual([
      { doc: 'a', text: 'x', line: 2 },
      { doc: 'b', text: 'y', line: 5 },
    ]);
  });

  it('uses the configured fields, own properties only', async () => {
    const path = await jsonl(`${line({ key: 'k', body: 'b', id: 'ignored' })}\n${line({ body: 'b' })}\n`);
    expect(await readBrief({ path, idField: 'key', textField: 'body' })).toEqual([
      { doc: 'k', text: 'b', line: 1 },
      { reject: 'missing id (fields: body)', line: 2 },
    ]);
    // A field named like an Object.prototype member is read only when the row has it itself.
    const inherited = await jsonl(
      `${line({ constructor: 'c', text: 'own' })}\n${line({ id: 'x', text: 't' })}\n`,
    );
    expect(await readBrief({ path: inherited, idField: 'constructor' })).toEqual([
      { doc: 'c', text: 'own', line: 1 },
      { reject: 'missing id (fields: id, text)', line: 2 },
    ]);
  });

  it('keeps text exactly: whitespace, CJK, emoji, RTL, combining marks, escapes, U+FEFF and U+FFFD', async () => {
    const texts = [
      ' padded\n\ttext ',
      '中文文本',
      '🧑‍🚀🚀',
      'שלום עולם',
      'a\u0308o\u0308',
      'tab\tquote"slash\\',
      '\uFEFFlead',
      '\uFFFD',
    ];
    const path = await jsonl(texts.map((text, i) => line({ id: String(i), text })).join('\n'));
    const entries = await readBrief({ path });
    expect(entries.map((entry) => ('text' in entry ? entry.text : entry))).toEqual(texts);
  });

  it('reads a line of several MB spread over many chunks', async () => {
    const text = 'é'.repeat(3_000_000);
    const path = await jsonl(`${line({ id: 'big', text })}\n${line({ id: 'small', text: 's' })}\n`);
    const entries = await readBrief({ path });
    expect(entries.map((entry) => ('text' in entry ? entry.text.length : entry))).toEqual([3_000_000, 1]);
    expect(entries[0]).toMatchObject({ doc: 'big', line: 1 });
    expect('text' in entries[0]! && entries[0].text === text).toBe(true);
  });
});

describe('JSONL rejects', () => {
  it('rejects every kind of bad line and goes on', async () => {
    const path = await jsonl(
      [
        '{"id": "1", "text": "ok"}',
        '{"id": "2", "text": ', // truncated JSON
        '[1, 2]',
        '"a string"',
        'null',
        '{"text": "no id"}',
        '{"id": null, "text": "null id"}',
        '{"id": "", "text": "empty id"}',
        '{"id": 7.5, "text": "number id"}',
        '{"id": "10"}',
        '{"id": "11", "text": 42}',
        '{"id": "12", "text": ""}',
        '{"id": "13", "text": " \\n\\t "}',
        '{"id": "1", "text": "again"}',
        '{"id": "15", "text": "lone \\ud800 surrogate"}',
        '{"id": "16", "text": "fine"}',
      ].join('\n'),
    );
    const entries = await readBrief({ path });
    expect(entries[1]).toMatchObject({ line: 2 });
    expect(entries[1] && 'reject' in entries[1] && entries[1].reject).toMatch(/^unparseable line: .*JSON/);
    expect(entries.filter((_, i) => i !== 1)).toEqual([
      { doc: '1', text: 'ok', line: 1 },
      { reject: 'not a JSON object (array)', line: 3 },
      { reject: 'not a JSON object (string)', line: 4 },
      { reject: 'not a JSON object (null)', line: 5 },
      { reject: 'missing id (fields: text)', line: 6 },
      { reject: 'missing id (null)', line: 7 },
      { reject: 'missing id', line: 8 },
      { reject: 'non-integer id (number 7.5): an id is a string or an integer', line: 9 },
      { reject: 'missing text (fields: id)', line: 10, id: '10' },
      { reject: 'non-string text (number)', line: 11, id: '11' },
      { reject: 'empty text', line: 12, id: '12' },
      { reject: 'whitespace-only text', line: 13, id: '13' },
      { reject: `duplicate id (first seen at ${path}:1)`, line: 14, id: '1' },
      { reject: 'text contains an unpaired surrogate', line: 15, id: '15' },
      { doc: '16', text: 'fine', line: 16 },
    ]);
  });

  it('rejects a line with invalid UTF-8, and only that line', async () => {
    const path = await jsonl(
      bytes(
        line({ id: 'a', text: 'x' }),
        '\n',
        '{"id": "b", "text": "',
        [0xe2, 0x82],
        '"}\n',
        line({ id: 'c', text: 'z' }),
      ),
    );
    expect(await readBrief({ path })).toEqual([
      { doc: 'a', text: 'x', line: 1 },
      {
        reject:
          'invalid UTF-8 (byte 0xE2 at offset 21 of the line); it reads as windows-1252: pass --encoding windows-1252',
        line: 2,
      },
      { doc: 'c', text: 'z', line: 3 },
    ]);
  });

  it('rejects a line longer than maxEntryBytes without holding it', async () => {
    const long = line({ id: 'long', text: 'y'.repeat(300_000) });
    const path = await jsonl(`${line({ id: 'a', text: 'x' })}\n${long}\n${line({ id: 'b', text: 'z' })}`);
    expect(await readBrief({ path, maxEntryBytes: 100_000 })).toEqual([
      { doc: 'a', text: 'x', line: 1 },
      { reject: `too large: ${long.length} bytes (limit 100000)`, line: 2 },
      { doc: 'b', text: 'z', line: 3 },
    ]);
  });
});

describe('JSONL rows whose fields are named otherwise', () => {
  /** The error a read stops with, and the entries it yielded before. */
  const readUntilError = async (options: Parameters<typeof readAll>[0]) => {
    const entries: unknown[] = [];
    try {
      for await (const entry of openCorpus({ idField: 'id', textField: 'text', ...options }))
        entries.push(entry);
    } catch (error) {
      return { error: error as Error, entries };
    }
    return { error: undefined, entries };
  };

  it('stops a small file at its end, naming the file, the fields found, the flags and a guess', async () => {
    const rows = [
      { doc_id: 'a', title: 'One', body: 'the first document, long enough' },
      { doc_id: 'b', title: 'Two', body: 'the second document' },
      { doc_id: 'c', title: 'Three', body: 'the third document' },
    ];
    const path = await jsonl(rows.map(line).join('\n'));
    const { error, entries } = await readUntilError({ path });
    expect(error).toBeInstanceOf(UsageError);
    expect(error?.message).toBe(
      `${path}: all 3 rows lack the id field "id" and the text field "text" ` +
        '(fields found: "doc_id", "title", "body"); pick the fields with --id-field and --text-field, ' +
        'e.g. --id-field doc_id --text-field body',
    );
    // Nothing is yielded first: no reject of a file that is wrong as a whole reaches _rejects.jsonl.
    expect(entries).toEqual([]);
    expect(await readBrief({ path, idField: 'doc_id', textField: 'body' })).toHaveLength(3);
  });

  it('stops a one-row file missing only its id, guessing from names or not at all', async () => {
    const uuid = await jsonl(`${line({ uuid: 'u1', text: 'hello' })}\n`);
    await expect(readAll({ path: uuid })).rejects.toThrow(
      `${uuid}: its only row lacks the id field "id" (fields found: "uuid", "text"); ` +
        'pick the fields with --id-field and --text-field, e.g. --id-field uuid',
    );
    const named = await jsonl(`${line({ name: 'x', text: 'hello' })}\n`);
    await expect(readAll({ path: named })).rejects.toThrow(
      `${named}: its only row lacks the id field "id" (fields found: "name", "text"); ` +
        'pick the fields with --id-field and --text-field',
    );
  });

  it('guesses the text from the longest strings when no name says so, and quotes odd names', async () => {
    const rows = [
      { _id: 1, label: 'short', 'the payload': 'a document of a good many words, clearly the text' },
      { _id: 2, label: 'brief', 'the payload': 'another document, also long enough to be a text' },
    ];
    const path = await jsonl(rows.map(line).join('\n'));
    await expect(readAll({ path })).rejects.toThrow(/, e\.g\. --id-field _id --text-field 'the payload'$/);
  });

  it('names only the field that is missing when the other one is there', async () => {
    const path = await jsonl([line({ id: 'a', content: 'x' }), line({ id: 'b', content: 'y' })].join('\n'));
    await expect(readAll({ path })).rejects.toThrow(
      `${path}: all 2 rows lack the text field "text" (fields found: "id", "content"); ` +
        'pick the fields with --id-field and --text-field, e.g. --text-field content',
    );
  });

  it('stops after 100 such rows of a longer file, before yielding anything', async () => {
    const rows = Array.from({ length: 250 }, (_, i) => line({ key: `k${i}`, body: `text ${i}` }));
    const path = await jsonl(rows.join('\n'));
    const { error, entries } = await readUntilError({ path });
    expect(error).toBeInstanceOf(UsageError);
    expect(error?.message).toBe(
      `${path}: the first 100 rows all lack the id field "id" and the text field "text" ` +
        '(fields found: "key", "body"); pick the fields with --id-field and --text-field, ' +
        'e.g. --id-field key --text-field body',
    );
    expect(entries).toEqual([]);
  });

  it('rejects only the rows missing a field once any row has both, in order, naming their fields', async () => {
    const path = await jsonl(
      [
        line({ doc_id: 'x', body: 'no' }),
        '',
        line({ id: 'a', text: 'one' }),
        line({ id: 'b', body: 'no text' }),
        line({ text: 'no id' }),
        line({ id: 'c', text: null }),
        '{}',
        line({ id: 'd', text: 'two' }),
      ].join('\n'),
    );
    expect(await readBrief({ path })).toEqual([
      { reject: 'missing id (fields: doc_id, body)', line: 1 },
      { doc: 'a', text: 'one', line: 3 },
      { reject: 'missing text (fields: id, body)', line: 4, id: 'b' },
      { reject: 'missing id (fields: text)', line: 5 },
      { reject: 'missing text (null)', line: 6, id: 'c' },
      { reject: 'missing id (no fields)', line: 7 },
      { doc: 'd', text: 'two', line: 8 },
    ]);
  });

  it('keeps a long list of fields short in a reject', async () => {
    const wide = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}`, i]));
    const path = await jsonl([line({ id: 'a', text: 'one' }), line({ ...wide, 'a, b': 1 })].join('\n'));
    expect((await readBrief({ path }))[1]).toEqual({
      reject: 'missing id (fields: f0, f1, f2, f3, f4, f5, f6, f7, … 3 more)',
      line: 2,
    });
  });

  it('leaves the rejects of a file that is mostly not JSON objects as they are', async () => {
    const path = await jsonl(['not json', '[1]', line({ doc_id: 'a', body: 'b' })].join('\n'));
    expect((await readBrief({ path })).map((entry) => ('reject' in entry ? entry.reject : entry))).toEqual([
      expect.stringMatching(/^unparseable line/),
      'not a JSON object (array)',
      'missing id (fields: doc_id, body)',
    ]);
    // As many object rows as other lines: the field names are the problem.
    const half = await jsonl(['not json', line({ doc_id: 'a', body: 'b' })].join('\n'));
    await expect(readAll({ path: half })).rejects.toThrow(
      /its only row lacks the id field "id" and the text/,
    );
  });

  it('hands on its entries in pieces that together are openCorpus, in order', async () => {
    // Held rows first (none has both fields yet), rejects spread through, more than one piece.
    const rows = [
      line({ other: 1 }),
      'not json',
      ...Array.from({ length: 700 }, (_, i) => (i % 97 === 5 ? '[1]' : line({ id: `d${i}`, text: `t${i}` }))),
    ];
    const path = await jsonl(rows.join('\n'));
    const options = { path, idField: 'id', textField: 'text' };
    const pieces: (readonly unknown[])[] = [];
    for await (const piece of openCorpusPieces(options)) pieces.push(piece);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece.length).toBeGreaterThan(0);
    const entries: unknown[] = [];
    for await (const entry of openCorpus(options)) entries.push(entry);
    expect(pieces.flat()).toEqual(entries);
    expect(entries).toHaveLength(rows.length);
  });
});
