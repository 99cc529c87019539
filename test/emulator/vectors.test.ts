import { describe, expect, it } from 'vitest';
import { embeddingFor } from '../../src/emulator/index.js';
import { Sfc32 } from '../../src/emulator/prng.js';
import { multimodalText } from '../../src/emulator/vectors.js';

describe('embeddingFor', () => {
  it('is pinned to the documented function (values cross-checked with an independent implementation)', () => {
    const v = embeddingFor('emu/embed-small', 'hello', 384);
    expect(Array.from(v.subarray(0, 4))).toEqual([
      0.07636187225580215, 0.06565126776695251, -0.07797428965568542, 0.03182261437177658,
    ]);
    expect(v[383]).toBe(-0.07028013467788696);
    expect(Array.from(embeddingFor('m', '', 4))).toEqual([
      -0.482828289270401, 0.43637269735336304, 0.7406158447265625, -0.16716426610946655,
    ]);
  });

  it('is deterministic, has the asked dims and unit L2 norm', () => {
    const a = embeddingFor('emu/embed-large', 'some text', 1536);
    expect(a).toBeInstanceOf(Float32Array);
    expect(a).toHaveLength(1536);
    expect(embeddingFor('emu/embed-large', 'some text', 1536)).toEqual(a);
    const norm = Math.sqrt(a.reduce((sum, x) => sum + x * x, 0));
    expect(norm).toBeCloseTo(1, 6);
  });

  it('depends on the model and on the text', () => {
    const base = embeddingFor('emu/embed-small', 'text', 8);
    expect(embeddingFor('emu/embed-large', 'text', 8)).not.toEqual(base);
    expect(embeddingFor('emu/embed-small', 'text ', 8)).not.toEqual(base);
  });

  it('shares its prefix across dims only up to normalisation (the PRNG stream is the same)', () => {
    const short = embeddingFor('m', 't', 4);
    const long = embeddingFor('m', 't', 8);
    const ratio = long[0]! / short[0]!;
    for (let i = 1; i < 4; i++) expect(long[i]! / short[i]!).toBeCloseTo(ratio, 5);
  });
});

describe('multimodalText', () => {
  it('joins parts with newlines, each as text:<text> or image:<url>', () => {
    expect(
      multimodalText([
        { type: 'text', text: 'a cat' },
        { type: 'image_url', image_url: { url: 'https://x/cat.png' } },
      ]),
    ).toBe('text:a cat\nimage:https://x/cat.png');
  });
});

describe('Sfc32', () => {
  it('fillSigned draws what nextUint32 draws, and sums their squares in order', () => {
    const stepwise = Sfc32.fromLabel('fill');
    const filled = Sfc32.fromLabel('fill');
    const out = new Float64Array(1000);
    const sum = filled.fillSigned(out);
    let expected = 0;
    for (let i = 0; i < out.length; i++) {
      const x = (stepwise.nextUint32() / 2 ** 32) * 2 - 1;
      expect(out[i]).toBe(x);
      expected += x * x;
    }
    expect(sum).toBe(expected);
    // The state moved on by exactly as many steps.
    expect(filled.nextUint32()).toBe(stepwise.nextUint32());
  });

  it('reproduces its stream from the same seed and stays in range', () => {
    const a = Sfc32.fromLabel('seed');
    const b = Sfc32.fromLabel('seed');
    for (let i = 0; i < 100; i++) {
      const x = a.nextFloat();
      expect(x).toBe(b.nextFloat());
      expect(x >= 0 && x < 1).toBe(true);
      expect(a.nextInt(7)).toBe(b.nextInt(7));
    }
  });
});
