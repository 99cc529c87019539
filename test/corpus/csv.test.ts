import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { bytes, put, readAll, readBrief, tempFolder } from './helpers.js';

const folder = await tempFolder();
let count = 0;
/** A CSV file with the given content. */
const csv = (content: string | Uint8Array) => put(folder, `c${count++}.csv`, content);

describe('CSV quoting and layout', () => {
  it('reads quoted commas, doubled quotes, newlines, CRLF and a BOM', async () => {
    const path = await csv(
      '\uFEFFid,text\r\n' +
        'a,"one, two"\r\n' +
        'b,"say ""hi"""\r\n' +
        'c,"line 1\r\nline 2"\r\n' +
        'd,plain\r\n',
    );
    expect(await readBrief({ path })).toEqual([
      { doc: 'a', text: 'one, two', line: 2 },
      { doc: 'b', text: 'say "hi"', line: 3 },
      { doc: 'c', text: 'line 1\r\nline 2', line: 4 },
      { doc: 'd', text: 'plain', line: 6 },
    ]);
  });

  it('selects the id and text columns by name, in any order, ignoring the others', async () => {
    const path = await csv('title,body,key\nT,hello,k1\n');
    expect(await readBrief({ path, idField: 'key', textField: 'body' })).toEqual([
      { doc: 'k1', text: 'hello', line: 2 },
    ]);
  });

  it('gives a multi-line record the line it starts on, with LF, CRLF and blank lines', async () => {
    const path = await csv('id,text\n\n1,"a\nb\nc"\n2,x\n\n\n3,"p\r\n\r\nq"\n4,y');
    expect(await readBrief({ path })).toEqual([
      { doc: '1', text: 'a\nb\nc', line: 3 },
      { doc: '2', text: 'x', line: 6 },
      { doc: '3', text: 'p\r\n\r\nq', line: 9 },
      { doc: '4', text: 'y', line: 12 },
    ]);
  });

  it('counts CRLF inside quoted fields once (csv-parse counts it twice)', async () => {
    const path = await csv('id,text\r\n1,"a\r\nb\r\nc"\r\n2,x\r\n\r\n3,y');
    expect(await readBrief({ path })).toEqual([
      { doc: '1', text: 'a\r\nb\r\nc', line: 2 },
      { doc: '2', text: 'x', line: 5 },
      { doc: '3', text: 'y', line: 7 },
    ]);
  });

  it('reads old Mac files with lone CR line breaks', async () => {
    const path = await csv('id,text\r1,a\r2,"x\ry"\r3,z');
    expect(await readBrief({ path })).toEqual([
      { doc: '1', text: 'a', line: 2 },
      { doc: '2', text: 'x\ry', line: 3 },
      { doc: '3', text: 'z', line: 5 },
    ]);
  });

  it('keeps text exactly: whitespace, CJK, emoji, RTL, combining marks, U+FEFF and U+FFFD', async () => {
    const texts = [
      '  padded\t ',
      '日本語のテキスト',
      '👩🏽‍💻 emoji 🎉',
      'مرحبا بالعالم',
      'e\u0301 vs é',
      'zero\uFEFFwidth',
      'real \uFFFD',
    ];
    const path = await csv(`id,text\n${texts.map((text, i) => `${i},"${text}"`).join('\n')}\n`);
    const entries = await readBrief({ path });
    expect(entries.map((entry) => ('text' in entry ? entry.text : entry))).toEqual(texts);
  });

  it('keeps line numbers right across 64 KiB chunk boundaries', async () => {
    // Records of varied shape so that chunk boundaries fall inside quotes, CRLFs and BOM-less starts.
    let content = 'id,text\r\n';
    let line = 2;
    const expected: { doc: string; text: string; line: number }[] = [];
    for (let i = 0; i < 4000; i++) {
      const text =
        i % 3 === 0 ? `multi\r\nline "${i}"\nend` : i % 3 === 1 ? `plain ${'x'.repeat(i % 97)}` : `a,b ${i}`;
      content += `${i},"${text.replaceAll('"', '""')}"\r\n`;
      expected.push({ doc: String(i), text, line });
      line += 1 + (i % 3 === 0 ? 2 : 0);
      if (i % 7 === 0) {
        content += '\r\n';
        line += 1;
      }
    }
    const path = await csv(content);
    expect(await readBrief({ path })).toEqual(expected);
  });
});

