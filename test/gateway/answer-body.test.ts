/**
 * parseEmbeddingsBody lifts the base64 vectors out of an answer before JSON.parse: whatever the
 * body, the result must equal JSON.parse of its whole text, and a body that is not JSON must throw.
 */
import { describe, expect, it } from 'vitest';
import { bodyTextOf, parseEmbeddingsBody, parseLifted } from '../../src/gateway/answer-body.js';

const wholeParse = (bytes: Buffer) => JSON.parse(bodyTextOf(bytes));

/** A deterministic generator, so a failure names its seed. */
function random(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

function base64Vector(rand: () => number, dims: number): string {
  const v = new Float32Array(dims);
  for (let i = 0; i < dims; i++) v[i] = rand() - 0.5;
  return Buffer.from(v.buffer).toString('base64');
}

/** An answer as gateways write them, with the variations the lifting must survive. */
function answer(rand: () => number): string {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  // Half the answers are plain (what gateways send); the rest carry the traps.
  const plain = rand() < 0.5;
  const trap = () => !plain && rand() < 0.5;
  const count = 1 + Math.floor(rand() * 6);
  const dims = pick([1, 3, 8, 64]);
  const items = Array.from({ length: count }, (_, index) => {
    const vector = (trap() ? pick : (xs: readonly (() => string)[]) => xs[0]!)([
      () => JSON.stringify(base64Vector(rand, dims)),
      () => JSON.stringify(base64Vector(rand, dims)),
      () => '""', // an empty vector: the decoder refuses it, but parsing must keep it
      () => JSON.stringify(Array.from({ length: dims }, () => rand())), // floats
      () => JSON.stringify(base64Vector(rand, dims)).replaceAll('/', '\\/'), // escaped slashes
    ])();
    const colon = trap() ? pick([': ', ' : ']) : ':';
    const fields = [`"object":"embedding"`, `"index":${index}`, `"embedding"${colon}${vector}`];
    if (trap()) fields.push(`"note":${JSON.stringify(pick(['x', '"embedding":"', 'é', '\\']))}`);
    if (rand() < 0.5) fields.reverse();
    return `{${fields.join(',')}}`;
  });
  const top = [
    `"object":"list"`,
    `"data":[${items.join(pick([',', ', ', ',\n']))}]`,
    `"model":${JSON.stringify(trap() ? pick(['modèle/ü', 'a\\/b']) : 'emu/embed-small')}`,
    `"usage":{"prompt_tokens":3,"total_tokens":3${trap() ? ',"embedding":"AAAA"' : ''}}`,
  ];
  if (rand() < 0.5) top.reverse();
  return `${trap() ? '\uFEFF' : ''}{${top.join(',')}}`;
}

describe('parseEmbeddingsBody', () => {
  it('equals JSON.parse of the whole text on 5,000 random answers, escapes and traps included', () => {
    let lifted = 0;
    for (let seed = 1; seed <= 5_000; seed++) {
      const bytes = Buffer.from(answer(random(seed)), 'utf8');
      expect(parseEmbeddingsBody(bytes), `seed ${seed}`).toEqual(wholeParse(bytes));
      if (parseLifted(bytes) !== undefined) lifted++;
    }
    // The common case is lifted, not sent to the whole parse every time.
    expect(lifted).toBeGreaterThan(2_000);
  });

  it('lifts a plain answer of base64 vectors, and gives back every vector in its place', () => {
    const rand = random(7);
    const vectors = Array.from({ length: 128 }, () => base64Vector(rand, 384));
    const text = JSON.stringify({
      object: 'list',
      data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
      model: 'emu/embed-small',
      usage: { prompt_tokens: 10, total_tokens: 10 },
    });
    const parsed = parseLifted(Buffer.from(text)) as { data: { embedding: string }[] };
    expect(parsed).toBeDefined();
    expect(parsed.data.map((d) => d.embedding)).toEqual(vectors);
    expect(parsed).toEqual(JSON.parse(text));
  });

  it('declines what it cannot be sure of: a backslash, non-ASCII, a cut value outside data', () => {
    const vector = base64Vector(random(3), 4);
    const plain = `{"data":[{"index":0,"embedding":"${vector}"}]}`;
    expect(parseLifted(Buffer.from(plain))).toBeDefined();
    expect(
      parseLifted(Buffer.from(`{"data":[{"index":0,"embedding":"${vector.replace('/', '\\/')}x"}]}`)),
    ).toBe(undefined);
    expect(parseLifted(Buffer.from(`{"model":"é","data":[{"index":0,"embedding":"${vector}"}]}`))).toBe(
      undefined,
    );
    // A value cut from usage while data's vector is written with a space: the counts differ.
    const trap = `{"data":[{"index":0,"embedding": ""}],"usage":{"embedding":"${vector}"}}`;
    expect(parseLifted(Buffer.from(trap))).toBe(undefined);
    expect(parseEmbeddingsBody(Buffer.from(trap))).toEqual(JSON.parse(trap));
  });

  it('throws as JSON.parse does on a body that is not JSON', () => {
    for (const text of ['', '{"data":[{"embedding":"AAAA"}]', '{"data":[{"embedding":"AAAA}]}', '<html>']) {
      expect(() => parseEmbeddingsBody(Buffer.from(text)), text).toThrow(SyntaxError);
    }
  });
});
