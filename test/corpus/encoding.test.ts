/**
 * Text that is not UTF-8: under the default each file, line or field is a reject naming the bad byte
 * and the --encoding that reads it; with --encoding, Latin-1 files (and CSV/JSONL rows) are read,
 * UTF-8 text beside them still as UTF-8.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { bytes, put, readAll, readBrief, tempFolder } from './helpers.js';

const root = await tempFolder();
const latin1 = (text: string) => Buffer.from(text, 'latin1');
const utf16le = (text: string) => Buffer.from(text, 'utf16le');

describe('a text folder with Latin-1 files', () => {
  it('rejects them under the default, naming the byte, its offset and the --encoding to pass', async () => {
    const folder = join(root, 'default');
    await put(folder, 'a.txt', latin1('Crème brûlée'));
    await put(folder, 'b.txt', 'plain UTF-8: naïve');
    expect(await readBrief({ path: folder })).toEqual([
      {
        reject:
          'invalid UTF-8 (byte 0xE8 at offset 2); it reads as windows-1252: pass --encoding windows-1252',
        line: 1,
        id: 'a.txt',
      },
      { doc: 'b.txt', text: 'plain UTF-8: naïve', line: 1 },
    ]);
  });

  it('reads them with --encoding latin1 (windows-1252), and UTF-8 files beside them as UTF-8', async () => {
    const folder = join(root, 'latin1');
    await put(folder, 'a.txt', latin1('Crème brûlée'));
    // 0x80 and 0x93/0x94 are windows-1252's euro sign and curly quotes (C1 controls in ISO-8859-1).
    await put(folder, 'b.txt', bytes([0x80], ' 5 ', [0x93], 'prix', [0x94]));
    await put(folder, 'c.txt', 'déjà UTF-8');
    for (const encoding of ['latin1', 'iso-8859-1', 'windows-1252']) {
      expect(await readBrief({ path: folder, encoding })).toEqual([
        { doc: 'a.txt', text: 'Crème brûlée', line: 1 },
        { doc: 'b.txt', text: '€ 5 “prix”', line: 1 },
        { doc: 'c.txt', text: 'déjà UTF-8', line: 1 },
      ]);
    }
  });

  it('maps all of windows-1252 0x80-0x9F (Node decodes them as C1 controls: nodejs/node#60888)', async () => {
    const path = await put(root, 'high.txt', Buffer.from(Array.from({ length: 32 }, (_, i) => 0x80 + i)));
    // The five bytes windows-1252 leaves unassigned (81, 8D, 8F, 90, 9D) stay C1 controls, as WHATWG says.
    expect(await readBrief({ path, encoding: 'latin1' })).toEqual([
      { doc: 'high.txt', text: '€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008DŽ\u008F\u0090‘’“”•–—˜™š›œ\u009DžŸ', line: 1 },
    ]);
  });

  it('reads UTF-16LE files with --encoding utf-16le, and suggests it for one with a byte order mark', async () => {
    const folder = join(root, 'utf16');
    await put(folder, 'bom.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), utf16le('with BOM é')]));
    await put(folder, 'plain.txt', utf16le('no BOM ü'));
    expect(await readBrief({ path: folder, encoding: 'utf-16le' })).toEqual([
      { doc: 'bom.txt', text: 'with BOM é', line: 1 },
      { doc: 'plain.txt', text: 'no BOM ü', line: 1 },
    ]);
    const [bom] = await readBrief({ path: join(folder, 'bom.txt') });
    expect(bom).toEqual({
      reject: 'invalid UTF-8 (byte 0xFF at offset 0); it reads as utf-16le: pass --encoding utf-16le',
      line: 1,
      id: 'bom.txt',
    });
  });

  it('rejects a file the --encoding cannot read either, and goes on', async () => {
    const folder = join(root, 'neither');
    // 0xA5 is unassigned in ISO-8859-3.
    await put(folder, 'a.txt', latin1('x\u00a5y'));
    await put(folder, 'b.txt', latin1('ok ü'));
    expect(await readBrief({ path: folder, encoding: 'iso-8859-3' })).toEqual([
      { reject: 'invalid UTF-8 (byte 0xA5 at offset 1) and invalid iso-8859-3', line: 1, id: 'a.txt' },
      { doc: 'b.txt', text: 'ok ü', line: 1 },
    ]);
  });
});

describe('CSV and JSONL files in Latin-1', () => {
  it('reject the row under the default, naming the field or the line; --encoding reads them', async () => {
    const csv = await put(root, 'latin1.csv', Buffer.concat([latin1('id,text\n1,Crème\n2,ok\n')]));
    expect(await readBrief({ path: csv })).toEqual([
      {
        reject:
          'invalid UTF-8 (byte 0xE8 at offset 2 of field "text"); it reads as windows-1252: pass --encoding windows-1252',
        line: 2,
        id: '1',
      },
      { doc: '2', text: 'ok', line: 3 },
    ]);
    expect(await readBrief({ path: csv, encoding: 'latin1' })).toEqual([
      { doc: '1', text: 'Crème', line: 2 },
      { doc: '2', text: 'ok', line: 3 },
    ]);

    const jsonl = await put(root, 'latin1.jsonl', latin1('{"id": "1", "text": "Crème"}\n'));
    expect(await readBrief({ path: jsonl })).toEqual([
      {
        reject:
          'invalid UTF-8 (byte 0xE8 at offset 23 of the line); it reads as windows-1252: pass --encoding windows-1252',
        line: 1,
      },
    ]);
    expect(await readBrief({ path: jsonl, encoding: 'windows-1252' })).toEqual([
      { doc: '1', text: 'Crème', line: 1 },
    ]);
  });

  it('stop at a header row that is not UTF-8, naming the column and the --encoding', async () => {
    const path = await put(root, 'header.csv', latin1('id,texte_été\n1,x\n'));
    await expect(readAll({ path, textField: 'texte_été' })).rejects.toThrow(
      `${path}: the CSV header row cannot be read: invalid UTF-8 (byte 0xE9 at offset 6 of column 2); ` +
        'it reads as windows-1252: pass --encoding windows-1252',
    );
    expect(await readBrief({ path, textField: 'texte_été', encoding: 'latin1' })).toEqual([
      { doc: '1', text: 'x', line: 2 },
    ]);
  });

  it('are refused in UTF-16 (rows are split as bytes), and an unknown label is refused', async () => {
    const path = await put(root, 'wide.csv', utf16le('id,text\n1,x\n'));
    const error = await readAll({ path, encoding: 'utf-16le' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(
      /^--encoding utf-16le reads text files only: a CSV file must be/,
    );
    await expect(readAll({ path, encoding: 'klingon' })).rejects.toThrow(/unknown encoding "klingon"/);
  });
});
