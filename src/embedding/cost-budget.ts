/**
 * The run's cost cap (`--max-cost`, job file `maxCostUsd`): one CostBudget per run, shared by every
 * request of it, calibration probes included.
 *
 * Before a request is sent, its estimated cost is reserved; the request is refused
 * (BudgetExceededError, nothing sent) when what is spent, plus what requests in flight reserved, plus
 * this estimate would pass the cap. Once its answer is in, the reservation is settled with the actual
 * cost (the gateway's `usage.cost`, else tokens × price); a request that failed unbilled releases it.
 * Once a reservation was refused the budget stays exceeded and refuses every later one, so the run
 * winds down promptly instead of squeezing in the odd small request.
 *
 * The cap holds as long as estimates are upper bounds (the planner's token counts are: the byte
 * bound, or the learned envelope with a margin); an answer costing more than its estimate can only
 * overshoot by that difference, and the next reservations see it.
 *
 * A model without pricing estimates 0: the cap then only counts what answers report as `usage.cost`,
 * after the fact. Requests are sent while anything is left; the first answer that takes the spend to
 * the cap or past it makes the next reservation fail (so such a run may overshoot by the requests in
 * flight at that moment).
 *
 * Single-threaded JavaScript: reserve, settle and release are synchronous, so concurrent requests
 * cannot race between the check and the booking.
 */
import { BudgetExceededError } from '../errors.js';

/**
 * Plain float sums are fine here: costs arrive as decimals (`usage.cost`, or tokens × a decimal
 * price), the cap is compared with a tolerance far below a cent's fraction, and no amount is
 * stored or compared exactly. 1e-12 USD absorbs the noise of summing millions of such terms.
 */
const TOLERANCE_USD = 1e-12;

/** A request's claim on the budget: settled once with what it cost, or released when it was not billed. */
export interface CostReservation {
  /** USD reserved for the request. */
  readonly estimateUsd: number;
  /** The request was billed `actualUsd`: it counts as spent, and its reservation ends. */
  settle(actualUsd: number): void;
  /** The request was not billed (an error answer, no answer): its reservation ends, nothing is spent. */
  release(): void;
}

/**
 * Amounts in messages: enough digits for the tiny per-request costs of embeddings. (Not the
 * manifest's decimal string: output/manifest.ts formatUsd.)
 */
function usdText(usd: number): string {
  if (usd === 0) return '$0';
  return `$${usd >= 0.01 ? usd.toFixed(4) : usd.toPrecision(3)}`;
}

export class CostBudget {
  readonly #capUsd: number;
  #spentUsd = 0;
  #reservedUsd = 0;
  #inFlight = 0;
  #exceeded = false;

  /** @param capUsd the most the run may spend, in USD (≥ 0). */
  constructor(capUsd: number) {
    if (!(Number.isFinite(capUsd) && capUsd >= 0)) {
      throw new RangeError(`a cost cap must be a finite number of USD ≥ 0, got ${capUsd}`);
    }
    this.#capUsd = capUsd;
  }

  get capUsd(): number {
    return this.#capUsd;
  }

  /** USD of the requests settled so far (billed answers). */
  get spentUsd(): number {
    return this.#spentUsd;
  }

  /** USD reserved by requests in flight (exactly 0 when none is). */
  get reservedUsd(): number {
    return this.#reservedUsd;
  }

  /** What a new reservation can still take: the cap less what is spent and in flight, never below 0. */
  get remainingUsd(): number {
    return Math.max(0, this.#capUsd - this.#spentUsd - this.reservedUsd);
  }

  /** A reservation was refused: every later one is refused too. */
  get exceeded(): boolean {
    return this.#exceeded;
  }

  /**
   * Reserves `estimateUsd` for a request about to be sent, or throws BudgetExceededError (send
   * nothing). `what` names the request in the message (e.g. "batch 3f2a… (12 inputs)").
   */
  reserve(estimateUsd: number, what = 'the next request'): CostReservation {
    const estimate = Number.isFinite(estimateUsd) && estimateUsd > 0 ? estimateUsd : 0;
    const left = this.#capUsd - this.#spentUsd - this.reservedUsd;
    // An unpriced request (estimate 0) still costs something: it needs something left.
    const refused = estimate > 0 ? estimate > left + TOLERANCE_USD : left <= TOLERANCE_USD;
    if (refused || this.#exceeded) {
      this.#exceeded = true;
      const inFlight = this.reservedUsd > 0 ? ` (+${usdText(this.reservedUsd)} reserved in flight)` : '';
      const cost = estimate > 0 ? `would cost about ${usdText(estimate)}` : 'has no price estimate';
      throw new BudgetExceededError(
        `cost cap reached (--max-cost ${usdText(this.#capUsd)}): ${usdText(this.#spentUsd)} spent so far` +
          `${inFlight}, and ${what} ${cost}; it was not sent. Everything committed is kept and a re-run ` +
          "resumes from there (the cap counts each run's own spending)",
      );
    }
    this.#reservedUsd += estimate;
    this.#inFlight += 1;
    let open = true;
    const end = (actualUsd: number) => {
      if (!open) return;
      open = false;
      this.#reservedUsd -= estimate;
      this.#inFlight -= 1;
      // Nothing in flight: drop the float residue of adding and removing reservations.
      if (this.#inFlight === 0) this.#reservedUsd = 0;
      if (Number.isFinite(actualUsd) && actualUsd > 0) this.#spentUsd += actualUsd;
    };
    return { estimateUsd: estimate, settle: end, release: () => end(0) };
  }
}
