/**
 * JSONL ids written as numbers (the usual export) are documents, their id the decimal digits: the
 * same id as the string, so duplicate detection and incremental runs see one document.
 */
import { describe, expect, it } from 'vitest';
import { put, readBrief, tempFolder } from './helpers.js';

const folder = await tempFolder();
let count = 0;
const file = (extension: string, content: string) => put(folder, `ids${count++}.${extension}`, content);
const jsonl = (...lines: string[]) => file('jsonl', `${lines.join('\n')}\n`);

describe('JSONL integer ids', () => {
  it('reads a safe integer id as its decimal digits', async () => {
    const path = await jsonl(
      '{"id": 123, "text": "a"}',
      '{"id": -7, "text": "b"}',
      '{"id": 0, "text": "c"}',
      '{"id": 9007199254740991, "text": "d"}',
      '{"id": 1e3, "text": "e"}',
    );
    expect(await readBrief({ path })).toEqual([
      { doc: '123', text: 'a', line: 1 },
      { doc: '-7', text: 'b', line: 2 },
      { doc: '0', text: 'c', line: 3 },
      { doc: '9007199254740991', text: 'd', line: 4 },
      // The value is what counts, not its spelling: 1e3 is the integer 1000.
      { doc: '1000', text: 'e', line: 5 },
    ]);
  });

  it('treats 123 and "123" as one id: the second is a duplicate naming the first', async () => {
    const path = await jsonl('{"id": 123, "text": "number"}', '{"id": "123", "text": "string"}');
    expect(await readBrief({ path })).toEqual([
      { doc: '123', text: 'number', line: 1 },
      { reject: `duplicate id (first seen at ${path}:1)`, line: 2, id: '123' },
    ]);
  });

  it('gives a CSV id "123" the same id as a JSONL 123', async () => {
    const fromJsonl = await readBrief({ path: await jsonl('{"id": 123, "text": "x"}') });
    const fromCsv = await readBrief({ path: await file('csv', 'id,text\n123,x\n007,y\n') });
    expect(fromJsonl[0]).toMatchObject({ doc: '123' });
    expect(fromCsv[0]).toMatchObject({ doc: '123' });
    // A CSV id is text: kept as written, leading zeros included.
    expect(fromCsv[1]).toEqual({ doc: '007', text: 'y', line: 3 });
  });

  it('rejects an id that is no string or safe integer, naming the line and the value, and goes on', async () => {
    const path = await jsonl(
      '{"id": 1.5, "text": "fraction"}',
      '{"id": 9007199254740993, "text": "past 2^53"}',
      '{"id": 1e400, "text": "infinite"}',
      '{"id": true, "text": "boolean"}',
      '{"id": null, "text": "null"}',
      '{"id": {"n": 1}, "text": "object"}',
      '{"id": [1], "text": "array"}',
      '{"id": 8, "text": "fine"}',
    );
    expect(await readBrief({ path })).toEqual([
      { reject: 'non-integer id (number 1.5): an id is a string or an integer', line: 1 },
      {
        // JSON.parse has already rounded it: the reason shows the value as read.
        reject:
          'id beyond 2^53 (number 9007199254740992 as read: JSON numbers this large lose digits): write the id as a string',
        line: 2,
      },
      {
        reject:
          'id beyond 2^53 (number Infinity as read: JSON numbers this large lose digits): write the id as a string',
        line: 3,
      },
      { reject: 'non-string id (boolean true)', line: 4 },
      { reject: 'missing id (null)', line: 5 },
      { reject: 'non-string id (object)', line: 6 },
      { reject: 'non-string id (array)', line: 7 },
      { doc: '8', text: 'fine', line: 8 },
    ]);
  });
});
