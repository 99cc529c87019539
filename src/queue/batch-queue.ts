/**
 * The seam between the producer (planning) and the consumers (embedding + writing). The in-process
 * queue lives here; the BullMQ queue implements the same contract for distributed runs.
 */
import type { Batch } from '../domain.js';

/**
 * Handles one batch to completion. A thrown error is fatal for the whole run (402, 401, …). The
 * signal says the run is stopping: start nothing new, but finish (and keep) what is already paid for.
 */
export type BatchHandler = (batch: Batch, signal: AbortSignal) => Promise<void>;

export interface BatchQueue {
  /** Hands a batch over; resolves once there is room for more (backpressure), not when it is done. */
  push(batch: Batch): Promise<void>;
  /** Resolves when every pushed batch was handled; rejects with the first fatal error. */
  drain(): Promise<void>;
  /** Stops the run: no new batch starts; batches in flight see the aborted signal and wind down. */
  abort(reason: Error): void;
}
