/** Telling a refused input from a refused request: the storm detector and the stated input limit. */
import { describe, expect, it } from 'vitest';
import { RefusalStorm, statedInputLimit } from '../../src/embedding/refusals.js';

describe('statedInputLimit', () => {
  it('reads the limit from the common phrasings', () => {
    expect(statedInputLimit('Too many inputs: 16 > max_inputs_per_request 8', 16)).toBe(8);
    expect(
      statedInputLimit('input has 16 items; openai/text-embedding-3-small accepts at most 8 per request', 16),
    ).toBe(8);
    expect(statedInputLimit('batch size 64 exceeds the limit of 32 inputs', 64)).toBe(32);
  });

  it('says nothing of messages about something else', () => {
    expect(
      statedInputLimit('input 3 has 9120 tokens, maximum context length is 8192 tokens', 16),
    ).toBeUndefined();
    expect(statedInputLimit('refused by the test proxy', 16)).toBeUndefined();
    // A number below what was sent, but not about the request's inputs.
    expect(statedInputLimit('Too many inputs: 12 > max 8', 16)).toBeUndefined();
  });
});

describe('RefusalStorm', () => {
  it('rages after 400s in a row, and one accepted answer ends it', () => {
    const storm = new RefusalStorm({ threshold: 3, baseDelayMs: 500, maxDelayMs: 4_000 });
    storm.refused();
    storm.refused();
    expect(storm.raging).toBe(false);
    storm.refused();
    expect(storm.raging).toBe(true);
    storm.accepted();
    expect(storm.raging).toBe(false);
  });

  it('doubles its back-off, shares one in progress, caps it, and starts over after a success', () => {
    let now = 0;
    const storm = new RefusalStorm({ threshold: 1, baseDelayMs: 500, maxDelayMs: 1_500 }, () => now);
    expect(storm.backOff()).toEqual({ delayMs: 500, fresh: true });
    now = 200;
    expect(storm.backOff()).toEqual({ delayMs: 300, fresh: false });
    now = 600;
    expect(storm.backOff()).toEqual({ delayMs: 1_000, fresh: true });
    now = 2_000;
    expect(storm.backOff()).toEqual({ delayMs: 1_500, fresh: true });
    storm.accepted();
    now = 10_000;
    expect(storm.backOff()).toEqual({ delayMs: 500, fresh: true });
  });
});
