/**
 * Images as a user meets them: the built CLI in a child process, the emulator over real HTTP, the
 * dataset read back by DuckDB and every vector compared with the emulator's vector of the very
 * block that was sent (caption + image as one joint embedding).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageContentHash } from '../../src/chunking/index.js';
import {
  EMULATOR_API_KEY,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { multimodalText } from '../../src/emulator/vectors.js';
import type { ContentPart } from '../../src/gateway/wire.js';
import { runCli } from '../helpers/cli.js';
import { query, sqlString } from '../helpers/duckdb.js';
import { GIF_1X1, JPEG_1X1, png } from '../helpers/images.js';
import { tempFolder } from '../helpers/temp.js';

const MODEL = 'emu/vision-embed'; // 512 dims, text + image
const DIMS = 512;

let emulator: RunningEmulator;
const root = await tempFolder('embedpipe-images-');

beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(async () => {
  await emulator.close();
});

const env = () => ({ EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY });
const sent = () => emulator.stats.byPath['/embeddings'] ?? 0;
const dataUrl = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString('base64')}`;
const sha = async (bytes: Buffer) =>
  (await import('node:crypto')).createHash('sha256').update(bytes).digest('hex');

/** The emulator's vector of one block: [text part,] image part. */
function blockVector(caption: string, url: string): Float32Array {
  const parts: ContentPart[] = [
    ...(caption ? [{ type: 'text' as const, text: caption }] : []),
    { type: 'image_url', image_url: { url } },
  ];
  return embeddingFor(MODEL, multimodalText(parts), DIMS);
}

interface Row {
  id: string;
  chunk_index: number;
  text: string;
  embedding: Float32Array;
  content_hash: string;
  image_source: string | null;
  image_sha256: string | null;
}

