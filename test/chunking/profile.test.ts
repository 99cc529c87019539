/** The estimate's passes: the early-stopping fit check agrees with the full cost, exactly. */
import { describe, expect, it } from 'vitest';
import {
  BYTE_BOUND_WEIGHTS,
  CLASSES,
  costOf,
  costWithin,
  estimate,
  profileOf,
} from '../../src/chunking/profile.js';
import { randomDocument, seeded } from './generate.js';

describe('costWithin', () => {
  it('is costOf when the text is within the budget, else undefined (same sum, to the bit)', () => {
    const rand = seeded(17);
    for (let n = 0; n < 300; n++) {
      const text = randomDocument(rand);
      // Calibrated weights are non-negative; some classes may weigh nothing.
      const weights = n % 3 === 0 ? BYTE_BOUND_WEIGHTS : CLASSES.map(() => (rand() < 0.2 ? 0 : rand() * 2));
      const cost = costOf(text, weights);
      for (const budget of [
        0,
        cost / 2,
        Math.max(0, cost - 1e-9),
        cost,
        cost + 1,
        Number.POSITIVE_INFINITY,
      ]) {
        expect(costWithin(text, weights, budget)).toBe(cost <= budget ? cost : undefined);
      }
    }
  });

  it("costs what the text's class profile says, word starts included, whichever weights came before", () => {
    const rand = seeded(29);
    const weightSets = [
      BYTE_BOUND_WEIGHTS,
      ...Array.from({ length: 4 }, () => CLASSES.map(() => rand() * 3)),
    ];
    for (let n = 0; n < 400; n++) {
      const text = randomDocument(rand);
      // Weights alternate between objects, so a step table kept for one is never used for another.
      const weights = weightSets[n % weightSets.length]!;
      const expected = estimate(profileOf(text), weights);
      expect(Math.abs(costOf(text, weights) - expected)).toBeLessThanOrEqual(1e-9 * Math.max(1, expected));
    }
  });
});
