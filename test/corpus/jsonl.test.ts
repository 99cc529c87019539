import { describe, expect, it } from 'vitest';
import { bytes, put, readBrief, tempFolder } from './helpers.js';

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
      { reject: 'missing id', line: 2 },
    ]);
    const inherited = await jsonl(`${line({ id: 'x', text: 't' })}\n`);
    expect(await readBrief({ path: inherited, idField: 'constructor' })).toEqual([
      { reject: 'missing id', line: 1 },
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
      { reject: 'missing id', line: 6 },
      { reject: 'missing id (null)', line: 7 },
      { reject: 'missing id', line: 8 },
      { reject: 'non-integer id (number 7.5): an id is a string or an integer', line: 9 },
      { reject: 'missing text', line: 10, id: '10' },
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
