/** The run's cost cap: CostBudget alone, then the embedder against the emulator over HTTP. */
import { describe, expect, it } from 'vitest';
import type { Batch, Chunk } from '../../src/domain.js';
import { CostBudget } from '../../src/embedding/cost-budget.js';
import { BatchFailedError } from '../../src/embedding/gateway-embedder.js';
import { countPieces, EMULATOR_API_KEY, type EmulatorOptions } from '../../src/emulator/index.js';
import { BudgetExceededError, ExitCode } from '../../src/errors.js';
import { batchOf, textChunk } from '../helpers/chunks.js';
import { testEmbedder, useEmulatorClient } from '../helpers/embedder.js';

/** Thrown by `fn`, for assertions on the error itself. */
function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('CostBudget', () => {
  it('lets concurrent reservations together take the cap, and refuses the one that would pass it', () => {
    const budget = new CostBudget(1);
    const a = budget.reserve(0.4);
    const b = budget.reserve(0.4);
    expect(budget.reservedUsd).toBeCloseTo(0.8, 12);
    expect(budget.remainingUsd).toBeCloseTo(0.2, 12);
    const error = thrownBy(() => budget.reserve(0.3, 'batch x'));
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect((error as BudgetExceededError).exitCode).toBe(ExitCode.budget);
    // The cap, the spend so far, what is in flight and what the request would have cost.
    expect((error as Error).message).toMatch(/--max-cost \$1\.0000\b/);
    expect((error as Error).message).toMatch(/\$0 spent so far \(\+\$0\.8000 reserved in flight\)/);
    expect((error as Error).message).toMatch(/batch x would cost about \$0\.3000; it was not sent/);
    expect(budget.exceeded).toBe(true);
    // Requests already in flight still settle.
    a.settle(0.35);
    b.settle(0.41);
    expect(budget.spentUsd).toBeCloseTo(0.76, 12);
    expect(budget.reservedUsd).toBe(0);
  });

  it('settles with the reported cost, not the estimate; a release spends nothing', () => {
    const budget = new CostBudget(0.01);
    const paid = budget.reserve(0.004);
    paid.settle(0.0015);
    const unbilled = budget.reserve(0.004);
    unbilled.release();
    // Settling or releasing twice is a no-op.
    unbilled.settle(1);
    paid.release();
    expect(budget.spentUsd).toBeCloseTo(0.0015, 12);
    expect(budget.reservedUsd).toBe(0);
    expect(budget.remainingUsd).toBeCloseTo(0.0085, 12);
    expect(budget.capUsd).toBe(0.01);
    expect(budget.exceeded).toBe(false);
  });

  it('a cap reached exactly is not passed: float sums within 1e-12 count as equal', () => {
    const budget = new CostBudget(0.3);
    // 0.1 + 0.2 > 0.3 in binary floating point.
    budget.reserve(0.1).settle(0.1);
    budget.reserve(0.2).settle(0.2);
    expect(budget.spentUsd).toBeGreaterThan(0.3);
    expect(budget.remainingUsd).toBe(0);
    expect(() => budget.reserve(1e-6)).toThrow(BudgetExceededError);
  });

  it('stays exceeded once a reservation was refused, even when money is left', () => {
    const budget = new CostBudget(1);
    const big = budget.reserve(0.9);
    expect(() => budget.reserve(0.5)).toThrow(BudgetExceededError);
    big.release();
    expect(budget.remainingUsd).toBe(1);
    expect(budget.exceeded).toBe(true);
    expect(() => budget.reserve(0.01)).toThrow(BudgetExceededError);
    expect(() => budget.reserve(0)).toThrow(/cost cap reached/);
  });

  it('without a price (estimate 0) counts reported costs only, after the fact', () => {
    const budget = new CostBudget(0.001);
    // Nothing to reserve, so concurrent unpriced requests all go while something is left...
    const first = budget.reserve(0);
    const second = budget.reserve(0);
    expect(budget.reservedUsd).toBe(0);
    first.settle(0.0008);
    second.settle(0.0008);
    // ...and the answer that took the spend past the cap makes the next reservation fail.
    expect(budget.spentUsd).toBeCloseTo(0.0016, 12);
    expect(() => budget.reserve(0)).toThrow(/has no price estimate; it was not sent/);
    expect(budget.exceeded).toBe(true);
  });

  it('a cap of 0 sends nothing, priced or not; a bad cap is refused', () => {
    expect(() => new CostBudget(0).reserve(0)).toThrow(BudgetExceededError);
    expect(() => new CostBudget(0).reserve(1e-9)).toThrow(BudgetExceededError);
    expect(() => new CostBudget(-1)).toThrow(RangeError);
    expect(() => new CostBudget(Number.NaN)).toThrow(RangeError);
  });
});

