import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GatewayClient } from '../../src/gateway/client.js';
import { InvalidResponseError } from '../../src/gateway/errors.js';
import type { EmbeddingItemWire, MultimodalBlock } from '../../src/gateway/wire.js';
import { type ScriptedServer, startScriptedServer } from './scripted-server.js';

let server: ScriptedServer;
let client: GatewayClient;

beforeAll(async () => {
  server = await startScriptedServer();
  client = new GatewayClient({ baseUrl: server.baseUrl, apiKey: 'sk-embeddings-test-key' });
});
afterAll(async () => {
  await client.close();
  await server.close();
});
afterEach(() => {
  server.requests.length = 0;
});

function base64Of(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString('base64');
}

function embed(
  data: unknown,
  input: string | string[] = ['a', 'b', 'c'],
  extra: Record<string, unknown> = {},
) {
  server.reply({ body: { object: 'list', data, ...extra } });
  return client.embeddings({ model: 'emu/embed-small', input });
}

async function invalid(data: unknown, input?: string | string[]): Promise<InvalidResponseError> {
  const error = await embed(data, input).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidResponseError);
  expect((error as InvalidResponseError).retryable).toBe(true);
  return error as InvalidResponseError;
}

const v = (...values: number[]) => ({ embedding: values });

describe('embeddings: decoding', () => {
  it('decodes float arrays into Float32Arrays, one per input', async () => {
    const result = await embed([v(1, 2), v(3, 4), v(5, 6)], undefined, {
      id: 'gen-1',
      model: 'upstream/embed-small-v2',
      provider: 'Acme',
      usage: { prompt_tokens: 7, total_tokens: 7, cost: 0.00001 },
    });
    expect(result.vectors).toHaveLength(3);
    expect(result.vectors[0]).toBeInstanceOf(Float32Array);
    expect(result.vectors.map((x) => Array.from(x))).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    expect(result).toMatchObject({
      dims: 2,
      encoding: 'float',
      id: 'gen-1',
      model: 'upstream/embed-small-v2',
      provider: 'Acme',
      usage: { promptTokens: 7, totalTokens: 7, cost: 0.00001 },
    });
  });

  it('decodes base64 little-endian float32, whatever encoding was asked', async () => {
    const values = [0.5, -1.25, 3.0e-8, 1234.5678];
    const result = await embed([{ embedding: base64Of(values) }], 'one');
    expect(result.encoding).toBe('base64');
    expect(result.vectors[0]).toEqual(new Float32Array(values));
    expect(result.vectors[0]?.byteOffset).toBe(0);
  });

  it('accepts a mix of float and base64 items', async () => {
    const result = await embed([v(1, 2), { embedding: base64Of([3, 4]) }], ['a', 'b']);
    expect(result.encoding).toBe('mixed');
    expect(result.vectors.map((x) => Array.from(x))).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });

  it('places vectors by data[].index when the items come back reordered', async () => {
    const items: EmbeddingItemWire[] = [
      { embedding: [3, 3], index: 2 },
      { embedding: [1, 1], index: 0 },
      { embedding: base64Of([2, 2]), index: 1 },
    ];
    const result = await embed(items);
    expect(result.vectors.map((x) => Array.from(x))).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
  });

  it('counts a single string and multimodal blocks as inputs', async () => {
    server.reply({ body: { data: [v(1)] } });
    await expect(client.embeddings({ model: 'm', input: 'solo' })).resolves.toMatchObject({ dims: 1 });
    const blocks: MultimodalBlock[] = [
      { content: [{ type: 'text', text: 'a cat' }] },
      {
        content: [
          { type: 'text', text: 'a dog' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ];
    server.reply({ body: { data: [v(1), v(2)] } });
    const result = await client.embeddings({
      model: 'emu/vision-embed',
      input: blocks,
      encoding_format: 'float',
      provider: { order: ['a', 'b'], allow_fallbacks: false, data_collection: 'deny' },
    });
    expect(result.vectors).toHaveLength(2);
    expect(JSON.parse(server.requests[1]?.body ?? '')).toEqual({
      model: 'emu/vision-embed',
      input: blocks,
      encoding_format: 'float',
      provider: { order: ['a', 'b'], allow_fallbacks: false, data_collection: 'deny' },
    });
  });
});

describe('embeddings: a bad 200 is never success', () => {
  it('refuses empty data', async () => {
    const error = await invalid([]);
    expect(error.message).toBe('gateway 200 invalid response: data is empty (expected 3 embeddings)');
    expect(error.emptyData).toBe(true);
  });

  it('refuses short and long data', async () => {
    const short = await invalid([v(1), v(2)]);
    expect(short.message).toContain('data has 2 embeddings for 3 inputs');
    expect(short.emptyData).toBe(false);
    expect((await invalid([v(1), v(2)], 'one')).message).toContain('data has 2 embeddings for 1 inputs');
  });

  it('refuses a body without a data array, and malformed JSON', async () => {
    expect((await invalid(undefined)).message).toContain('body has no data array');
    server.reply({ body: '{"data": [' });
    const error = await client.embeddings({ model: 'm', input: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect((error as Error).message).toContain('body is not JSON');
  });

  it('refuses duplicate, out-of-range, non-integer and partial indexes', async () => {
    const dup = [
      { embedding: [1], index: 0 },
      { embedding: [2], index: 0 },
    ];
    expect((await invalid(dup, ['a', 'b'])).message).toContain('data[1].index 0 is a duplicate');
    const range = [
      { embedding: [1], index: 0 },
      { embedding: [2], index: 2 },
    ];
    expect((await invalid(range, ['a', 'b'])).message).toContain('data[1].index is 2, not in 0..1');
    const fractional = [
      { embedding: [1], index: 0.5 },
      { embedding: [2], index: 1 },
    ];
    expect((await invalid(fractional, ['a', 'b'])).message).toContain('data[0].index is 0.5');
    const partial = [{ embedding: [1], index: 1 }, { embedding: [2] }];
    expect((await invalid(partial, ['a', 'b'])).message).toContain('index is present on 1 of 2 items');
  });

  it('refuses non-numbers (JSON turns NaN into null) and values beyond float32', async () => {
    expect((await invalid([v(1, 2), { embedding: [1, null] }], ['a', 'b'])).message).toContain(
      'data[1].embedding[1] is null, not a number',
    );
    expect((await invalid([{ embedding: [1, '2'] }], 'x')).message).toContain('data[0].embedding[1] is "2"');
    expect((await invalid([{ embedding: [1, 1e39] }], 'x')).message).toContain(
      'data[0].embedding[1] is Infinity, not finite',
    );
    expect((await invalid([{ embedding: base64Of([1, Number.NaN]) }], 'x')).message).toContain(
      'data[0].embedding[1] is NaN, not finite',
    );
    // Infinities that cancel in a sum, and one in the last values after the groups of four.
    const inf = Number.POSITIVE_INFINITY;
    expect((await invalid([{ embedding: base64Of([1, inf, 3, 4, 5, -inf]) }], 'x')).message).toContain(
      'data[0].embedding[1] is Infinity, not finite',
    );
    expect((await invalid([{ embedding: base64Of([1, 2, 3, 4, 5, 6, -inf]) }], 'x')).message).toContain(
      'data[0].embedding[6] is -Infinity, not finite',
    );
  });

  it('accepts the largest float32 values, however many (their sum as doubles stays finite)', async () => {
    const largest: number[] = Array.from({ length: 4099 }, (_, i) =>
      i % 2 ? 3.4028234663852886e38 : -3.4e38,
    );
    largest.push(...Array.from({ length: 4101 }, () => 3.4028234663852886e38));
    const result = await embed([{ embedding: base64Of(largest) }], 'x');
    expect(result.vectors[0]![8199]).toBe(3.4028234663852886e38);
  });

  it('refuses ragged and empty vectors', async () => {
    expect((await invalid([v(1, 2), v(1, 2, 3)], ['a', 'b'])).message).toContain(
      'data[1].embedding has 3 dimensions, data[0] has 2',
    );
    expect((await invalid([v()], 'x')).message).toContain('data[0].embedding is empty');
    expect((await invalid([{ embedding: '' }], 'x')).message).toContain('data[0].embedding is empty');
  });

  it('refuses missing embeddings and items that are not objects', async () => {
    expect((await invalid([{ index: 0 }], 'x')).message).toContain('data[0].embedding is undefined');
    expect((await invalid([[1, 2]], 'x')).message).toContain('data[0] is an array, not an object');
  });

  it('refuses base64 whose length is not whole float32s, or that is not base64', async () => {
    const sixBytes = Buffer.from([0, 0, 128, 63, 0, 0]).toString('base64');
    expect((await invalid([{ embedding: sixBytes }], 'x')).message).toContain(
      '6 bytes of base64, not a multiple of 4',
    );
    expect((await invalid([{ embedding: 'AAAA*AAAAAA=' }], 'x')).message).toContain('not valid base64');
  });
});
