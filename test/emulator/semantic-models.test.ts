import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bagOfWordsEmbedding,
  DEFAULT_EMBEDDING_MODELS,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
  validateEmulatorOptions,
} from '../../src/emulator/index.js';
import { Sfc32 } from '../../src/emulator/prng.js';
import { ConfigError } from '../../src/errors.js';
import { call, embed, fromBase64 } from './helpers.js';

const SMALL = { id: 'emu/bow-small', dims: 64, bigrams: false };
const LARGE = { id: 'emu/bow-large', dims: 384, bigrams: true };
const MODELS = [SMALL, LARGE];

type Model = typeof SMALL;

function vector(model: Model, text: string): Float32Array {
  return bagOfWordsEmbedding(model.id, text, model.dims, { bigrams: model.bigrams });
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

function norm(a: Float32Array): number {
  return Math.sqrt(dot(a, a));
}

describe('the bag-of-words test models', () => {
  it('are in the defaults, named and configured as test models', () => {
    for (const { id, dims, bigrams } of MODELS) {
      const config = DEFAULT_EMBEDDING_MODELS.find((m) => m.id === id)!;
      expect(config).toMatchObject({ dims, semantics: 'bag-of-words', providers: ['alpha', 'beta'] });
      expect(config.bigrams ?? false).toBe(bigrams);
      expect(config.name).toMatch(/test model/);
    }
  });

  it.each(MODELS)('$id: deterministic, dims long, unit norm, never NaN', (model) => {
    for (const text of [
      'hello world',
      'a',
      'The quick brown fox. '.repeat(50),
      '東京大学の研究',
      '!!! ...',
      ' ',
    ]) {
      const v = vector(model, text);
      expect(v).toHaveLength(model.dims);
      expect(vector(model, text)).toEqual(v);
      expect(v.every(Number.isFinite)).toBe(true);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
  });

  it.each(MODELS)('$id: a text without words gets the hash vector of its text', (model) => {
    for (const text of ['!!!', ' ', '—', '🎉✨']) {
      expect(vector(model, text)).toEqual(embeddingFor(model.id, text, model.dims));
    }
  });

  it.each(MODELS)('$id: ignores case and punctuation; counts repeats sublinearly', (model) => {
    expect(vector(model, 'Hello, World!')).toEqual(vector(model, 'hello world'));
    expect(vector(model, 'ÉCOLE Straße')).toEqual(vector(model, 'école straße'));
    // One feature whatever its count: the same direction (the large model adds the bigram "echo echo").
    if (!model.bigrams) expect(vector(model, 'echo echo echo')).toEqual(vector(model, 'echo'));
    expect(vector(model, 'echo, echo')).toEqual(vector(model, 'Echo echo'));
    // Repeats weigh 1 + ln(tf), not tf: "a a a a b" is nearer "b" than a linear count would put it.
    const linear = 1 / Math.sqrt(17);
    expect(dot(vector(model, 'alpha alpha alpha alpha beta'), vector(model, 'beta'))).toBeGreaterThan(linear);
  });

  it.each(MODELS)('$id: a combining mark continues its word; CJK characters are tokens', (model) => {
    expect(vector(model, 'cafe \u0301')).toEqual(vector(model, 'cafe'));
    expect(vector(model, 'cafe\u0301')).not.toEqual(vector(model, 'cafe'));
    expect(dot(vector(model, '東京大学'), vector(model, '東京'))).toBeGreaterThan(0.4);
  });

  it('depend on the model id: each model has its own space', () => {
    const a = bagOfWordsEmbedding('x/one', 'the same text', 128);
    const b = bagOfWordsEmbedding('x/two', 'the same text', 128);
    expect(a).not.toEqual(b);
  });

  it('the small one is blind to word order; the large one is not', () => {
    expect(vector(SMALL, 'dog bites man')).toEqual(vector(SMALL, 'man bites dog'));
    expect(dot(vector(LARGE, 'dog bites man'), vector(LARGE, 'man bites dog'))).toBeLessThan(0.9);
  });

  it.each(MODELS)('$id: nearest to itself and a paraphrase, far from an unrelated text', (model) => {
    const text = 'The quick brown fox jumps over the lazy dog near the old river bank at dawn';
    const paraphrase = 'At dawn a quick brown fox jumped over the lazy dog near the old river bank';
    const unrelated = 'Quarterly revenue grew because enterprise customers renewed their software contracts';
    const v = vector(model, text);
    const near = dot(v, vector(model, paraphrase));
    const far = dot(v, vector(model, unrelated));
    expect(dot(v, v)).toBeCloseTo(1, 5);
    expect(near).toBeGreaterThan(0.6);
    expect(Math.abs(far)).toBeLessThan(0.3);
    expect(near).toBeGreaterThan(far + 0.4);
  });

  it('on a retrieval task with near-duplicates, the large model finds the source better', () => {
    const { documents, queries } = retrievalTask();
    const accuracy = MODELS.map((model) => topOneAccuracy(model, documents, queries));
    console.log(
      `top-1 on ${queries.length} queries over ${documents.length} documents: ` +
        `${SMALL.id} ${accuracy[0]!.toFixed(3)}, ${LARGE.id} ${accuracy[1]!.toFixed(3)}`,
    );
    expect(accuracy[1]!).toBeGreaterThan(accuracy[0]! + 0.2);
    expect(accuracy[1]!).toBeGreaterThan(0.9);
  });

  it('embed a 400-word text in well under a millisecond at 384 dims', () => {
    const words = retrievalTask().vocabulary;
    const rng = Sfc32.fromLabel('timing');
    const texts = Array.from({ length: 50 }, () =>
      Array.from({ length: 400 }, () => words[rng.nextInt(words.length)]).join(' '),
    );
    const out = new Float32Array(LARGE.dims);
    const rounds = 20;
    for (const text of texts) bagOfWordsEmbedding(LARGE.id, text, LARGE.dims, { bigrams: true });
    const start = performance.now();
    for (let r = 0; r < rounds; r++) {
      for (const text of texts) out.set(bagOfWordsEmbedding(LARGE.id, text, LARGE.dims, { bigrams: true }));
    }
    const perText = (performance.now() - start) / (rounds * texts.length);
    console.log(`${LARGE.id}: ${(perText * 1000).toFixed(1)} µs per 400-word text`);
    // Generous: the point is the order of magnitude, on a loaded CI machine too.
    expect(perText).toBeLessThan(1);
  });
});

interface Task {
  vocabulary: string[];
  documents: string[];
  queries: { text: string; source: number }[];
}

/**
 * 200 documents of 40 words from a 600-word Zipf-like vocabulary: 120 unrelated, and 40 pairs of
 * near-duplicates (the same words, a few runs of them reordered, one word changed). Each query is
 * an 8-word window of one document; the right answer is that document.
 */
function retrievalTask(): Task {
  const rng = Sfc32.fromLabel('semantic-models retrieval');
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const vocabulary = Array.from({ length: 600 }, (_, i) => {
    const length = 3 + rng.nextInt(6);
    return `${Array.from({ length }, () => letters[rng.nextInt(26)]).join('')}${i}`;
  });
  // Zipf (s = 1) by inverse CDF over cumulative weights.
  const cumulative: number[] = [];
  let total = 0;
  for (let i = 0; i < vocabulary.length; i++) {
    total += 1 / (i + 1);
    cumulative.push(total);
  }
  const word = () => {
    const x = rng.nextFloat() * total;
    let i = 0;
    while (cumulative[i]! < x) i++;
    return vocabulary[i]!;
  };
  const document = () => Array.from({ length: 40 }, word);
  const documents: string[][] = [];
  for (let i = 0; i < 120; i++) documents.push(document());
  for (let i = 0; i < 40; i++) {
    const original = document();
    const twin = [...original];
    for (let k = 0; k < 4; k++) {
      // Reverse a run of 3 to 6 words.
      const length = 3 + rng.nextInt(4);
      const at = rng.nextInt(twin.length - length);
      twin.splice(at, length, ...twin.slice(at, at + length).reverse());
    }
    twin[rng.nextInt(twin.length)] = word();
    documents.push(original, twin);
  }
  const queries = documents.map((words, source) => {
    const at = rng.nextInt(words.length - 8 + 1);
    return { text: words.slice(at, at + 8).join(' '), source };
  });
  return { vocabulary, documents: documents.map((words) => words.join(' ')), queries };
}

/** A query is right when its source scores strictly above every other document (a tie is a miss). */
function topOneAccuracy(model: Model, documents: string[], queries: Task['queries']): number {
  const vectors = documents.map((text) => vector(model, text));
  let right = 0;
  for (const { text, source } of queries) {
    const q = vector(model, text);
    const target = dot(q, vectors[source]!);
    if (vectors.every((v, i) => i === source || dot(q, v) < target)) right++;
  }
  return right / queries.length;
}

describe('through the emulator', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
  });
  afterAll(() => emu.close());

  it('lists the test models, saying what they are', async () => {
    const reply = await call(emu, '/embeddings/models');
    expect(reply.status).toBe(200);
    for (const { id, dims } of MODELS) {
      const record = reply.body.data.find((m: { id: string }) => m.id === id);
      expect(record).toMatchObject({ architecture: { input_modalities: ['text'] } });
      expect(record.description).toContain(`Emulator test model (${dims} dimensions)`);
      expect(record.description).toContain('not meaning');
    }
  });

  it.each(MODELS)('$id: answers dims-long bag-of-words vectors as floats and as base64', async (model) => {
    const input = ['the river bank at dawn', 'quarterly revenue grew', '!!!'];
    const expected = input.map((text) => vector(model, text));
    const floats = await embed(emu, { model: model.id, input });
    expect(floats.status).toBe(200);
    const asFloats = floats.body.data.map((item: { embedding: number[] }) =>
      Float32Array.from(item.embedding),
    );
    expect(asFloats).toEqual(expected);
    const base64 = await embed(emu, { model: model.id, input, encoding_format: 'base64' });
    expect(base64.status).toBe(200);
    expect(base64.body.data.map((item: { embedding: string }) => fromBase64(item.embedding))).toEqual(
      expected,
    );
    for (const v of asFloats) expect(v).toHaveLength(model.dims);
  });

  it('leaves the hash models as they were', async () => {
    const reply = await embed(emu, { model: 'emu/embed-small', input: ['the river bank at dawn'] });
    expect(Float32Array.from(reply.body.data[0].embedding)).toEqual(
      embeddingFor('emu/embed-small', 'the river bank at dawn', 384),
    );
  });

  it('a configured model can be a bag-of-words one; bigrams need that semantics', async () => {
    const custom = {
      id: 'x/bow',
      dims: 32,
      contextLength: 64,
      overLong: 'reject' as const,
      pricePerToken: '0',
      providers: ['alpha'],
      semantics: 'bag-of-words' as const,
      bigrams: true,
    };
    const own = await startEmulator({ models: [custom] });
    try {
      const reply = await embed(own, { model: 'x/bow', input: 'dog bites man' });
      expect(Float32Array.from(reply.body.data[0].embedding)).toEqual(
        bagOfWordsEmbedding('x/bow', 'dog bites man', 32, { bigrams: true }),
      );
    } finally {
      await own.close();
    }
    const { semantics: _, ...withoutSemantics } = custom;
    const error = (() => {
      try {
        validateEmulatorOptions({ models: [withoutSemantics] });
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('models.0.bigrams');
    expect(() => validateEmulatorOptions({ models: [{ ...custom, semantics: 'meaning' }] })).toThrow(
      /models\.0\.semantics/,
    );
  });
});