// --- the embedder, against the emulator over HTTP --------------------------------------------------

const MODEL = 'emu/embed-small';
const PRICE = 0.00000002; // emu/embed-small's price per prompt token

/** A chunk whose planned tokens are exactly what the emulator will count, so estimates are exact. */
const chunk = (documentId: string, text: string): Chunk =>
  textChunk(documentId, 0, text, countPieces(text), `h-${documentId}`);

/** Batch `n`: 8 texts of 60 words of 2 pieces each (960 tokens, $0.0000192). */
function batch(n: number): Batch {
  const chunks = Array.from({ length: 8 }, (_, i) =>
    chunk(`doc-${n}-${i}`, Array.from({ length: 60 }, (_, w) => `w${n}x${i}y${w}`).join(' ')),
  );
  return batchOf(`batch-${n}`, MODEL, chunks);
}
const BATCH_COST = batch(0).tokens * PRICE;

const gateway = useEmulatorClient();

function embedder(budget: CostBudget, options: { priced?: boolean; maxAttempts?: number } = {}) {
  return testEmbedder(gateway.client, {
    model: MODEL,
    maxAttempts: options.maxAttempts ?? 4,
    maxDelayMs: 5,
    ...(options.priced === false ? {} : { pricePerToken: PRICE }),
    budget,
  });
}

/** Embedding requests the emulator received, and the USD it charged the key. */
function gatewaySaw(): { requests: number; spend: number } {
  const { emulator } = gateway;
  const label = emulator.keyLabel(EMULATOR_API_KEY)!;
  return {
    requests: emulator.requests.filter((r) => r.path === '/embeddings').length,
    spend: emulator.stats.spend[label] ?? 0,
  };
}

function fresh(options: EmulatorOptions = {}): void {
  gateway.emulator.reset(options);
}

const signal = new AbortController().signal;