describe('CSV rejects', () => {
  it('rejects empty ids and texts, whitespace-only texts, and duplicate ids', async () => {
    const path = await csv('id,text\n,no id\n1,\n2," \t "\n3,ok\n3,again\n4,fine\n');
    expect(await readBrief({ path })).toEqual([
      { reject: 'missing id', line: 2 },
      { reject: 'empty text', line: 3, id: '1' },
      { reject: 'whitespace-only text', line: 4, id: '2' },
      { doc: '3', text: 'ok', line: 5 },
      { reject: `duplicate id (first seen at ${path}:5)`, line: 6, id: '3' },
      { doc: '4', text: 'fine', line: 7 },
    ]);
  });

  it('lets a rejected row leave its id free for a later valid row', async () => {
    const path = await csv('id,text\n1,\n1,second\n');
    expect(await readBrief({ path })).toEqual([
      { reject: 'empty text', line: 2, id: '1' },
      { doc: '1', text: 'second', line: 3 },
    ]);
  });

  it('rejects a row with invalid UTF-8 in its text or id, and only that row', async () => {
    const path = await csv(
      bytes(
        'id,text,note\n',
        '1,good,x\n',
        '2,bad ',
        [0xff, 0xfe],
        ' text,x\n',
        [0xc3],
        ',bad id,x\n',
        '4,fine,x\n',
      ),
    );
    expect(await readBrief({ path })).toEqual([
      { doc: '1', text: 'good', line: 2 },
      {
        reject:
          'invalid UTF-8 (byte 0xFF at offset 4 of field "text"); it reads as windows-1252: pass --encoding windows-1252',
        line: 3,
        id: '2',
      },
      {
        reject:
          'invalid UTF-8 (byte 0xC3 at offset 0 of field "id"); it reads as windows-1252: pass --encoding windows-1252',
        line: 4,
      },
      { doc: '4', text: 'fine', line: 5 },
    ]);
  });

  it('ignores invalid UTF-8 in a column it does not use', async () => {
    const path = await csv(bytes('id,text,note\n', '1,good,', [0xff], '\n'));
    expect(await readBrief({ path })).toEqual([{ doc: '1', text: 'good', line: 2 }]);
  });

  it('rejects records with a wrong column count and goes on', async () => {
    const path = await csv('id,text\n1,a,extra\n2\n3,"multi\nline",x\n4,ok\n');
    expect(await readBrief({ path })).toEqual([
      { reject: 'wrong column count: expected 2, got 3', line: 2, id: '1' },
      { reject: 'wrong column count: expected 2, got 1', line: 3, id: '2' },
      { reject: 'wrong column count: expected 2, got 3 (record spans lines 4-5)', line: 4, id: '3' },
      { doc: '4', text: 'ok', line: 6 },
    ]);
  });

  it('recovers after a stray quote in an unquoted field on the next line', async () => {
    const path = await csv('id,text\n1,a 12" screen\n2,ok\n');
    expect(await readBrief({ path })).toEqual([
      { reject: 'unparseable row: Invalid Opening Quote: a quote is found on field 1', line: 2, id: '1' },
      { doc: '2', text: 'ok', line: 3 },
    ]);
  });

  it('recovers after text following a closing quote once the quotes balance', async () => {
    const path = await csv('id,text\n1,"a "bad" quote"\n2,ok\n');
    const [first, second] = await readBrief({ path });
    expect(first).toMatchObject({ line: 2, id: '1' });
    expect(first && 'reject' in first && first.reject).toMatch(
      /^unparseable row: Invalid Closing Quote: got "b"/,
    );
    expect(second).toEqual({ doc: '2', text: 'ok', line: 3 });
  });

  it('leaves the id out of a reject when the id field itself is malformed', async () => {
    const path = await csv('id,text\nab"c,x\n2,ok\n');
    expect(await readBrief({ path })).toEqual([
      { reject: 'unparseable row: Invalid Opening Quote: a quote is found on field 0', line: 2 },
      { doc: '2', text: 'ok', line: 3 },
    ]);
  });

  it('names the lines an unbalanced quote swallowed, then goes on', async () => {
    const path = await csv('id,text\n1,"abc\n2,"ok"\n3,fine\n');
    const entries = await readBrief({ path });
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({ line: 2, id: '1' });
    expect(entries[0] && 'reject' in entries[0] && entries[0].reject).toMatch(
      /^unparseable row: Invalid Closing Quote: .*; the quote opened on line 2: lines 2-3 read as one field \(the row on line 3 is in this reject\)$/,
    );
    expect(entries[1]).toEqual({ doc: '3', text: 'fine', line: 4 });
  });

  it('rejects a quote left open at the end of the file as one record', async () => {
    const path = await csv('id,text\n0,before\n1,"abc\n2,ok\n3,fine\n');
    expect(await readBrief({ path })).toEqual([
      { doc: '0', text: 'before', line: 2 },
      {
        reject:
          'unparseable row: unterminated quote opened on line 3: lines 3-5 read as one field ' +
          '(the rows on lines 4-5 are in this reject); close the quote',
        line: 3,
        id: '1',
      },
    ]);
  });

  it('stops with a UsageError when a record outgrows maxEntryBytes', async () => {
    const path = await csv(`id,text\n1,ok\n2,"${'x'.repeat(200_000)}\n`);
    await expect(readAll({ path, maxEntryBytes: 100_000 })).rejects.toThrow(
      /a CSV record from line 3 on is larger than 100000 bytes/,
    );
  });
});

