import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectImage, parseDataUrl } from '../../src/corpus/images.js';
import { resolveCorpusFormat } from '../../src/corpus/index.js';
import type { CorpusEntry, ImageRef } from '../../src/domain.js';
import { UsageError } from '../../src/errors.js';
import { GIF_1X1, JPEG_1X1, png, WEBP_1X1 } from '../helpers/images.js';
import { put, readAll, readBrief, tempFolder } from './helpers.js';

const root = await tempFolder();
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** id → image ref (or the reject reason), text. */
function summary(entries: CorpusEntry[]) {
  return entries.map((entry) =>
    entry.kind === 'document'
      ? { doc: entry.document.id, text: entry.document.text, image: entry.document.image }
      : { reject: entry.reject.reason, file: entry.reject.file, id: entry.reject.id },
  );
}

describe('inspectImage', () => {
  it('knows PNG, JPEG, GIF and WebP by their bytes, with their size', () => {
    expect(inspectImage(png(3, 2))).toEqual({ mime: 'image/png', width: 3, height: 2 });
    expect(inspectImage(JPEG_1X1)).toEqual({ mime: 'image/jpeg', width: 1, height: 1 });
    expect(inspectImage(GIF_1X1)).toEqual({ mime: 'image/gif', width: 1, height: 1 });
    expect(inspectImage(WEBP_1X1)).toEqual({ mime: 'image/webp', width: 1, height: 1 });
  });

  it('names what is wrong: empty, another type, a truncated or damaged header', () => {
    const problem = (bytes: Uint8Array): { problem: string } | undefined => {
      const info = inspectImage(bytes);
      return 'problem' in info ? info : undefined;
    };
    expect(problem(Buffer.alloc(0))).toEqual({ problem: 'empty image (0 bytes)' });
    expect(problem(Buffer.from('<html>hello</html>'))).toEqual({
      problem: 'not a PNG, JPEG, GIF or WebP image (it starts with 3c 68 74 6d 6c 3e 68 65)',
    });
    const full = png(4, 4);
    expect(problem(full.subarray(0, 20))).toEqual({
      problem: 'corrupt PNG image: truncated header (no complete IHDR chunk)',
    });
    expect(problem(full.subarray(0, full.length - 20))?.problem).toMatch(
      /^corrupt PNG image: truncated \(its IDAT chunk runs past the end of the file\)$/,
    );
    expect(problem(full.subarray(0, full.length - 12))?.problem).toBe(
      'corrupt PNG image: truncated (the file ends before its IEND chunk)',
    );
    expect(problem(JPEG_1X1.subarray(0, 60))?.problem).toMatch(/^corrupt JPEG image: truncated header/);
    expect(problem(Buffer.from([0xff, 0xd8, 0xff, 0xd9]))?.problem).toBe(
      'corrupt JPEG image: it ends before any image data',
    );
    expect(problem(GIF_1X1.subarray(0, 12))?.problem).toBe('corrupt GIF image: truncated header');
    expect(problem(WEBP_1X1.subarray(0, 30))?.problem).toBe(
      'corrupt WebP image: truncated (its RIFF header says 34 bytes, the file has 30)',
    );
  });
});