describe('GatewayEmbedder with a cost cap', () => {
  it('the batches are what the test thinks: every planned token is one the emulator counts', () => {
    expect(batch(0).tokens).toBe(960);
    expect(batch(7).tokens).toBe(960);
    expect(BATCH_COST).toBeCloseTo(0.0000192, 12);
  });

  it('sends batches while the cap allows and stops before the one that would pass it', async () => {
    fresh();
    const budget = new CostBudget(BATCH_COST * 3.5);
    const { instance, stats } = embedder(budget);
    let sent = 0;
    let error: unknown;
    for (let n = 0; n < 10; n++) {
      try {
        await instance.embedBatch(batch(n), signal);
        sent++;
      } catch (caught) {
        error = caught;
        break;
      }
    }
    expect(sent).toBe(3);
    // Propagated as it is: not retried, not wrapped as a failed batch (which a run would carry on past).
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect(error).not.toBeInstanceOf(BatchFailedError);
    expect(stats.retries).toBe(0);
    expect((error as Error).message).toMatch(/request of 8 inputs \(batch batch-3\) would cost about/);
    // The gateway saw three requests and charged what the budget counted, within the cap.
    const saw = gatewaySaw();
    expect(saw.requests).toBe(3);
    expect(budget.spentUsd).toBeCloseTo(saw.spend, 12);
    expect(budget.spentUsd).toBeCloseTo(stats.cost, 12);
    expect(budget.spentUsd).toBeLessThanOrEqual(budget.capUsd);
    // Exceeded for good: later batches and calibration probes are refused without a request.
    expect(budget.exceeded).toBe(true);
    await expect(instance.embedBatch(batch(9), signal)).rejects.toBeInstanceOf(BudgetExceededError);
    await expect(instance.measure('probe text', signal)).rejects.toBeInstanceOf(BudgetExceededError);
    expect(gatewaySaw().requests).toBe(3);
  });

  it('concurrent batches: reservations in flight count, so no request beyond the cap is sent', async () => {
    fresh();
    const budget = new CostBudget(BATCH_COST * 3.5);
    const { instance } = embedder(budget);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 16 }, (_, n) => instance.embedBatch(batch(n), signal)),
    );
    const done = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(done).toHaveLength(3);
    expect(refused).toHaveLength(13);
    for (const o of refused) expect((o as PromiseRejectedResult).reason).toBeInstanceOf(BudgetExceededError);
    const saw = gatewaySaw();
    expect(saw.requests).toBe(3);
    expect(saw.spend).toBeLessThanOrEqual(budget.capUsd);
    expect(budget.spentUsd).toBeCloseTo(saw.spend, 12);
    expect(budget.reservedUsd).toBe(0);
  });

  it('a retried request reserves again; an unbilled failure releases its reservation', async () => {
    // Faulted requests are not charged by the emulator: the 500 and the 502 release what they
    // reserved, so a cap of one request and a half still lets the third attempt through.
    fresh({ faults: { script: ['500', '502'] } });
    const budget = new CostBudget(BATCH_COST * 1.5);
    const { instance, stats } = embedder(budget);
    const result = await instance.embedBatch(batch(0), signal);
    expect(result.chunks).toHaveLength(8);
    expect(stats.retries).toBe(2);
    expect(gatewaySaw().requests).toBe(3);
    expect(budget.spentUsd).toBeCloseTo(BATCH_COST, 12);
    expect(budget.reservedUsd).toBe(0);
  });

  it('a 2xx the client refused still costs: its retry is refused by the cap, not sent', async () => {
    // An empty `data` is retryable, but the gateway may have billed it: the client counts it at the
    // estimate, and the retry would then pass the cap.
    fresh({ faults: { script: ['empty'] } });
    const budget = new CostBudget(BATCH_COST * 1.5);
    const { instance, stats } = embedder(budget);
    const error = await instance.embedBatch(batch(0), signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect(gatewaySaw().requests).toBe(1);
    expect(budget.spentUsd).toBeCloseTo(BATCH_COST, 12);
    expect(stats.cost).toBeCloseTo(BATCH_COST, 12);
  });

  it('calibration probes are budgeted too', async () => {
    fresh();
    const budget = new CostBudget(1);
    const { instance } = embedder(budget);
    const measured = await instance.measure('a probe, its cost is counted', signal);
    expect(measured.tokens).toBeGreaterThan(0);
    expect(budget.spentUsd).toBeCloseTo(measured.cost, 12);
    expect(budget.spentUsd).toBeGreaterThan(0);
  });

  it('without pricing, the cost the answers report stops the run after the fact', async () => {
    fresh();
    // Less than one batch: unknown in advance, so the first goes; its reported cost passes the cap.
    const budget = new CostBudget(BATCH_COST / 2);
    const { instance } = embedder(budget, { priced: false });
    await instance.embedBatch(batch(0), signal);
    expect(budget.spentUsd).toBeCloseTo(BATCH_COST, 12);
    await expect(instance.embedBatch(batch(1), signal)).rejects.toThrow(/has no price estimate/);
    expect(gatewaySaw().requests).toBe(1);
  });
});
