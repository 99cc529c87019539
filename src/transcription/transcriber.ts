/**
 * Speech to text through the gateway's `/audio/transcriptions`, with the run's HTTP retry policy:
 * retryable answers (408/429/5xx/524/529, network errors, a broken 2xx) go through withRetry; the
 * client holds the key's Retry-After wait (a 429 holds back every request of the run, embeddings
 * and transcriptions alike) and its in-flight window. A 402 (credits), 401 or 404 is thrown as is:
 * fatal for the run. A request already sent is never cancelled (it is paid for): `signal` stops
 * retries and waits only (the client's too).
 */
import type { AudioFormat } from '../domain.js';
import type { GatewayClient, TranscriptionResult } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import { type RetryPolicy, withRetry } from '../retry/index.js';

/** What a request reserves and settles against a run's cost cap (embedding/cost-budget.ts has one). */
export interface SpendingCap {
  reserve(estimateUsd: number, what?: string): { settle(actualUsd: number): void; release(): void };
}

export interface TranscriberOptions {
  readonly client: GatewayClient;
  /** `<provider>/<model_name>`. */
  readonly model: string;
  readonly language?: string | undefined;
  readonly temperature?: number | undefined;
  readonly providerOptions?: Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined;
  readonly retry: { readonly maxAttempts: number; readonly baseDelayMs: number; readonly maxDelayMs: number };
  readonly logger: Logger;
  /** USD per second of audio, when known: what a request reserves against `budget`. */
  readonly pricePerSecond?: number | undefined;
  readonly budget?: SpendingCap | undefined;
  /** Told of every attempt sent and every retry (for the run's counters). */
  readonly onRequest?: () => void;
  readonly onRetry?: () => void;
  /** Backoff's timers and jitter (Retry-After waits are the client's). */
  readonly clock?: Partial<Pick<RetryPolicy, 'sleep' | 'random'>>;
}

export interface Transcript {
  readonly text: string;
  /** Seconds of audio the gateway reported (usage.seconds), else undefined. */
  readonly seconds?: number;
  /** USD the gateway reported (usage.cost), else estimated from `pricePerSecond` × seconds, else 0. */
  readonly cost: number;
  /** Whether `cost` is the gateway's own figure. */
  readonly costReported: boolean;
  readonly requests: number;
  readonly retries: number;
}

export class GatewayTranscriber {
  readonly #options: TranscriberOptions;

  constructor(options: TranscriberOptions) {
    this.#options = options;
  }

  get model(): string {
    return this.#options.model;
  }

  /**
   * One audio file's transcript. `seconds` (the duration read from its header, when known) sizes
   * the cost reservation; `what` names the file in logs and cap messages.
   */
  async transcribe(
    audio: { readonly data: Buffer; readonly format: AudioFormat; readonly seconds?: number | undefined },
    what: string,
    signal: AbortSignal,
  ): Promise<Transcript> {
    const { client, model, language, temperature, providerOptions, retry, logger, budget } = this.#options;
    const price = this.#options.pricePerSecond;
    const estimateUsd = price !== undefined && audio.seconds !== undefined ? price * audio.seconds : 0;
    let requests = 0;
    let retries = 0;
    const { answer, cost } = await withRetry(
      async () => {
        // Before anything is sent: a refused reservation sends nothing (and is not retried).
        const reservation = budget?.reserve(estimateUsd, `the transcription of ${what}`);
        requests += 1;
        this.#options.onRequest?.();
        let answer: TranscriptionResult;
        try {
          // `signal` stops the waits before sending, not a request already sent: it is paid for.
          answer = await client.transcribe(
            {
              model,
              audio: { data: audio.data, format: audio.format },
              ...(language !== undefined ? { language } : {}),
              ...(temperature !== undefined ? { temperature } : {}),
              ...(providerOptions !== undefined
                ? { providerOptions: providerOptions as Record<string, Record<string, unknown>> }
                : {}),
            },
            { signal, letRequestFinish: true },
          );
        } catch (error) {
          reservation?.release();
          throw error;
        }
        const cost = costOf(answer, price);
        reservation?.settle(cost);
        return { answer, cost };
      },
      {
        ...retry,
        ...this.#options.clock,
        signal,
        letAttemptFinish: true,
        onRetry: (error, attempt, delayMs) => {
          retries += 1;
          this.#options.onRetry?.();
          logger.debug({ audio: what, attempt, delayMs }, String((error as Error).message));
        },
      },
    );
    const seconds = answer.usage?.seconds;
    return {
      text: answer.text,
      ...(seconds !== undefined ? { seconds } : {}),
      cost,
      costReported: answer.usage?.cost !== undefined,
      requests,
      retries,
    };
  }
}

/** The answer's cost: the gateway's, else its seconds at the known price, else 0. */
function costOf(answer: TranscriptionResult, pricePerSecond: number | undefined): number {
  if (answer.usage?.cost !== undefined) return answer.usage.cost;
  if (pricePerSecond !== undefined && answer.usage?.seconds !== undefined)
    return answer.usage.seconds * pricePerSecond;
  return 0;
}