async function readRows(dir: string): Promise<Map<string, Row>> {
  const rows = await query(
    `SELECT id, chunk_index, text, embedding, content_hash, image_source, image_sha256
       FROM read_parquet(${sqlString(`${dir}/*.parquet`)}) ORDER BY id, chunk_index`,
  );
  return new Map(
    rows.map((r) => [
      r['id'] as string,
      {
        ...(r as unknown as Row),
        embedding: Float32Array.from(
          (r['embedding'] as { items: number[] }).items ?? (r['embedding'] as number[]),
        ),
      },
    ]),
  );
}

describe('a folder of images with captions', () => {
  const folder = () => join(root, 'photos');
  const cat = png(3, 2, [120, 120, 120]);
  const dog = JPEG_1X1;
  const plain = png(1, 1, [0, 0, 255]);

  beforeAll(async () => {
    await mkdir(join(folder(), 'pets'), { recursive: true });
    await writeFile(join(folder(), 'pets/cat.png'), cat);
    await writeFile(join(folder(), 'pets/cat.txt'), 'A grey cat asleep on a sofa.');
    await writeFile(join(folder(), 'pets/dog.jpg'), dog);
    await writeFile(join(folder(), 'pets/dog.txt'), 'A dog in the snow.');
    await writeFile(join(folder(), 'uncaptioned.png'), plain);
    await writeFile(join(folder(), 'broken.png'), png(16, 16).subarray(0, 60));
    await writeFile(join(folder(), 'empty.gif'), '');
    await writeFile(join(folder(), 'notes.md'), 'Shot list for the pets catalogue, spring edition.');
  });

  it('refuses a text-only model before any embedding request, naming the model and what it accepts', async () => {
    const before = sent();
    const out = join(root, 'refused');
    const result = await runCli(
      ['run', '--input', folder(), '--model', 'emu/embed-small', '--out', out],
      env(),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/model emu\/embed-small accepts text input only/);
    expect(result.stderr).toMatch(/--format text/);
    expect(sent()).toBe(before);
    await expect(readdir(out)).rejects.toThrow();
  });

  it('embeds one joint vector per image, sent as image parts with floats; rejects the corrupt and empty ones', async () => {
    const out = join(root, 'photos-out');
    const before = emulator.requests.length;
    const result = await runCli(
      ['run', '--input', folder(), '--model', MODEL, '--out', out, '--json'],
      env(),
    );
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ status: 'done', documents: 4, rejects: 2 });

    const rows = await readRows(out);
    expect([...rows.keys()]).toEqual(['notes.md', 'pets/cat.png', 'pets/dog.jpg', 'uncaptioned.png']);
    const expectations = [
      ['pets/cat.png', 'A grey cat asleep on a sofa.', cat, 'image/png'],
      ['pets/dog.jpg', 'A dog in the snow.', dog, 'image/jpeg'],
      ['uncaptioned.png', '', plain, 'image/png'],
    ] as const;
    for (const [id, caption, bytes, mime] of expectations) {
      const row = rows.get(id)!;
      expect(row).toMatchObject({
        chunk_index: 0,
        text: caption,
        image_source: id,
        image_sha256: await sha(bytes),
      });
      expect(row.embedding).toEqual(blockVector(caption, dataUrl(mime, bytes)));
      expect(row.content_hash).toBe(imageContentHash(MODEL, caption, { sha256: await sha(bytes) }));
    }
    // The notes are a text document: a plain string input, no image columns.
    const notes = rows.get('notes.md')!;
    expect(notes).toMatchObject({ image_source: null, image_sha256: null });
    expect(notes.embedding).toEqual(embeddingFor(MODEL, notes.text, DIMS));

    // On the wire: the three images went as image parts of float requests.
    const requests = emulator.requests
      .slice(before)
      .filter((r) => r.path === '/embeddings' && r.status === 200);
    const withImages = requests.filter((r) => (r.images ?? 0) > 0);
    expect(withImages.reduce((sum, r) => sum + r.images!, 0)).toBe(3);
    for (const request of withImages) expect(request.encoding).toBe('float');

    const rejects = (await readFile(join(out, '_rejects.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(rejects).toEqual([
      {
        file: 'broken.png',
        line: 1,
        id: 'broken.png',
        reason: 'corrupt PNG image: truncated (its IDAT chunk runs past the end of the file)',
      },
      { file: 'empty.gif', line: 1, id: 'empty.gif', reason: 'empty image (0 bytes)' },
    ]);
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
    expect(manifest.input).toMatchObject({ kind: 'folder', files: 8 });
    expect(manifest.plan.images).toEqual({ bytesPerRequest: 20 * 2 ** 20, tokensPerImage: 85 });

    // A second run sends nothing, and reads the same dataset.
    const again = sent();
    const second = await runCli(
      ['run', '--input', folder(), '--model', MODEL, '--out', out, '--json'],
      env(),
    );
    expect(second.code, second.stderr).toBe(0);
    expect(sent()).toBe(again);
    // Resumed batch by batch: the plan's batch ids are the same.
    const { batches } = JSON.parse(second.stdout);
    expect(batches.resumed).toBe(batches.planned);
    const dry = await runCli(
      ['run', '--input', folder(), '--model', MODEL, '--out', out, '--dry-run', '--json'],
      env(),
    );
    expect(JSON.parse(dry.stdout).toSend).toMatchObject({ chunks: 0, costUsd: '0.0000000000' });
    const reread = await readRows(out);
    expect([...reread.values()]).toEqual([...rows.values()]);

    // A changed caption and a renamed image: only the changed caption is sent again.
    await writeFile(join(folder(), 'uncaptioned.txt'), 'A blue square.');
    await writeFile(join(folder(), 'pets/kitty.png'), cat);
    await writeFile(join(folder(), 'pets/kitty.txt'), 'A grey cat asleep on a sofa.');
    const inputsBefore = emulator.stats.inputs;
    const third = await runCli(['run', '--input', folder(), '--model', MODEL, '--out', out], env());
    expect(third.code, third.stderr).toBe(0);
    expect(emulator.stats.inputs - inputsBefore).toBe(1);
    const after = await readRows(out);
    expect(after.get('uncaptioned.png')!.embedding).toEqual(
      blockVector('A blue square.', dataUrl('image/png', plain)),
    );
    expect(after.get('pets/kitty.png')!.embedding).toEqual(rows.get('pets/cat.png')!.embedding);
  });
});

describe('--image-field in JSONL', () => {
  it('sends a local path (as a data URL), a data URL and an http URL; a second run sends nothing', async () => {
    const folder = join(root, 'jsonl');
    await mkdir(join(folder, 'img'), { recursive: true });
    const local = png(2, 2, [9, 9, 9]);
    await writeFile(join(folder, 'img/local.png'), local);
    const inline = dataUrl('image/gif', GIF_1X1);
    const remote = 'https://images.example.com/product/42.jpg';
    const rows = [
      { id: 'p1', text: 'a local photo', image: 'img/local.png' },
      { id: 'p2', text: 'an inline gif', image: inline },
      { id: 'p3', text: 'a remote photo', image: remote },
      { id: 'p4', text: 'no photo at all' },
      { id: 'p5', text: 'a missing photo', image: 'img/missing.png' },
    ];
    const input = join(folder, 'products.jsonl');
    await writeFile(input, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
    const out = join(root, 'jsonl-out');
    const args = [
      'run',
      '--input',
      input,
      '--image-field',
      'image',
      '--model',
      MODEL,
      '--out',
      out,
      '--json',
    ];

    const result = await runCli(args, env());
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'done', documents: 4, rejects: 1 });
    const read = await readRows(out);
    expect(read.get('p1')).toMatchObject({ image_source: 'img/local.png', image_sha256: await sha(local) });
    expect(read.get('p1')!.embedding).toEqual(blockVector('a local photo', dataUrl('image/png', local)));
    expect(read.get('p2')).toMatchObject({
      image_source: 'data:image/gif;base64',
      image_sha256: await sha(GIF_1X1),
    });
    expect(read.get('p2')!.embedding).toEqual(blockVector('an inline gif', inline));
    expect(read.get('p3')).toMatchObject({ image_source: remote, image_sha256: null });
    expect(read.get('p3')!.embedding).toEqual(blockVector('a remote photo', remote));
    expect(read.get('p4')).toMatchObject({ image_source: null, image_sha256: null });
    expect(read.get('p4')!.embedding).toEqual(embeddingFor(MODEL, 'no photo at all', DIMS));
    const rejects = (await readFile(join(out, '_rejects.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rejects).toEqual([
      { file: input, line: 5, id: 'p5', reason: 'image img/missing.png: unreadable image (ENOENT)' },
    ]);

    const before = sent();
    const second = await runCli(args, env());
    expect(second.code, second.stderr).toBe(0);
    expect(sent()).toBe(before);
    expect(await readRows(out)).toEqual(read);
  });
});

describe('a text dataset that gains images', () => {
  it('switches to the image columns in every file of the new version, reusing the text vectors', async () => {
    const folder = join(root, 'gains');
    await mkdir(folder, { recursive: true });
    const photo = png(3, 3, [7, 7, 7]);
    await writeFile(join(folder, 'p.png'), photo);
    const rows = [
      { id: 'a', text: 'a text row that never has an image', image: '' },
      { id: 'b', text: 'this row gains a picture', image: 'p.png' },
    ];
    const input = join(folder, 'rows.jsonl');
    await writeFile(input, rows.map((r) => JSON.stringify(r)).join('\n'));
    const out = join(root, 'gains-out');
    const text = await runCli(['run', '--input', input, '--model', MODEL, '--out', out], env());
    expect(text.code, text.stderr).toBe(0);
    const columns = async () =>
      (await query(`DESCRIBE SELECT * FROM read_parquet(${sqlString(`${out}/*.parquet`)})`)).map(
        (r) => r['column_name'],
      );
    expect(await columns()).not.toContain('image_source');

    const inputsBefore = emulator.stats.inputs;
    const images = await runCli(
      ['run', '--input', input, '--image-field', 'image', '--model', MODEL, '--out', out],
      env(),
    );
    expect(images.code, images.stderr).toBe(0);
    // Only the row that gained an image was sent; the text row's vector was reused.
    expect(emulator.stats.inputs - inputsBefore).toBe(1);
    expect((await columns()).slice(-2)).toEqual(['image_source', 'image_sha256']);
    const read = await readRows(out);
    expect(read.get('a')).toMatchObject({ image_source: null });
    expect(read.get('a')!.embedding).toEqual(embeddingFor(MODEL, rows[0]!.text, DIMS));
    expect(read.get('b')!.embedding).toEqual(blockVector(rows[1]!.text, dataUrl('image/png', photo)));
  });
});
