/**
 * The embedder with image chunks, against the emulator over HTTP: one block per chunk, floats,
 * a joint vector per block; an image changed or gone since planning fails its chunk only; a caption
 * over the budget is a reject at planning; image usage teaches the text calibration nothing.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readImageFile } from '../../src/corpus/images.js';
import type { Batch, Chunk, Document, ImageRef } from '../../src/domain.js';
import { embeddingFor } from '../../src/emulator/index.js';
import { multimodalText } from '../../src/emulator/vectors.js';
import { tempFolder } from '../corpus/helpers.js';
import { testEmbedder, useEmulatorClient } from '../helpers/embedder.js';
import { png } from '../helpers/images.js';
import { sizingFor } from '../helpers/sizing.js';

const MODEL = 'emu/vision-embed';
const root = await tempFolder();
const gateway = useEmulatorClient();

async function imageAt(name: string, bytes: Buffer): Promise<ImageRef> {
  const path = join(root, name);
  await writeFile(path, bytes);
  return (await readImageFile(path, name, 1e6)) as ImageRef;
}

const doc = (id: string, text: string, image: ImageRef): Document => ({
  id,
  text,
  source: id,
  line: 1,
  image,
});

describe('GatewayEmbedder with images', () => {
  it('sends one block per chunk as floats and stores the joint vector; a changed image fails alone', async () => {
    // A text envelope far below the gateway's count: a request's usage above its estimate would
    // refit it, if usage of images were taken as evidence about text.
    const sizing = sizingFor(MODEL, 1800, 0.01);
    const { instance: embedder } = testEmbedder(gateway.client, { model: MODEL, sizing });
    const a = png(2, 2, [1, 1, 1]);
    const b = png(2, 2, [2, 2, 2]);
    const chunks = [
      sizing.planImage(doc('a', 'first caption', await imageAt('a.png', a)), 85) as Chunk,
      sizing.planImage(doc('b', '', await imageAt('b.png', b)), 85) as Chunk,
      sizing.planImage(doc('c', 'changed', await imageAt('c.png', a)), 85) as Chunk,
      sizing.planImage(doc('d', 'gone', await imageAt('d.png', a)), 85) as Chunk,
    ];
    expect(chunks[0]!.tokens).toBe(1 + 85);
    await writeFile(join(root, 'c.png'), b);
    await rm(join(root, 'd.png'));
    const before = gateway.emulator.requests.length;
    const batch: Batch = { batchId: 'img', model: MODEL, chunks, tokens: 0 };
    const result = await embedder.embedBatch(batch, new AbortController().signal);

    const url = (bytes: Buffer) => `data:image/png;base64,${bytes.toString('base64')}`;
    expect(result.chunks.map((c) => c.documentId)).toEqual(['a', 'b']);
    expect(result.vectors[0]).toEqual(
      embeddingFor(
        MODEL,
        multimodalText([
          { type: 'text', text: 'first caption' },
          { type: 'image_url', image_url: { url: url(a) } },
        ]),
        512,
      ),
    );
    expect(result.vectors[1]).toEqual(
      embeddingFor(MODEL, multimodalText([{ type: 'image_url', image_url: { url: url(b) } }]), 512),
    );
    expect(result.failures).toEqual([
      {
        documentId: 'c',
        chunkIndex: 0,
        batchId: 'img',
        message: 'image c.png changed since it was planned; re-run to embed its new content',
      },
      {
        documentId: 'd',
        chunkIndex: 0,
        batchId: 'img',
        message: 'image d.png cannot be read any more (ENOENT); re-run to plan it again',
      },
    ]);
    const [request] = gateway.emulator.requests.slice(before);
    expect(request).toMatchObject({
      status: 200,
      inputs: 2,
      images: 2,
      encoding: 'float',
      tokens: 85 * 2 + 4,
    });
    // The images' usage taught the text calibration nothing.
    expect(sizing.calibration.epochs).toHaveLength(1);
  });

  it('rejects a caption that does not fit the chunk budget with its image', async () => {
    const sizing = sizingFor(MODEL, 100, 1);
    const image = await imageAt('e.png', png());
    expect(sizing.planImage(doc('e', 'x'.repeat(15), image), 85)).toMatchObject({ tokens: 100 });
    expect(sizing.planImage(doc('f', 'x'.repeat(16), image), 85)).toBe(
      "caption too long: about 101 tokens with its image, over the chunk budget of 100 (an image's document is one chunk, never split; shorten the caption)",
    );
  });
});
