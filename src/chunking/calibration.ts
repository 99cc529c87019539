/**
 * The relation between a text's UTF-8 bytes and the gateway's token count, learned from what the
 * gateway reports. `context_length` is in the gateway model's tokens, which the client cannot
 * compute (its tokenizer is the provider's), so chunks are sized in bytes from an upper envelope of
 * "gateway tokens per byte":
 *
 * - Before any evidence the envelope is 1 token per byte: a byte-level tokenizer never yields more
 *   tokens than bytes, so nothing planned with it can be cut.
 * - Calibration probes (single inputs of the corpus's own text) set it to the largest ratio seen.
 * - Every later answer is checked: a request's usage over its bytes above the envelope raises it
 *   (with headroom, since one input of the request was above the average), and so does a
 *   rejection naming an input's count, or a single input whose usage reached the context length.
 *
 * Raising opens an epoch: documents planned from then on use the new ratio, while those planned
 * before keep theirs, so a re-run given the same epochs plans the same chunks and resumes.
 */
import { MIN_SPAN_BYTES } from './spans.js';

export interface CalibrationEpoch {
  /** Ordinal (0-based, in corpus order) of the first document planned with this ratio. */
  readonly fromDocument: number;
  /** Envelope of gateway tokens per UTF-8 byte. */
  readonly tokensPerByte: number;
  /** Gateway tokens per chunk: the run's budget, lower once a rejection named a smaller limit. */
  readonly budgetTokens: number;
  /** Why it changed: "prior", "probes", "usage", "rejection", "cut", "limit". */
  readonly reason: string;
}

export interface CalibrationState {
  readonly version: 1;
  readonly model: string;
  /** The run's chunk budget in gateway tokens (context length less the margin, or --max-tokens). */
  readonly budgetTokens: number;
  readonly epochs: readonly CalibrationEpoch[];
}

/** One evidence of how the gateway counts. */
export interface TokenObservation {
  readonly bytes: number;
  readonly tokens: number;
  /** A single input: its ratio is an exact point, not an average over a request. */
  readonly single: boolean;
}

/** Below this many bytes, per-request overhead tokens (BOS/EOS) swamp the ratio: no learning. */
const MIN_EVIDENCE_BYTES = 256;
/** Headroom over a single input's exact ratio (other texts of the same script vary a little). */
const SINGLE_HEADROOM = 1.05;
/** Headroom over a request's average ratio: some input of it was above the average. */
const AVERAGE_HEADROOM = 1.15;
/** The prior: a byte-level tokenizer counts at most one token per byte. */
export const BYTE_BOUND = 1;

export class TokenCalibration {
  readonly model: string;
  readonly budgetTokens: number;
  readonly #epochs: CalibrationEpoch[];
  #changed = false;

  constructor(model: string, budgetTokens: number, epochs?: readonly CalibrationEpoch[]) {
    this.model = model;
    this.budgetTokens = budgetTokens;
    this.#epochs =
      epochs && epochs.length > 0
        ? [...epochs]
        : [{ fromDocument: 0, tokensPerByte: BYTE_BOUND, budgetTokens, reason: 'prior' }];
  }

  /** A state persisted by an earlier run, when it was made for the same model and budget. */
  static restore(state: CalibrationState | undefined, model: string, budgetTokens: number): TokenCalibration {
    const usable = state?.version === 1 && state.model === model && state.budgetTokens === budgetTokens;
    return new TokenCalibration(model, budgetTokens, usable ? state.epochs : undefined);
  }

  get epochs(): readonly CalibrationEpoch[] {
    return this.#epochs;
  }

  /** True until probes or usage taught anything: chunks are then sized by the byte bound. */
  get isPrior(): boolean {
    return this.#epochs.length === 1 && this.#epochs[0]!.reason === 'prior';
  }

  /** The epoch in force now: what every chunk about to be sent is checked against. */
  get current(): CalibrationEpoch {
    return this.#epochs.at(-1)!;
  }

