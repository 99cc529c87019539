import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { PIECE_ENTRIES } from '../../src/corpus/entries.js';
import { CorpusStats, detectFormat, openCorpus } from '../../src/corpus/index.js';
import { UsageError } from '../../src/errors.js';
import { put, readAll, tempFolder } from './helpers.js';

const root = await tempFolder();
const file = { isDirectory: () => false };

describe('detectFormat', () => {
  it('maps extensions (any case) and folders to formats', () => {
    expect(detectFormat('a/b.csv', file)).toBe('csv');
    expect(detectFormat('B.CSV', file)).toBe('csv');
    expect(detectFormat('x.jsonl', file)).toBe('jsonl');
    expect(detectFormat('x.ndjson', file)).toBe('jsonl');
    expect(detectFormat('notes.txt', file)).toBe('text');
    expect(detectFormat('README.md', file)).toBe('text');
    expect(detectFormat('corpus', { isDirectory: () => true })).toBe('text');
  });

  it('asks for --format when the extension says nothing', () => {
    for (const path of ['data.json', 'data.tsv', 'data']) {
      expect(() => detectFormat(path, file)).toThrow(UsageError);
      expect(() => detectFormat(path, file)).toThrow(/pass --format csv, --format jsonl or --format text/);
    }
  });
});

describe('openCorpus', () => {
  it('throws a UsageError for a missing input, on the first step', async () => {
    const path = join(root, 'nope.csv');
    const entries = openCorpus({ path, idField: 'id', textField: 'text' });
    await expect(readAll({ path })).rejects.toThrow(new UsageError(`input not found: ${path}`));
    await expect(entries[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(UsageError);
  });

  it('refuses a folder for csv or jsonl, and an unknown extension', async () => {
    const folder = join(root, 'folder');
    await mkdir(folder);
    await expect(readAll({ path: folder, format: 'csv' })).rejects.toThrow(
      `${folder} is a folder: --format csv needs a file`,
    );
    await expect(readAll({ path: await put(root, 'x.json', '{}') })).rejects.toThrow(/pass --format/);
  });

  it('lets --format override the extension', async () => {
    const path = await put(root, 'data.json', '{"id":"1","text":"t"}\n');
    expect(await readAll({ path, format: 'jsonl' })).toHaveLength(1);
    const notes = await put(root, 'notes.rst', 'plain text');
    expect(await readAll({ path: notes, format: 'text' })).toEqual([
      { kind: 'document', document: { id: 'notes.rst', text: 'plain text', source: notes, line: 1 } },
    ]);
  });

  it('throws a UsageError for a folder given a file format', async () => {
    const path = join(root, 'folder.csv');
    await mkdir(path, { recursive: true });
    await expect(readAll({ path, format: 'csv' })).rejects.toThrow(
      `${path} is a folder: --format csv needs a file`,
    );
  });

  it('counts documents, rejects and bytes in the stats object', async () => {
    const content = 'id,text\n1,a\n2,\n3,c\n';
    const path = await put(root, 'stats.csv', `\uFEFF${content}`);
    const stats = new CorpusStats();
    await readAll({ path, stats });
    expect(stats).toMatchObject({
      documents: 2,
      rejects: 1,
      bytesRead: content.length + 3,
      totalBytes: content.length + 3,
    });

    const folder = join(root, 'stats-folder');
    await put(folder, 'a.txt', 'aaaa');
    await put(folder, 'b/c.md', 'cc');
    const folderStats = new CorpusStats();
    await readAll({ path: folder, stats: folderStats });
    expect(folderStats).toMatchObject({ documents: 2, rejects: 0, bytesRead: 6, totalBytes: 6 });
  });

  it('gives the sha256 of a CSV or JSONL file read to its end (BOM and all), and none otherwise', async () => {
    const digest = (bytes: string | Uint8Array) => createHash('sha256').update(bytes).digest('hex');
    const jsonl = '\uFEFF{"id":"1","text":"漢字 👩‍👩‍👧"}\r\n{"id":"2","text":"مرحبا"}\n';
    const csv = 'id,text\r\n1,"a ""quoted""\r\nline"\r\n2,b,an extra field\r\n3,e\u0301\r\n';
    for (const [name, content] of [
      ['whole.jsonl', jsonl],
      // The extra field stops the fast read: the exact read reads the file again from its start.
      ['whole.csv', csv],
    ] as const) {
      const stats = new CorpusStats();
      const path = await put(root, name, content);
      await readAll({ path, stats, digest: true });
      expect(stats.wholeRead).toEqual({ sha256: digest(content), bytes: Buffer.byteLength(content) });
      // Only when asked: a dry run or a producer writes no manifest.
      const unasked = new CorpusStats();
      await readAll({ path, stats: unasked });
      expect(unasked.wholeRead).toBeUndefined();
    }
    const gz = await put(root, 'whole.jsonl.gz', gzipSync(jsonl));
    const gzStats = new CorpusStats();
    await readAll({ path: gz, stats: gzStats, format: 'jsonl', digest: true });
    expect(gzStats.wholeRead?.sha256).toBe(digest(await readFile(gz)));

    const folder = join(root, 'whole-folder');
    await put(folder, 'a.txt', 'aaaa');
    const folderStats = new CorpusStats();
    await readAll({ path: folder, stats: folderStats, digest: true });
    expect(folderStats.wholeRead).toBeUndefined();

    const lines = Array.from({ length: 50_000 }, (_, i) => `{"id":"${i}","text":"t ${i}"}`).join('\n');
    const long = await put(root, 'whole-early.jsonl', lines);
    const early = new CorpusStats();
    for await (const entry of openCorpus({
      path: long,
      idField: 'id',
      textField: 'text',
      stats: early,
      digest: true,
    })) {
      if (entry.kind === 'document') break;
    }
    expect(early.wholeRead).toBeUndefined();
  });

  it('detects duplicates per call, not across calls', async () => {
    const path = await put(root, 'twice.jsonl', '{"id":"1","text":"t"}\n');
    expect(await readAll({ path })).toHaveLength(1);
    expect((await readAll({ path }))[0]?.kind).toBe('document');
  });

  it('stops reading when the consumer stops early', async () => {
    const lines = Array.from({ length: 50_000 }, (_, i) => `${i},text ${i}`).join('\n');
    const path = await put(root, 'early.csv', `id,text\n${lines}\n`);
    const stats = new CorpusStats();
    for await (const entry of openCorpus({ path, idField: 'id', textField: 'text', stats })) {
      if (entry.kind === 'document' && entry.document.id === '10') break;
    }
    // Counted a piece at a time: the piece holding the eleventh document, no more.
    expect(stats.documents).toBeGreaterThanOrEqual(11);
    expect(stats.documents).toBeLessThanOrEqual(PIECE_ENTRIES);
    expect(stats.bytesRead).toBeLessThan(stats.totalBytes ?? 0);
  });
});
