/**
 * A CSV quote that is never closed reads the rest of the file as one field: its reject names the
 * line the quote opened on and the lines (rows) it swallowed, and the rows before it are kept.
 */
import { describe, expect, it } from 'vitest';
import { put, readBrief, tempFolder } from './helpers.js';

const folder = await tempFolder();
let count = 0;
const csv = (content: string) => put(folder, `q${count++}.csv`, content);

describe('an unterminated CSV quote', () => {
  it('names the line it opened on and the rows it swallowed; the rows before it are kept', async () => {
    const path = await csv('id,text\n1,one\n2,two\n3,"three\n4,four\n5,five\n6,six\n7,seven\n');
    expect(await readBrief({ path })).toEqual([
      { doc: '1', text: 'one', line: 2 },
      { doc: '2', text: 'two', line: 3 },
      {
        reject:
          'unparseable row: unterminated quote opened on line 4: lines 4-8 read as one field ' +
          '(the rows on lines 5-8 are in this reject); close the quote',
        line: 4,
        id: '3',
      },
    ]);
  });

  it('names the line of the quote, not of the record, when an earlier field spans lines', async () => {
    const path = await csv('id,text,note\n1,"multi\r\nline","open\r\n2,b,c\r\n');
    expect(await readBrief({ path })).toEqual([
      {
        reject:
          'unparseable row: unterminated quote opened on line 3: lines 3-4 read as one field ' +
          '(the row on line 4 is in this reject); close the quote',
        line: 2,
        id: '1',
      },
    ]);
  });

  it('on the last line swallows nothing; trailing blank lines are not counted as swallowed', async () => {
    const last = await csv('id,text\n1,one\n2,"two\n');
    expect(await readBrief({ path: last })).toEqual([
      { doc: '1', text: 'one', line: 2 },
      {
        reject: 'unparseable row: unterminated quote opened on line 3, the last line: close the quote',
        line: 3,
        id: '2',
      },
    ]);
    const blanks = await csv('id,text\n1,"one\n2,two\n\n\n');
    expect(await readBrief({ path: blanks })).toEqual([
      {
        reject:
          'unparseable row: unterminated quote opened on line 2: lines 2-3 read as one field ' +
          '(the row on line 3 is in this reject); close the quote',
        line: 2,
        id: '1',
      },
    ]);
  });
});
