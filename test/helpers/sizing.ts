import { BYTE_BOUND_WEIGHTS, TokenCalibration } from '../../src/chunking/index.js';
import { RunSizing } from '../../src/chunking/run-sizing.js';

/**
 * A run's sizing for `model` that believes the gateway counts `tokensPerByte` of every byte
 * (deliberately wrong in some tests, to see the run learn).
 */
export function sizingFor(
  model: string,
  budgetTokens: number,
  tokensPerByte: number,
  contextLength?: number,
): RunSizing {
  return new RunSizing({
    model,
    calibration: new TokenCalibration(model, budgetTokens, [
      {
        fromDocument: 0,
        weights: BYTE_BOUND_WEIGHTS.map((w) => w * tokensPerByte),
        budgetTokens,
        reason: 'probes',
      },
    ]),
    overlapTokens: 0,
    contextLength,
    margin: 0.1,
  });
}