describe('parseDataUrl', () => {
  it('decodes and checks a data URL, and sends it with the type its bytes have', () => {
    const bytes = png(2, 2);
    const declaredJpeg = `data:image/jpeg;base64,${bytes.toString('base64')}`;
    const ref = parseDataUrl(declaredJpeg, 1_000_000) as ImageRef;
    expect(ref).toEqual({
      kind: 'data',
      source: 'data:image/png;base64',
      url: `data:image/png;base64,${bytes.toString('base64')}`,
      mime: 'image/png',
      bytes: bytes.length,
      sha256: sha(bytes),
      urlBytes: `data:image/png;base64,${bytes.toString('base64')}`.length,
    });
  });

  it('rejects what is not a base64 image of a supported type, empty or too large', () => {
    const b64 = png().toString('base64');
    expect(parseDataUrl(`data:image/png,${b64}`, 1e6)).toBe(
      'invalid data URL: not base64 (data:<type>;base64,<data>)',
    );
    expect(parseDataUrl(`data:image/svg+xml;base64,${b64}`, 1e6)).toMatch(
      /^invalid data URL: type "image\/svg\+xml"/,
    );
    expect(parseDataUrl('data:image/png;base64,not base64!', 1e6)).toBe(
      'invalid data URL: its data is not valid base64',
    );
    expect(parseDataUrl('data:image/png;base64,', 1e6)).toBe('empty image (0 bytes)');
    expect(parseDataUrl(`data:image/png;base64,${b64}`, 10)).toMatch(
      /^image too large: \d+ bytes \(limit 10/,
    );
    expect(parseDataUrl(`data:image/png;base64,${Buffer.from('hello').toString('base64')}`, 1e6)).toMatch(
      /^not a PNG, JPEG, GIF or WebP image/,
    );
  });
});

describe('folders of images', () => {
  it('reads each image with its sidecar caption as one document; other text files are documents too', async () => {
    const folder = join(root, 'photos');
    const cat = png(2, 2, [1, 2, 3]);
    await put(folder, 'cat.png', cat);
    await put(folder, 'cat.txt', 'A grey cat.\n');
    // A JPEG named .png: its type comes from its bytes.
    await put(folder, 'sub/dog.png', JPEG_1X1);
    await put(folder, 'sub/dog.txt', 'A dog');
    await put(folder, 'sub/bird.webp', WEBP_1X1);
    await put(folder, 'notes.md', 'Notes about the shoot.');
    await put(folder, '.hidden.png', cat);
    const entries = await readAll({ path: folder });
    expect(summary(entries)).toEqual([
      {
        doc: 'cat.png',
        text: 'A grey cat.\n',
        image: {
          kind: 'file',
          source: 'cat.png',
          path: join(folder, 'cat.png'),
          mime: 'image/png',
          bytes: cat.length,
          sha256: sha(cat),
          urlBytes: `data:image/png;base64,${cat.toString('base64')}`.length,
        },
      },
      { doc: 'notes.md', text: 'Notes about the shoot.', image: undefined },
      {
        doc: 'sub/bird.webp',
        text: '',
        image: expect.objectContaining({ kind: 'file', source: 'sub/bird.webp', mime: 'image/webp' }),
      },
      {
        doc: 'sub/dog.png',
        text: 'A dog',
        image: expect.objectContaining({ source: 'sub/dog.png', mime: 'image/jpeg', sha256: sha(JPEG_1X1) }),
      },
    ]);
    expect(resolveCorpusFormat({ path: folder })).toBe('images');
    // Asked for text, the folder is read as text: the captions are documents, the images are not.
    expect((await readBrief({ path: folder, format: 'text' })).map((e) => ('doc' in e ? e.doc : e))).toEqual([
      'cat.txt',
      'notes.md',
      'sub/dog.txt',
    ]);
  });

  it('rejects an empty, corrupt, oversized or unreadable image, and an undecodable caption; keeps the rest', async () => {
    const folder = join(root, 'bad');
    await put(folder, 'a-good.gif', GIF_1X1);
    await put(folder, 'b-empty.png', '');
    await put(folder, 'c-corrupt.png', png(8, 8).subarray(0, 50));
    await put(folder, 'd-text.jpg', 'just some text');
    await put(folder, 'e-big.png', png(64, 64));
    await put(folder, 'f-caption.png', png());
    await put(folder, 'f-caption.txt', Buffer.from([0x63, 0x61, 0xe9]));
    const entries = await readAll({ path: folder, maxImageBytes: 120 });
    expect(summary(entries)).toEqual([
      { doc: 'a-good.gif', text: '', image: expect.objectContaining({ mime: 'image/gif' }) },
      { reject: 'empty image (0 bytes)', file: 'b-empty.png', id: 'b-empty.png' },
      {
        reject: 'corrupt PNG image: truncated (its IDAT chunk runs past the end of the file)',
        file: 'c-corrupt.png',
        id: 'c-corrupt.png',
      },
      {
        reject: 'not a PNG, JPEG, GIF or WebP image (it starts with 6a 75 73 74 20 73 6f 6d)',
        file: 'd-text.jpg',
        id: 'd-text.jpg',
      },
      {
        reject: expect.stringMatching(/^image too large: \d+ bytes \(limit 120, --max-image-bytes\)$/),
        file: 'e-big.png',
        id: 'e-big.png',
      },
      {
        reject:
          'caption f-caption.txt: invalid UTF-8 (byte 0xE9 at offset 2); it reads as windows-1252: pass --encoding windows-1252',
        file: 'f-caption.png',
        id: 'f-caption.png',
      },
    ]);
  });

  it('reads a single image file with the caption beside it', async () => {
    const folder = join(root, 'single');
    const path = await put(folder, 'one.png', png());
    await put(folder, 'one.txt', 'only one');
    expect(summary(await readAll({ path }))).toEqual([
      { doc: 'one.png', text: 'only one', image: expect.objectContaining({ source: path }) },
    ]);
  });

  it('refuses --format images on a folder with no image, and --image-field on a folder', async () => {
    const folder = join(root, 'textonly');
    await put(folder, 'a.txt', 'a');
    expect(resolveCorpusFormat({ path: folder })).toBe('text');
    await expect(readAll({ path: folder, format: 'images' })).rejects.toThrow(
      /no \.png, \.jpg, .* images in folder/,
    );
    expect(() => resolveCorpusFormat({ path: folder, imageField: 'img' })).toThrow(UsageError);
    const csv = await put(root, 'x.csv', 'id,text\n');
    expect(() => resolveCorpusFormat({ path: csv, format: 'images' })).toThrow(
      /--format images reads a folder/,
    );
  });
});

describe('--image-field in JSONL and CSV', () => {
  it('takes a path relative to the file, a data URL and an http URL; an empty field is a text row', async () => {
    const folder = join(root, 'jsonl');
    const pic = png(2, 1);
    await put(folder, 'img/pic.png', pic);
    await put(folder, 'img/broken.png', 'nope');
    const dataUrl = `data:image/gif;base64,${GIF_1X1.toString('base64')}`;
    const rows = [
      { id: 'local', text: 'a local picture', image: 'img/pic.png' },
      { id: 'inline', image: dataUrl },
      { id: 'remote', text: 'remote', image: 'https://example.com/a.png' },
      { id: 'plain', text: 'no image here', image: null },
      { id: 'missing', text: 'x', image: 'img/nope.png' },
      { id: 'broken', text: 'x', image: 'img/broken.png' },
      { id: 'ftp', text: 'x', image: 'ftp://example.com/a.png' },
      { id: 'number', text: 'x', image: 7 },
      { id: 'local', text: 'duplicate id', image: 'img/pic.png' },
    ];
    const path = await put(folder, 'rows.jsonl', rows.map((r) => JSON.stringify(r)).join('\n'));
    const entries = await readAll({ path, imageField: 'image' });
    expect(summary(entries)).toEqual([
      {
        doc: 'local',
        text: 'a local picture',
        image: expect.objectContaining({
          kind: 'file',
          source: 'img/pic.png',
          path: join(folder, 'img/pic.png'),
          sha256: sha(pic),
        }),
      },
      {
        doc: 'inline',
        text: '',
        image: expect.objectContaining({ kind: 'data', source: 'data:image/gif;base64', url: dataUrl }),
      },
      {
        doc: 'remote',
        text: 'remote',
        image: {
          kind: 'url',
          source: 'https://example.com/a.png',
          url: 'https://example.com/a.png',
          urlBytes: 25,
        },
      },
      { doc: 'plain', text: 'no image here', image: undefined },
      { reject: 'image img/nope.png: unreadable image (ENOENT)', file: path, id: 'missing' },
      {
        reject: 'image img/broken.png: not a PNG, JPEG, GIF or WebP image (it starts with 6e 6f 70 65)',
        file: path,
        id: 'broken',
      },
      {
        reject:
          'image ftp://example.com/a.png: unsupported URL scheme ftp: (an image is an http(s) URL, a data URL or a local path)',
        file: path,
        id: 'ftp',
      },
      { reject: 'non-string image (number)', file: path, id: 'number' },
      { reject: `duplicate id (first seen at ${path}:1)`, file: path, id: 'local' },
    ]);
  });

  it('reads an image column of a CSV (an empty cell: a text row), and names a missing column', async () => {
    const folder = join(root, 'csv');
    await put(folder, 'p.jpg', JPEG_1X1);
    const path = await put(folder, 'rows.csv', 'id,text,photo\na,,p.jpg\nb,just text,\nc,,\n');
    expect(summary(await readAll({ path, imageField: 'photo' }))).toEqual([
      { doc: 'a', text: '', image: expect.objectContaining({ source: 'p.jpg', mime: 'image/jpeg' }) },
      { doc: 'b', text: 'just text', image: undefined },
      { reject: 'empty text', file: path, id: 'c' },
    ]);
    await expect(readAll({ path, imageField: 'picture' })).rejects.toThrow(/has no "picture" column/);
  });
});
