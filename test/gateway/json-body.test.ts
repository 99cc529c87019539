/**
 * JsonBodyWriter writes a request's JSON piece by piece: whatever the body, its bytes must be
 * exactly `Buffer.from(JSON.stringify(body))`, and each call's buffer its own.
 */
import { describe, expect, it } from 'vitest';
import { JsonBodyWriter } from '../../src/gateway/json-body.js';
import { seeded } from '../helpers/corpus.js';

const stringified = (body: unknown) => Buffer.from(JSON.stringify(body));

/** Texts that JSON and UTF-8 both have to get right. */
const HOSTILE = [
  '東京都の天気は晴れ。𠮷野家',
  'family 👨‍👩‍👧‍👦 flags 🇯🇵🇫🇷 skin 👍🏽',
  'مرحبا بالعالم שלום עולם',
  'e\u0301 a\u0308 n\u0303 combining',
  'const x = "quoted" \\ back\\slash;\r\n\tnext line',
  'controls \u0000\u0001\u001f\u007f and \u2028 \u2029',
  'lone high \ud800 and lone low \udc00 and reversed \udc00\ud800',
  'x'.repeat(300),
  '',
];

function text(rand: () => number): string {
  const pieces: string[] = [];
  const count = 1 + Math.floor(rand() * 4);
  for (let i = 0; i < count; i++) pieces.push(HOSTILE[Math.floor(rand() * HOSTILE.length)]!);
  return pieces.join(rand() < 0.5 ? ' ' : '\n');
}

/** A body as the client sends them, and the shapes JSON.stringify treats specially. */
function body(rand: () => number): Record<string, unknown> {
  const inputs = Array.from({ length: Math.floor(rand() * 130) }, () => text(rand));
  const out: Record<string, unknown> = { model: 'openai/text-embedding-3-small', input: inputs };
  if (rand() < 0.5) out.encoding_format = 'base64';
  if (rand() < 0.3) out.provider = { order: ['a', 'b'], allow_fallbacks: false, data_collection: 'deny' };
  if (rand() < 0.2) out.dimensions = undefined; // left out, as JSON.stringify does
  if (rand() < 0.2)
    out.input = [...inputs, undefined, () => 1, { type: 'image_url', image_url: { url: 'data:,x' } }];
  if (rand() < 0.1) out.input = text(rand); // one string, not an array
  if (rand() < 0.1) out.when = new Date(0); // toJSON of a value
  return out;
}

describe('JsonBodyWriter', () => {
  it('writes the bytes of JSON.stringify for 2,000 random bodies of hostile texts', () => {
    const writer = new JsonBodyWriter();
    for (let seed = 1; seed <= 2_000; seed++) {
      const b = body(seeded(seed));
      expect(writer.bytes(b).equals(stringified(b)), `seed ${seed}`).toBe(true);
    }
  });

  it('writes the shapes JSON.stringify writes whole as it does', () => {
    const writer = new JsonBodyWriter();
    const nullPrototype = Object.assign(Object.create(null) as Record<string, unknown>, { a: ['x'] });
    const withToJson = { input: ['a'], toJSON: () => ({ other: 1 }) };
    const arrayWithToJson = Object.assign(['a', 'b'], { toJSON: () => 'whole' });
    for (const b of [
      {},
      { a: undefined },
      { input: [] },
      [1, 'two'],
      nullPrototype,
      withToJson,
      { input: arrayWithToJson },
    ]) {
      expect(writer.bytes(b).toString(), JSON.stringify(b)).toBe(JSON.stringify(b));
    }
  });

  it('keeps each body in a buffer of its own', () => {
    const writer = new JsonBodyWriter();
    const first = writer.bytes({ input: ['first body'] });
    writer.bytes({ input: ['a second body that would overwrite a shared buffer'] });
    expect(first.toString()).toBe('{"input":["first body"]}');
  });

  it('writes a later body into the memory of one given back, and only of one given back', () => {
    const writer = new JsonBodyWriter();
    const first = writer.bytes({ input: ['first'.repeat(20_000)] });
    const held = writer.bytes({ input: ['held'.repeat(20_000)] });
    writer.giveBack(first);
    const second = writer.bytes({ input: ['second'.repeat(10_000)] });
    expect(second.buffer).toBe(first.buffer);
    expect(second.toString()).toBe(JSON.stringify({ input: ['second'.repeat(10_000)] }));
    // Not given back: never written over.
    const third = writer.bytes({ input: ['third'.repeat(10_000)] });
    expect(third.buffer).not.toBe(held.buffer);
    expect(held.toString()).toBe(JSON.stringify({ input: ['held'.repeat(20_000)] }));
  });

  it('lends a buffer given back twice once, and takes back nothing it did not lend', () => {
    const writer = new JsonBodyWriter();
    const body = writer.bytes({ input: ['twice'] });
    writer.giveBack(body);
    writer.giveBack(body);
    const one = writer.bytes({ input: ['one'] });
    const two = writer.bytes({ input: ['two'] });
    expect(two.buffer).not.toBe(one.buffer);
    expect(one.toString()).toBe('{"input":["one"]}');
    // A body written whole (not a plain object) and a foreign buffer are left alone.
    const whole = writer.bytes(['not', 'an', 'object']);
    const foreign = Buffer.from('x'.repeat(100_000));
    writer.giveBack(whole);
    writer.giveBack(foreign);
    for (let i = 0; i < 20; i++) {
      const next = writer.bytes({ input: [`next ${i}`] });
      expect(next.buffer).not.toBe(whole.buffer);
      expect(next.buffer).not.toBe(foreign.buffer);
    }
    expect(whole.toString()).toBe('["not","an","object"]');
  });

  it('writes bodies larger than its buffer, and pieces too large for it, as JSON.stringify does', () => {
    const writer = new JsonBodyWriter();
    const rand = seeded(9);
    // 128 inputs of ~40 KB: ~5 MB of JSON, past the kept buffer; then an image-sized piece.
    const large = { input: Array.from({ length: 128 }, () => text(rand).repeat(200).slice(0, 40_000)) };
    const image = {
      input: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(3e6)}` } }],
    };
    const dataUrl = { model: 'm', input: ['before', `data:${'B'.repeat(2e6)}`, 'after'] };
    for (const b of [large, image, dataUrl, { input: ['small again'] }]) {
      expect(writer.bytes(b).equals(stringified(b))).toBe(true);
    }
  });
});
