import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countPieces,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
  truncateToPieces,
} from '../../src/emulator/index.js';
import { call, embed, expectEnvelope, fromBase64 } from './helpers.js';

/** The default models count 'pieces' (tokenizers.test.ts covers a cl100k model). */
const tokens = countPieces;

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator();
});
afterAll(() => emu.close());

describe('GET /embeddings/models', () => {
  it('lists the embedding models with context length, pricing and modalities', async () => {
    const reply = await call(emu, '/embeddings/models');
    expect(reply.status).toBe(200);
    const byId = new Map(reply.body.data.map((m: { id: string }) => [m.id, m]));
    expect([...byId.keys()]).toEqual([
      'emu/embed-small',
      'emu/embed-large',
      'emu/embed-nocontext',
      'emu/vision-embed',
      'emu/bow-small',
      'emu/bow-large',
    ]);
    expect(byId.get('emu/embed-small')).toMatchObject({
      context_length: 512,
      pricing: { prompt: '0.00000002' },
      architecture: { input_modalities: ['text'], output_modalities: ['embeddings'] },
    });
    expect(byId.get('emu/embed-large')).toMatchObject({
      context_length: 8192,
      pricing: { prompt: '0.00000013' },
    });
    expect(byId.get('emu/embed-nocontext')).not.toHaveProperty('context_length');
    expect(byId.get('emu/vision-embed')).toMatchObject({
      architecture: { input_modalities: ['text', 'image'] },
    });
    expect(byId.has('emu/whisper-tiny')).toBe(false);
  });
});

