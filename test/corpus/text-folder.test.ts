import { execFileSync } from 'node:child_process';
import { mkdir, realpath, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PIECE_ENTRIES } from '../../src/corpus/entries.js';
import { CorpusStats } from '../../src/corpus/index.js';
import { UsageError } from '../../src/errors.js';
import { SYNC_READ_BYTES } from '../../src/files/sync-read.js';
import { bytes, put, readAll, readBrief, tempFolder } from './helpers.js';

const root = await tempFolder();

describe('text folders', () => {
  it('walks recursively, sorted by code points, ids are relative paths with /', async () => {
    const folder = join(root, 'walk');
    const names = ['b.txt', 'a/z.md', 'a-c.txt', 'A.TXT', 'é.txt', '😀.txt', '\uE000.txt', 'a/b/deep.md'];
    for (const name of names) await put(folder, name, `text of ${name}`);
    await put(folder, 'notes.pdf', 'not text');
    await put(folder, 'a/data.csv', 'id,text\n');
    const ids = (await readBrief({ path: folder })).map((entry) => ('doc' in entry ? entry.doc : entry));
    // '-' (U+2D) < '/' (U+2F); U+E000 < U+1F600 although JS string order says otherwise.
    expect(ids).toEqual([
      'A.TXT',
      'a-c.txt',
      'a/b/deep.md',
      'a/z.md',
      'b.txt',
      'é.txt',
      '\uE000.txt',
      '😀.txt',
    ]);
  });

  it('gives each document its relative path as source, line 1, and its exact text', async () => {
    const folder = join(root, 'exact');
    await put(folder, 'sub/doc.md', '# Title\r\n\r\n  body with 日本語 and 🎉 and e\u0301\n');
    const [entry] = await readAll({ path: folder });
    expect(entry).toEqual({
      kind: 'document',
      document: {
        id: 'sub/doc.md',
        text: '# Title\r\n\r\n  body with 日本語 and 🎉 and e\u0301\n',
        source: 'sub/doc.md',
        line: 1,
      },
    });
  });

  it('skips hidden files and folders', async () => {
    const folder = join(root, 'hidden');
    await put(folder, 'visible.txt', 'v');
    await put(folder, '.hidden.txt', 'h');
    await put(folder, '.git/HEAD.txt', 'h');
    expect(await readBrief({ path: folder })).toEqual([{ doc: 'visible.txt', text: 'v', line: 1 }]);
  });

  it('rejects invalid UTF-8, empty and whitespace-only files, and strips a BOM', async () => {
    const folder = join(root, 'rejects');
    await put(folder, '1-bad.txt', bytes('caf', [0xe9], ' au lait'));
    await put(folder, '2-empty.txt', '');
    await put(folder, '3-blank.md', ' \n\t\r\n');
    await put(folder, '4-bom.txt', '\uFEFFwith bom');
    await put(folder, '5-bom-only.txt', '\uFEFF');
    expect(await readBrief({ path: folder })).toEqual([
      {
        reject:
          'invalid UTF-8 (byte 0xE9 at offset 3); it reads as windows-1252: pass --encoding windows-1252',
        line: 1,
        id: '1-bad.txt',
      },
      { reject: 'empty text', line: 1, id: '2-empty.txt' },
      { reject: 'whitespace-only text', line: 1, id: '3-blank.md' },
      { doc: '4-bom.txt', text: 'with bom', line: 1 },
      { reject: 'empty text', line: 1, id: '5-bom-only.txt' },
    ]);
  });

  it('follows symlinks inside the folder, not loops, and reports dangling links to text files', async () => {
    const folder = join(root, 'links');
    const outside = join(root, 'outside');
    await put(outside, 'shared.txt', 'shared');
    await put(folder, 'real/doc.txt', 'doc');
    await symlink(join(folder, 'real'), join(folder, 'real/loop'));
    await symlink(join(folder, 'real/doc.txt'), join(folder, 'alias.txt'));
    await symlink(join(outside, 'shared.txt'), join(folder, 'linked.txt'));
    await symlink(outside, join(folder, 'elsewhere'));
    await symlink(join(folder, 'missing.txt'), join(folder, 'dangling.txt'));
    const outsideReal = await realpath(outside);
    expect(await readBrief({ path: folder })).toEqual([
      { doc: 'alias.txt', text: 'doc', line: 1 },
      { reject: 'unreadable file (ENOENT)', line: 1, id: 'dangling.txt' },
      {
        reject: `symlink to ${outsideReal}, outside the input folder: skipped (pass --follow-symlinks to follow it)`,
        line: 1,
      },
      {
        reject: `symlink to ${join(outsideReal, 'shared.txt')}, outside the input folder: skipped (pass --follow-symlinks to follow it)`,
        line: 1,
        id: 'linked.txt',
      },
      { doc: 'real/doc.txt', text: 'doc', line: 1 },
    ]);
    // With followSymlinks, links out of the folder are read like any other.
    expect(await readBrief({ path: folder, followSymlinks: true })).toEqual([
      { doc: 'alias.txt', text: 'doc', line: 1 },
      { reject: 'unreadable file (ENOENT)', line: 1, id: 'dangling.txt' },
      { doc: 'elsewhere/shared.txt', text: 'shared', line: 1 },
      { doc: 'linked.txt', text: 'shared', line: 1 },
      { doc: 'real/doc.txt', text: 'doc', line: 1 },
    ]);
  });

  it('rejects a FIFO by name and never blocks on it', async () => {
    const folder = join(root, 'fifo');
    await put(folder, 'a.txt', 'alpha');
    execFileSync('mkfifo', [join(folder, 'pipe.txt')]);
    execFileSync('mkfifo', [join(folder, 'other')]);
    expect(await readBrief({ path: folder })).toEqual([
      { doc: 'a.txt', text: 'alpha', line: 1 },
      { reject: 'not a regular file (a FIFO): skipped', line: 1, id: 'other' },
      { reject: 'not a regular file (a FIFO): skipped', line: 1, id: 'pipe.txt' },
    ]);
  });

  it('reads a single .txt/.md file as one document named by its base name', async () => {
    const path = await put(root, 'single/readme.md', 'hello');
    expect(await readAll({ path })).toEqual([
      { kind: 'document', document: { id: 'readme.md', text: 'hello', source: path, line: 1 } },
    ]);
  });

  it('throws a UsageError for a folder without .txt/.md files', async () => {
    const empty = join(root, 'empty');
    await mkdir(empty);
    await expect(readAll({ path: empty })).rejects.toThrow(
      new UsageError(`no .txt or .md files in folder ${empty}`),
    );
    const other = join(root, 'other');
    await put(other, 'a.csv', 'id,text\n');
    await put(other, '.hidden.txt', 'x');
    await expect(readAll({ path: other })).rejects.toThrow(/no \.txt or \.md files/);
  });

  it('rejects a file larger than maxEntryBytes without reading it', async () => {
    const folder = join(root, 'large');
    await put(folder, 'big.txt', 'x'.repeat(2000));
    await put(folder, 'small.txt', 'y');
    expect(await readBrief({ path: folder, maxEntryBytes: 1000 })).toEqual([
      { reject: 'too large: 2000 bytes (limit 1000)', line: 1, id: 'big.txt' },
      { doc: 'small.txt', text: 'y', line: 1 },
    ]);
  });

  it('reads small files in one call and large ones through the pool, the same texts and bytes either way', async () => {
    const folder = join(root, 'sizes');
    const large = `${'長い文 😀 '.repeat(Math.ceil(SYNC_READ_BYTES / 10))}end`;
    await put(folder, 'large.txt', large);
    const names = Array.from(
      { length: 2 * PIECE_ENTRIES + 3 },
      (_, i) => `s${String(i).padStart(4, '0')}.md`,
    );
    for (const name of names) await put(folder, name, `small ${name}\r\n`);
    const stats = new CorpusStats();
    const entries = await readBrief({ path: folder, stats });
    expect(Buffer.byteLength(large)).toBeGreaterThan(SYNC_READ_BYTES);
    expect(entries[0]).toEqual({ doc: 'large.txt', text: large, line: 1 });
    expect(entries.slice(1)).toEqual(
      names.map((name) => ({ doc: name, text: `small ${name}\r\n`, line: 1 })),
    );
    expect(stats.bytesRead).toBe(stats.totalBytes);
  });
});
