/**
 * Tells a refused input from a refused request. A 400 on a batch is normally about one of its
 * inputs, and the embedder halves the batch until that input is alone. But a gateway that refuses
 * everything for a while (a bad deploy, a parameter it stopped accepting) answers every half with
 * a 400 too, and halving then turns one batch into a storm of requests down to single inputs,
 * each failing. So the run counts 400s in a row, across all its batches: once several came with no
 * answer accepted in between, the embedder asks the gateway one plain question: a probe, a short
 * input any model takes. Accepted: the refused inputs are the problem, and halving goes on. Refused
 * too: the request shape is the problem, so the embedder stops halving, backs off (doubling, shared
 * by the run through the key's gate) and sends the same group again; the first accepted answer
 * ends the storm.
 */
export interface RefusalPolicy {
  /** 400s in a row, run-wide, that make a storm. */
  readonly threshold: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export class RefusalStorm {
  readonly #policy: RefusalPolicy;
  readonly #now: () => number;
  #inARow = 0;
  #backOffs = 0;
  #backingOffUntil = 0;
  #probing: Promise<boolean> | undefined;

  constructor(policy: RefusalPolicy, now: () => number = Date.now) {
    this.#policy = policy;
    this.#now = now;
  }

  accepted(): void {
    this.#inARow = 0;
    this.#backOffs = 0;
  }

  refused(): void {
    this.#inARow += 1;
  }

  get raging(): boolean {
    return this.#inARow >= this.#policy.threshold;
  }

  /**
   * Whether the gateway refuses a plain input too (`accepts` sends the probe): one probe at a time,
   * shared by the batches that ask meanwhile.
   */
  refusesEverything(accepts: () => Promise<boolean>): Promise<boolean> {
    this.#probing ??= accepts()
      .then((accepted) => !accepted)
      .finally(() => {
        this.#probing = undefined;
      });
    return this.#probing;
  }

  /**
   * How long every request of the run waits now. Doubles with each back-off the run takes; batches
   * that meet the same storm while a back-off is running share it instead of doubling again.
   */
  backOff(): { delayMs: number; fresh: boolean } {
    const now = this.#now();
    const { baseDelayMs, maxDelayMs } = this.#policy;
    if (now < this.#backingOffUntil) return { delayMs: this.#backingOffUntil - now, fresh: false };
    const delayMs = Math.min(maxDelayMs, baseDelayMs * 2 ** this.#backOffs);
    this.#backOffs += 1;
    this.#backingOffUntil = now + delayMs;
    return { delayMs, fresh: true };
  }
}

/**
 * The inputs-per-request limit a 400 states when the request had too many inputs ("Too many
 * inputs: 16 > max_inputs_per_request 8", "input has 16 items; m accepts at most 8 per request"):
 * a number below what was sent, in a message about inputs and a maximum. Undefined otherwise.
 */
export function statedInputLimit(message: string, sent: number): number | undefined {
  if (!/\b(inputs?|items?)\b/i.test(message) || !/max|at most|limit|too many|exceed/i.test(message))
    return undefined;
  const numbers = [...message.matchAll(/\d+/g)].map((match) => Number(match[0]));
  if (!numbers.includes(sent)) return undefined;
  const below = numbers.filter((n) => n >= 1 && n < sent);
  return below.length > 0 ? Math.max(...below) : undefined;
}