describe('POST /embeddings', () => {
  it('returns exactly embeddingFor as floats, in input order, with usage and cost', async () => {
    const input = ['first text', 'second, longer text', 'third'];
    const reply = await embed(emu, { model: 'emu/embed-small', input });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ object: 'list', model: 'emu/embed-small', provider: 'alpha' });
    expect(reply.body.id).toEqual(expect.any(String));
    input.forEach((text, i) => {
      const item = reply.body.data[i];
      expect(item).toMatchObject({ object: 'embedding', index: i });
      expect(Float32Array.from(item.embedding)).toEqual(embeddingFor('emu/embed-small', text, 384));
    });
    const promptTokens = input.reduce((sum, text) => sum + tokens(text), 0);
    expect(reply.body.usage.prompt_tokens).toBe(promptTokens);
    expect(reply.body.usage.total_tokens).toBe(promptTokens);
    expect(reply.body.usage.cost).toBeCloseTo(promptTokens * 0.00000002, 15);
  });

  it('returns the same vectors as base64 of little-endian float32', async () => {
    const reply = await embed(emu, {
      model: 'emu/embed-large',
      input: ['alpha', 'beta'],
      encoding_format: 'base64',
    });
    expect(reply.status).toBe(200);
    expect(typeof reply.body.data[0].embedding).toBe('string');
    expect(fromBase64(reply.body.data[0].embedding)).toEqual(embeddingFor('emu/embed-large', 'alpha', 1536));
    expect(fromBase64(reply.body.data[1].embedding)).toEqual(embeddingFor('emu/embed-large', 'beta', 1536));
  });

  it('accepts a single string and is deterministic across requests', async () => {
    const a = await embed(emu, { model: 'emu/embed-nocontext', input: 'once' });
    const b = await embed(emu, { model: 'emu/embed-nocontext', input: 'once' });
    expect(a.body.data).toHaveLength(1);
    expect(a.body.data[0].embedding).toHaveLength(256);
    expect(b.body.data).toEqual(a.body.data);
  });

  it('truncates over-long input on a truncating model to its first context_length tokens', async () => {
    const text = 'lorem ipsum dolor sit amet '.repeat(200);
    expect(tokens(text)).toBeGreaterThan(512);
    const reply = await embed(emu, { model: 'emu/embed-small', input: ['short', text] });
    expect(reply.status).toBe(200);
    expect(reply.body.usage.prompt_tokens).toBe(tokens('short') + 512);
    const cut = truncateToPieces(text, 512);
    expect(Float32Array.from(reply.body.data[1].embedding)).toEqual(
      embeddingFor('emu/embed-small', cut, 384),
    );
  });

  it('rejects over-long input on a rejecting model, naming the context length and the input', async () => {
    const text = 'lorem ipsum dolor sit amet '.repeat(2000);
    const n = tokens(text);
    expect(n).toBeGreaterThan(8192);
    const message = expectEnvelope(await embed(emu, { model: 'emu/embed-large', input: ['ok', text] }), 400);
    expect(message).toBe(
      `This model's maximum context length is 8192 tokens, however input 1 has ${n} tokens`,
    );
  });

  it('enforces the hidden limit of a model that lists no context_length', async () => {
    const text = 'lorem ipsum dolor sit amet '.repeat(1000);
    expect(tokens(text)).toBeGreaterThan(4096);
    const message = expectEnvelope(await embed(emu, { model: 'emu/embed-nocontext', input: [text] }), 400);
    expect(message).toContain('maximum context length is 4096 tokens');
  });

  it('embeds a multimodal block as one joint vector on the vision model', async () => {
    const block = {
      content: [
        { type: 'text', text: 'a red bicycle' },
        { type: 'image_url', image_url: { url: 'https://example.org/bike.png' } },
      ],
    };
    const reply = await embed(emu, {
      model: 'emu/vision-embed',
      input: [block, { content: [block.content[0]] }],
    });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toHaveLength(2);
    expect(Float32Array.from(reply.body.data[0].embedding)).toEqual(
      embeddingFor('emu/vision-embed', 'text:a red bicycle\nimage:https://example.org/bike.png', 512),
    );
    expect(Float32Array.from(reply.body.data[1].embedding)).toEqual(
      embeddingFor('emu/vision-embed', 'text:a red bicycle', 512),
    );
    expect(reply.body.usage.prompt_tokens).toBe(2 * tokens('a red bicycle') + 85);
  });

  it('answers 400 for image parts on a text model', async () => {
    const input = [{ content: [{ type: 'image_url', image_url: { url: 'https://example.org/x.png' } }] }];
    const message = expectEnvelope(await embed(emu, { model: 'emu/embed-small', input }), 400);
    expect(message).toContain('does not accept image input');
  });

  it.each([
    ['missing model', { input: 'x' }, /model is required/],
    ['non-string model', { model: 7, input: 'x' }, /model is required/],
    ['missing input', { model: 'emu/embed-small' }, /input is required/],
    ['empty array', { model: 'emu/embed-small', input: [] }, /empty array/],
    ['empty string', { model: 'emu/embed-small', input: '' }, /empty string/],
    ['non-string element', { model: 'emu/embed-small', input: ['a', 3] }, /input\[1\] must be a string/],
    ['number input', { model: 'emu/embed-small', input: 42 }, /input must be/],
    [
      'bad block',
      { model: 'emu/vision-embed', input: [{ content: [{ type: 'audio' }] }] },
      /input\[0\]\.content\[0\]/,
    ],
    ['block without parts', { model: 'emu/vision-embed', input: [{ content: [] }] }, /input\[0\]/],
    [
      'bad encoding_format',
      { model: 'emu/embed-small', input: 'x', encoding_format: 'int8' },
      /encoding_format/,
    ],
    [
      'bad provider',
      { model: 'emu/embed-small', input: 'x', provider: { order: 'alpha' } },
      /provider\.order/,
    ],
  ])('answers 400 for %s', async (_name, body, pattern) => {
    expect(expectEnvelope(await embed(emu, body), 400)).toMatch(pattern);
  });

  it('answers 400 for a body that is not JSON', async () => {
    expect(expectEnvelope(await call(emu, '/embeddings', { body: '{not json' }), 400)).toMatch(
      /not valid JSON/,
    );
  });

  it('answers 404 for an unknown model and for a model that is not an embedding model', async () => {
    expect(expectEnvelope(await embed(emu, { model: 'emu/nope', input: 'x' }), 404)).toMatch(/not found/);
    expect(expectEnvelope(await embed(emu, { model: 'emu/whisper-tiny', input: 'x' }), 404)).toMatch(
      /not an embedding model/,
    );
  });

  it('records requests with key labels, never raw keys', async () => {
    const last = emu.requests.at(-1)!;
    expect(last).toMatchObject({ path: '/embeddings', key: 'default', status: 404 });
    expect(JSON.stringify(emu.requests)).not.toContain('emu-test-key');
    expect(emu.stats.byPath['/embeddings']).toBeGreaterThan(0);
  });
});