describe('CSV header', () => {
  it('throws a UsageError naming the missing field and listing the columns', async () => {
    const path = await csv('id,body,title\n1,x,y\n');
    const error = await readAll({ path }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe(
      `${path}: the CSV header has no "text" column (columns: "id", "body", "title"); ` +
        'pick the columns with --id-field and --text-field, e.g. --text-field body',
    );
  });

  it('names both fields when both are missing', async () => {
    const path = await csv('a,b\n1,2\n');
    await expect(readAll({ path })).rejects.toThrow(
      `${path}: the CSV header has no "id" or "text" column (columns: "a", "b"); ` +
        'pick the columns with --id-field and --text-field',
    );
  });

  it('fails at the header, before any row, guessing the columns from their names', async () => {
    const path = await csv('title,doc_id,body\nT,1,x\nU,2,y\n');
    const error = await readAll({ path }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe(
      `${path}: the CSV header has no "id" or "text" column (columns: "title", "doc_id", "body"); ` +
        'pick the columns with --id-field and --text-field, e.g. --id-field doc_id --text-field body',
    );
    expect(await readBrief({ path, idField: 'doc_id', textField: 'body' })).toHaveLength(2);
    // Another case of the name asked for is the first guess; a name with spaces is quoted.
    await expect(readAll({ path: await csv('ID,Page Content\n1,x\n') })).rejects.toThrow(
      /, e\.g\. --id-field ID --text-field 'Page Content'$/,
    );
  });

  it('names the flag of a missing image column', async () => {
    const path = await csv('id,text\n1,x\n');
    await expect(readAll({ path, imageField: 'picture' })).rejects.toThrow(
      `${path}: the CSV header has no "picture" column (columns: "id", "text"); pick the column with --image-field`,
    );
  });

  it('throws on a malformed header, an empty file, and a blank one', async () => {
    await expect(readAll({ path: await csv('id,"text\n1,x\n') })).rejects.toThrow(
      /CSV header row is malformed/,
    );
    await expect(readAll({ path: await csv('') })).rejects.toThrow(/has no header row/);
    await expect(readAll({ path: await csv('\uFEFF\n\n') })).rejects.toThrow(/has no header row/);
  });

  it('throws a UsageError for a header-only file (no documents in the input)', async () => {
    await expect(readAll({ path: await csv('id,text\n') })).rejects.toThrow(/no documents in the input/);
  });
});