  /** The epoch a document is planned with. */
  epochFor(documentOrdinal: number): CalibrationEpoch {
    for (let i = this.#epochs.length - 1; i > 0; i--) {
      if (this.#epochs[i]!.fromDocument <= documentOrdinal) return this.#epochs[i]!;
    }
    return this.#epochs[0]!;
  }

  /** Bytes per chunk in `epoch`. */
  chunkBytes(epoch: CalibrationEpoch): number {
    return Math.max(MIN_SPAN_BYTES, Math.floor(epoch.budgetTokens / epoch.tokensPerByte));
  }

  /** Whether a text of `bytes` bytes fits the budget under the current envelope. */
  fits(bytes: number): boolean {
    const { tokensPerByte, budgetTokens } = this.current;
    return bytes * tokensPerByte <= budgetTokens;
  }

  /** Sets the envelope from calibration probes (ratios of single inputs); before any planning. */
  calibrate(observations: readonly TokenObservation[]): void {
    const ratios = observations.filter(usable).map((o) => o.tokens / o.bytes);
    if (ratios.length === 0) return;
    const tokensPerByte = Math.min(BYTE_BOUND, Math.max(...ratios) * SINGLE_HEADROOM);
    const { budgetTokens } = this;
    this.#epochs.splice(0, this.#epochs.length, { fromDocument: 0, tokensPerByte, budgetTokens, reason: 'probes' });
    this.#changed = true;
  }

  /**
   * Learns from one answer; `nextDocument` is the ordinal of the next document the planner will
   * read (where a new epoch starts). Returns true when the envelope rose.
   */
  observe(observation: TokenObservation, nextDocument: number, reason = 'usage'): boolean {
    if (!usable(observation)) return false;
    const headroom = observation.single ? SINGLE_HEADROOM : AVERAGE_HEADROOM;
    const ratio = observation.tokens / observation.bytes;
    const current = this.current.tokensPerByte;
    if (ratio <= current) return false;
    // A cut input's usage is the context length, not its count: the truth is higher by an unknown
    // amount, so the envelope at least doubles (a few steps reach any ratio up to the byte bound).
    const floor = reason === 'cut' ? current * 2 : 0;
    this.#open({ ...this.current, tokensPerByte: Math.max(ratio * headroom, floor), reason }, nextDocument);
    return true;
  }

  /**
   * A rejection named the model's limit: when it is below what the budget assumed (a model that
   * lists no context length, or lists it wrong), the budget becomes the limit less `margin`.
   */
  limitStated(limitTokens: number, margin: number, nextDocument: number): boolean {
    const budgetTokens = Math.max(1, Math.floor(limitTokens * (1 - margin)));
    if (budgetTokens >= this.current.budgetTokens) return false;
    this.#open({ ...this.current, budgetTokens, reason: 'limit' }, nextDocument);
    return true;
  }

  #open(epoch: CalibrationEpoch, nextDocument: number): void {
    const last = this.current;
    const fromDocument = Math.max(nextDocument, last.fromDocument);
    // No document was planned with the last epoch yet: replace it.
    if (fromDocument === last.fromDocument && this.#epochs.length > 1) this.#epochs.pop();
    else if (fromDocument === last.fromDocument) this.#epochs.length = 0;
    this.#epochs.push({ ...epoch, fromDocument });
    this.#changed = true;
  }

  /** True once since the last call when the epochs changed (the caller persists them). */
  takeChange(): boolean {
    const changed = this.#changed;
    this.#changed = false;
    return changed;
  }

  state(): CalibrationState {
    return { version: 1, model: this.model, budgetTokens: this.budgetTokens, epochs: [...this.#epochs] };
  }
}

function usable(observation: TokenObservation): boolean {
  return observation.bytes >= MIN_EVIDENCE_BYTES && observation.tokens > 0;
}