describe('model limits and broken providers', () => {
  it('caps inputs per request (maxInputs)', async () => {
    const small = await startEmulator({
      models: [
        {
          id: 'x/tiny',
          dims: 4,
          contextLength: 16,
          overLong: 'reject',
          pricePerToken: '0',
          providers: ['alpha'],
          maxInputs: 2,
        },
      ],
    });
    try {
      expect(expectEnvelope(await embed(small, { model: 'x/tiny', input: ['a', 'b', 'c'] }), 400)).toMatch(
        /at most 2 per request/,
      );
      expect((await embed(small, { model: 'x/tiny', input: ['a', 'b'] })).status).toBe(200);
    } finally {
      await small.close();
    }
  });

  it("base64Mode 'empty' answers 200 with no data, charging nothing", async () => {
    const broken = await startEmulator({ base64Mode: 'empty' });
    try {
      const reply = await embed(broken, {
        model: 'emu/embed-small',
        input: ['a'],
        encoding_format: 'base64',
      });
      expect(reply.status).toBe(200);
      expect(reply.body.data).toEqual([]);
      expect(broken.stats.spend).toEqual({});
      // Floats are still delivered.
      expect((await embed(broken, { model: 'emu/embed-small', input: ['a'] })).body.data).toHaveLength(1);
    } finally {
      await broken.close();
    }
  });

  it("base64Mode 'floats' answers floats when base64 is asked", async () => {
    const broken = await startEmulator({ base64Mode: 'floats' });
    try {
      const reply = await embed(broken, {
        model: 'emu/embed-small',
        input: ['a'],
        encoding_format: 'base64',
      });
      expect(Array.isArray(reply.body.data[0].embedding)).toBe(true);
      expect(Float32Array.from(reply.body.data[0].embedding)).toEqual(
        embeddingFor('emu/embed-small', 'a', 384),
      );
    } finally {
      await broken.close();
    }
  });

  it('shuffleData reorders items but keeps each index right; omitIndex drops index', async () => {
    const input = Array.from({ length: 12 }, (_, i) => `text ${i}`);
    const shuffled = await startEmulator({ shuffleData: true });
    const unindexed = await startEmulator({ omitIndex: true });
    try {
      const reply = await embed(shuffled, { model: 'emu/embed-small', input });
      const indexes = reply.body.data.map((item: { index: number }) => item.index);
      expect(indexes).not.toEqual([...indexes].sort((a, b) => a - b));
      expect([...indexes].sort((a, b) => a - b)).toEqual(input.map((_, i) => i));
      for (const item of reply.body.data) {
        expect(Float32Array.from(item.embedding)).toEqual(
          embeddingFor('emu/embed-small', input[item.index]!, 384),
        );
      }
      const plainReply = await embed(unindexed, { model: 'emu/embed-small', input: ['a', 'b'] });
      expect(plainReply.body.data[0]).not.toHaveProperty('index');
      expect(Float32Array.from(plainReply.body.data[1].embedding)).toEqual(
        embeddingFor('emu/embed-small', 'b', 384),
      );
    } finally {
      await shuffled.close();
      await unindexed.close();
    }
  });
});
