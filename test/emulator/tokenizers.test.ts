import { countTokens, decode, encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countPieces,
  type EmbeddingModelConfig,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
  truncateToPieces,
} from '../../src/emulator/index.js';
import { Sfc32 } from '../../src/emulator/prng.js';
import { embed, expectEnvelope, withEmulator } from './helpers.js';

const plain = { disallowedSpecial: new Set<string>() };
const cl100k = (text: string) => countTokens(text, plain);

/** lorem(2) ipsum(2) dolor(2) sit(1) amet(1), spaces free: 8 pieces a repetition. */
const LOREM = 'lorem ipsum dolor sit amet ';

const vectorOf = (reply: { body: { data: { embedding: number[] }[] } }, i: number) =>
  Float32Array.from(reply.body.data[i]!.embedding);

describe('default models count pieces', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startEmulator();
  });
  afterAll(() => emu.close());

  it('bill a different count than cl100k would', async () => {
    const text = LOREM.repeat(10);
    expect(countPieces(text)).toBe(80);
    expect(cl100k(text)).not.toBe(80);
    const reply = await embed(emu, { model: 'emu/embed-small', input: text });
    expect(reply.body.usage.prompt_tokens).toBe(80);
  });

  it.each([
    ['whole repetitions, trailing space kept', LOREM.repeat(200), LOREM.repeat(64)],
    ['inside an ASCII run, 4×512 characters kept', 'a'.repeat(4096), 'a'.repeat(2048)],
    ['between surrogate pairs', '😀'.repeat(600), '😀'.repeat(512)],
    // 507 + man ZWJ woman ZWJ girl = 512; the next ZWJ would be the 513th
    ['inside a ZWJ sequence', `${'x '.repeat(507)}👨‍👩‍👧‍👦 tail`, `${'x '.repeat(507)}👨‍👩‍👧`],
  ])('truncate on the truncating model: %s', async (_name, text, cut) => {
    expect(truncateToPieces(text, 512)).toBe(cut);
    const before = emu.stats.truncated;
    const reply = await embed(emu, { model: 'emu/embed-small', input: ['short', text] });
    expect(reply.status).toBe(200);
    expect(emu.stats.truncated - before).toBe(1);
    // short(2) + the context length
    expect(reply.body.usage.prompt_tokens).toBe(2 + 512);
    expect(vectorOf(reply, 1)).toEqual(embeddingFor('emu/embed-small', cut, 384));
  });

  it('embed the truncated text of random hostile over-long inputs', async () => {
    const rng = Sfc32.fromLabel('pieces truncation over HTTP');
    const alphabet = [
      '東',
      '\u{20000}',
      '🇫🇷',
      '👨‍👩‍👧‍👦',
      'e\u0301',
      'ب',
      ' ',
      '\r\n',
      '.',
      'abc',
      'x1y2z3w',
    ];
    const input = Array.from({ length: 8 }, () =>
      Array.from({ length: 400 + rng.nextInt(400) }, () => alphabet[rng.nextInt(alphabet.length)]).join(''),
    );
    const before = emu.stats.truncated;
    const reply = await embed(emu, { model: 'emu/embed-small', input });
    expect(reply.status).toBe(200);
    const over = input.filter((text) => countPieces(text) > 512).length;
    expect(over).toBeGreaterThan(0);
    expect(emu.stats.truncated - before).toBe(over);
    let billed = 0;
    input.forEach((text, i) => {
      const cut = truncateToPieces(text, 512);
      billed += countPieces(cut);
      expect(vectorOf(reply, i)).toEqual(embeddingFor('emu/embed-small', cut, 384));
    });
    expect(reply.body.usage.prompt_tokens).toBe(billed);
  });

  it('reject over-long input with the pieces count in the message', async () => {
    const message = expectEnvelope(
      await embed(emu, { model: 'emu/embed-large', input: ['ok', LOREM.repeat(2000)] }),
      400,
    );
    expect(message).toBe(
      "This model's maximum context length is 8192 tokens, however input 1 has 16000 tokens",
    );
    const cjk = expectEnvelope(
      await embed(emu, { model: 'emu/embed-large', input: ['東'.repeat(9000)] }),
      400,
    );
    expect(cjk).toBe("This model's maximum context length is 8192 tokens, however input 0 has 9000 tokens");
  });

  it('accept input at exactly the context length', async () => {
    const reply = await embed(emu, { model: 'emu/embed-large', input: ['東'.repeat(8192)] });
    expect(reply.status).toBe(200);
    expect(reply.body.usage.prompt_tokens).toBe(8192);
  });
});

function model(id: string, fields: Partial<EmbeddingModelConfig>): EmbeddingModelConfig {
  return {
    id,
    dims: 8,
    contextLength: 16,
    overLong: 'reject',
    pricePerToken: '0',
    providers: ['alpha'],
    ...fields,
  };
}

describe('a configured tokenizer', () => {
  it('defaults to pieces when a configured model names none', async () => {
    await withEmulator({ models: [model('x/plain', {})] }, async (emu) => {
      const text = 'cafe\u0301 東京 🇫🇷';
      const reply = await embed(emu, { model: 'x/plain', input: text });
      expect(reply.body.usage.prompt_tokens).toBe(countPieces(text));
      expect(countPieces(text)).toBe(6);
    });
  });

  it("'cl100k' counts, truncates and rejects with cl100k", async () => {
    const options = {
      models: [
        model('x/cl-truncate', { tokenizer: 'cl100k', overLong: 'truncate' }),
        model('x/cl-reject', { tokenizer: 'cl100k' }),
      ],
    };
    await withEmulator(options, async (emu) => {
      // Special-token text is counted as the plain text it is.
      const special = 'before <|endoftext|> after';
      const counted = await embed(emu, { model: 'x/cl-reject', input: special });
      expect(counted.body.usage.prompt_tokens).toBe(cl100k(special));
      expect(cl100k(special)).not.toBe(countPieces(special));

      const long = LOREM.repeat(10);
      const cut = decode(encode(long, plain).slice(0, 16));
      const truncated = await embed(emu, { model: 'x/cl-truncate', input: long });
      expect(truncated.body.usage.prompt_tokens).toBe(16);
      expect(vectorOf(truncated, 0)).toEqual(embeddingFor('x/cl-truncate', cut, 8));

      const message = expectEnvelope(await embed(emu, { model: 'x/cl-reject', input: ['a', long] }), 400);
      expect(message).toBe(
        `This model's maximum context length is 16 tokens, however input 1 has ${cl100k(long)} tokens`,
      );
    });
  });

  it('counts text parts of a block in the model tokenizer; images stay 85', async () => {
    const options = {
      models: [
        model('x/vision-cl', { tokenizer: 'cl100k', contextLength: 512, inputModalities: ['text', 'image'] }),
        model('x/vision-pieces', { contextLength: 512, inputModalities: ['text', 'image'] }),
      ],
    };
    const text = 'a red bicycle, leaning on a wall';
    const block = {
      content: [
        { type: 'text', text },
        { type: 'image_url', image_url: { url: 'https://example.org/bike.png' } },
      ],
    };
    await withEmulator(options, async (emu) => {
      const cl = await embed(emu, { model: 'x/vision-cl', input: [block] });
      expect(cl.body.usage.prompt_tokens).toBe(cl100k(text) + 85);
      const pieces = await embed(emu, { model: 'x/vision-pieces', input: [block] });
      expect(pieces.body.usage.prompt_tokens).toBe(countPieces(text) + 85);
    });
  });
});
