/**
 * How the gateway counts tokens, learned from what it reports. `context_length` is in the gateway
 * model's tokens, which the client cannot compute (the tokenizer is the provider's), so chunks are
 * sized by an estimate linear in a text's character classes (profile.ts), whose weights are an
 * upper envelope of what the gateway was seen to count:
 *
 * - Before any evidence the weights are the byte bound (one token per UTF-8 byte): a byte-level
 *   tokenizer never counts more, so nothing planned with it can be cut.
 * - Calibration probes (single inputs of the corpus's own text, chosen to cover its features) are
 *   fitted by least squares (non-negative, pulled towards the byte bound scaled to the overall
 *   ratio where the evidence cannot tell features apart), then scaled up until every observation is
 *   covered, plus headroom. A feature no single input measured (see MEASURED_SHARE) keeps its
 *   byte-bound weight: a script met later is sized safely until a probe of it is measured.
 * - Every later answer is checked: usage above the estimate of what was sent refits the weights
 *   (with the new evidence) and opens a new epoch; so does a rejection naming a count, or a single
 *   input whose usage reached the context length (it was cut: its real count is higher).
 *
 * Epochs start at a document: documents planned before a change keep their weights, so a re-run
 * given the same epochs plans the same chunks and resumes (epoch-replay.ts places them by document
 * id, so a corpus edited before an epoch's start does not move it). Documents a run re-planned are
 * kept with the epoch they were re-planned under, and planned so by later runs.
 */
import { type CalibrationEpoch, EpochReplay, unplaced } from './epoch-replay.js';
import { BYTE_BOUND_WEIGHTS, CLASS_COUNT, estimate, profileOf, type Weights } from './profile.js';

/** The most a fitted weight may be: twice the byte bound (4 tokens for a word start). */
const FIT_CEILING: Weights = BYTE_BOUND_WEIGHTS.map((w) => (w === 0 ? 4 : 2 * w));
/**
 * A feature is measured once a single input held at least MEASURED_SHARE of it (of its characters;
 * the ASCII features count as one group): then the fit can tell its weight from the others'.
 * Mixed texts cannot (an emoji ZWJ sequence is half emoji, half joiners).
 */
export const MEASURED_SHARE = 0.5;
/** ASCII features (alnum, word, symbol, space): measured together. */
export const ASCII_FEATURES = 4;

export interface CalibrationState {
  readonly version: 2;
  readonly model: string;
  /** The run's chunk budget in gateway tokens (context length less the margin, or --max-tokens). */
  readonly budgetTokens: number;
  readonly epochs: readonly CalibrationEpoch[];
  /**
   * The single-input evidence (probes, one-input requests) behind the epochs. Restored with them,
   * so a re-run knows which features were measured and refits from the same points: without it a
   * re-run probed a script again, refitted from that probe alone and planned later documents
   * differently (a finished dataset re-sent two documents).
   */
  readonly singles?: readonly TokenObservation[];
  /** Inputs per request the gateway stated it accepts (a 400 said so): later runs keep under it. */
  readonly maxInputs?: number;
  /**
   * Documents a run re-planned (a chunk over an envelope it learned, cut, or rejected), under the
   * weights and budget it re-planned them with. Later runs, and a fresh run given this calibration,
   * plan them so from the start: their rows are the re-plan's (see RunSizing.plan).
   */
  readonly replans?: readonly ReplanRecord[];
}

/** Documents re-planned under one epoch's weights and budget. */
export interface ReplanRecord {
  readonly weights: Weights;
  readonly budgetTokens: number;
  readonly ids: readonly string[];
}

/** One piece of evidence of how the gateway counts: what was sent (class counts) and its usage. */
export interface TokenObservation {
  readonly profile: readonly number[];
  readonly tokens: number;
  /** A single input: an exact point, not a sum over a request. */
  readonly single: boolean;
}

/** Below this many characters, per-request overhead tokens (BOS/EOS) swamp the evidence. */
const MIN_EVIDENCE_CHARS = 64;
/** Headroom over the fitted envelope: texts not yet seen vary a little around those seen. */
const HEADROOM = 1.05;
/** Usage within this much of the estimate is not news (rounding, per-request overhead). */
const TOLERANCE = 1.01;
/** Batch observations kept for refits (singles are all kept: they are few and exact). */
const MAX_BATCH_OBSERVATIONS = 512;

export class TokenCalibration {
  readonly model: string;
  readonly budgetTokens: number;
  readonly #epochs: CalibrationEpoch[];
  /** Replays the epochs the run started from; #epochs past its restoredCount are ones it opened. */
  #replay: EpochReplay;
  readonly #singles: TokenObservation[];
  readonly #batches: TokenObservation[] = [];
  #changed = false;
  #maxInputs: number | undefined;
  /** Documents re-planned by this run or an earlier one: the epoch each was re-planned under. */
  readonly #replans = new Map<string, CalibrationEpoch>();
  /** Restored re-plans of documents this run has not planned (yet): a deleted document's go at the corpus's end. */
  readonly #unplannedReplans = new Set<string>();
  /** measured() of the current epoch and evidence (it runs once per document planned). */
  #measured: { epoch: CalibrationEpoch; singles: number; features: readonly boolean[] } | undefined;

  constructor(
    model: string,
    budgetTokens: number,
    epochs?: readonly CalibrationEpoch[],
    singles: readonly TokenObservation[] = [],
  ) {
    this.model = model;
    this.budgetTokens = budgetTokens;
    // (Not push(...singles): a long restored list would overflow the call's arguments.)
    this.#singles = [...singles];
    this.#epochs =
      epochs && epochs.length > 0
        ? [...epochs]
        : [{ fromDocument: 0, weights: BYTE_BOUND_WEIGHTS, budgetTokens, reason: 'prior' }];
    this.#replay = new EpochReplay(this.#epochs);
  }

  /** A state persisted by an earlier run, when it was made for the same model and budget. */
  static restore(state: CalibrationState | undefined, model: string, budgetTokens: number): TokenCalibration {
    const usable = state?.version === 2 && state.model === model && state.budgetTokens === budgetTokens;
    if (!usable) return new TokenCalibration(model, budgetTokens);
    const restored = new TokenCalibration(model, budgetTokens, state.epochs, state.singles ?? []);
    if (state.maxInputs !== undefined) restored.#maxInputs = state.maxInputs;
    for (const { weights, budgetTokens: budget, ids } of state.replans ?? []) {
      const epoch: CalibrationEpoch = { fromDocument: 0, weights, budgetTokens: budget, reason: 'replan' };
      for (const id of ids) {
        restored.#replans.set(id, epoch);
        restored.#unplannedReplans.add(id);
      }
    }
    return restored;
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

  /** The epoch a document is planned with; called once per document, in corpus order. */
  epochFor(documentOrdinal: number, documentId: string): CalibrationEpoch {
    return this.#replay.epochFor(documentOrdinal, documentId, this.#epochs);
  }

  /**
   * True once this run opened an epoch (evidence the calibration it started from did not hold):
   * until then every document is cut as the dataset's earlier runs cut it.
   */
  get openedHere(): boolean {
    return this.#epochs.length > this.#replay.restoredCount;
  }

  /** The epoch a run re-planned the document under, when one did; the planner calls it once per document. */
  replanOf(documentId: string): CalibrationEpoch | undefined {
    const epoch = this.#replans.get(documentId);
    if (epoch !== undefined) this.#unplannedReplans.delete(documentId);
    return epoch;
  }

  /** Whether a run re-planned the document (without counting it planned). */
  isReplanned(documentId: string): boolean {
    return this.#replans.has(documentId);
  }

  /** A document re-planned under `epoch`: persisted, so that later runs plan it so from the start. */
  recordReplan(documentId: string, epoch: CalibrationEpoch): void {
    this.#unplannedReplans.delete(documentId);
    if (this.#replans.get(documentId) === epoch) return;
    this.#replans.set(documentId, epoch);
    this.#changed = true;
  }

  /** The corpus ended: re-plans of documents it no longer holds are forgotten. */
  corpusEnded(): void {
    if (this.#unplannedReplans.size === 0) return;
    for (const id of this.#unplannedReplans) this.#replans.delete(id);
    this.#unplannedReplans.clear();
    this.#changed = true;
  }

  /** The current estimate of a text's gateway tokens. */
  estimate(text: string): number {
    return estimate(profileOf(text), this.current.weights);
  }

  /** Whether a text fits the budget under the current envelope. */
  fits(text: string): boolean {
    return this.estimate(text) <= this.current.budgetTokens;
  }

  /** Sets the envelope from calibration probes (single inputs); before any planning. */
  calibrate(observations: readonly TokenObservation[]): void {
    for (const observation of observations) if (usable(observation)) this.#singles.push(observation);
    if (this.#singles.length === 0) return;
    const { budgetTokens } = this;
    this.#epochs.splice(0, this.#epochs.length, {
      fromDocument: 0,
      weights: this.#fit(),
      budgetTokens,
      reason: 'probes',
    });
    // Before any document is planned: the run starts from this epoch.
    this.#replay = new EpochReplay(this.#epochs);
    this.#changed = true;
  }

  /**
   * Learns from one answer; `nextDocument` is the ordinal of the next document the planner will
   * read (where a new epoch starts). Returns true when the envelope changed.
   */
  observe(observation: TokenObservation, nextDocument: number, reason = 'usage'): boolean {
    if (!usable(observation)) return false;
    const cut = reason === 'cut';
    // A cut input's usage is the context length, not its count: the truth is higher by an unknown
    // amount, so it is taken at twice its estimate at least (a few steps reach any real count).
    const tokens = cut
      ? Math.max(observation.tokens, 2 * estimate(observation.profile, this.current.weights))
      : observation.tokens;
    const evidence = { ...observation, tokens };
    (evidence.single ? this.#singles : this.#batches).push(evidence);
    if (this.#batches.length > MAX_BATCH_OBSERVATIONS) this.#batches.shift();
    if (tokens <= estimate(observation.profile, this.current.weights) * TOLERANCE) return false;
    this.#open({ ...this.current, weights: this.#fit(), reason }, nextDocument);
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

  /**
   * True once since the last call when the epochs changed, or where this run's documents place them
   * (the caller persists them: the next run replays them by those documents).
   */
  takeChange(): boolean {
    // Both taken: neither may stay pending behind the other.
    const moved = this.#replay.takeMove();
    const changed = this.#changed || moved;
    this.#changed = false;
    return changed;
  }

  state(): CalibrationState {
    return {
      version: 2,
      model: this.model,
      budgetTokens: this.budgetTokens,
      epochs: this.#replay.placed(this.#epochs.slice(this.#replay.restoredCount)),
      singles: [...this.#singles],
      ...(this.#maxInputs !== undefined ? { maxInputs: this.#maxInputs } : {}),
      ...(this.#replans.size > 0 ? { replans: this.#replanRecords() } : {}),
    };
  }

  /** The re-plans grouped by epoch (documents re-planned at one moment share theirs). */
  #replanRecords(): ReplanRecord[] {
    const byEpoch = new Map<CalibrationEpoch, string[]>();
    for (const [id, epoch] of this.#replans) {
      let ids = byEpoch.get(epoch);
      if (ids === undefined) {
        ids = [];
        byEpoch.set(epoch, ids);
      }
      ids.push(id);
    }
    return [...byEpoch].map(([{ weights, budgetTokens }, ids]) => ({ weights, budgetTokens, ids }));
  }

  /** Inputs per request the gateway stated it accepts; undefined while none did. */
  get maxInputs(): number | undefined {
    return this.#maxInputs;
  }

  /** A 400 stated this inputs-per-request limit: kept, and persisted with the calibration. */
  learnMaxInputs(limit: number): void {
    if (this.#maxInputs !== undefined && this.#maxInputs <= limit) return;
    this.#maxInputs = limit;
    this.#changed = true;
  }

  #open(epoch: CalibrationEpoch, nextDocument: number): void {
    // An epoch this run opened that no document was planned with yet is replaced. (A restored
    // epoch's ordinal is the earlier run's: it says nothing of this run's documents.)
    const last = this.current;
    const opened = this.#epochs.length > this.#replay.restoredCount;
    const fromDocument = opened ? Math.max(nextDocument, last.fromDocument) : nextDocument;
    if (opened && fromDocument === last.fromDocument) this.#epochs.pop();
    this.#epochs.push({ ...unplaced(epoch), fromDocument });
    this.#changed = true;
  }

  /** Features some single input measured (see MEASURED_SHARE). */
  measured(): readonly boolean[] {
    if (this.#measured?.epoch === this.current && this.#measured.singles === this.#singles.length) {
      return this.#measured.features;
    }
    const shares = new Array<number>(CLASS_COUNT).fill(0);
    for (const o of this.#singles) {
      featureShares(o.profile).forEach((share, k) => {
        shares[k] = Math.max(shares[k]!, share);
      });
    }
    // Restored epochs measured what their weights moved off the byte bound.
    const current = this.isPrior ? BYTE_BOUND_WEIGHTS : this.current.weights;
    const features = shares.map(
      (share, k) => share >= MEASURED_SHARE || current[k]! !== BYTE_BOUND_WEIGHTS[k]!,
    );
    this.#measured = { epoch: this.current, singles: this.#singles.length, features };
    return features;
  }

  /** Learns a probe of a feature not measured yet (lazy calibration); returns true when the weights changed. */
  learnProbe(observation: TokenObservation, nextDocument: number): boolean {
    if (!usable(observation)) return false;
    this.#singles.push(observation);
    const weights = this.#fit();
    if (weights.every((w, k) => w === this.current.weights[k])) return false;
    this.#open({ ...this.current, weights, reason: 'probes' }, nextDocument);
    return true;
  }

  /**
   * Weights that cover every observation: the fit of the single inputs (solve), scaled up to cover
   * the worst-covered observation (singles and request sums), plus headroom. Unmeasured features
   * keep the byte bound, and a measured feature never drops below an earlier envelope: evidence
   * only ever raises it.
   */
  #fit(): Weights {
    const measured = this.measured();
    const observations = [...this.#singles, ...this.#batches];
    const previous = this.isPrior ? undefined : this.current.weights;
    // Features the earlier envelope measured (moved off the byte bound).
    const known = measured.map(
      (isMeasured, k) => isMeasured && previous !== undefined && previous[k] !== BYTE_BOUND_WEIGHTS[k],
    );
    // A feature measured for the first time (a lazy probe of a new script) is fitted with the earlier
    // envelope kept as it is, when that covers every observation: a joint fit moves the weights the
    // new text shares with others (its spaces, its full stops), and re-cuts documents it taught
    // nothing of.
    const system = normalEquations(this.#singles);
    if (previous !== undefined && known.some(Boolean) && measured.some((m, k) => m && !known[k])) {
      const kept = solve(
        system,
        known.map((isKnown, k) => (isKnown ? previous[k]! : undefined)),
      ).map((weight, k) =>
        known[k] ? previous[k]! : measured[k] ? weight * HEADROOM : BYTE_BOUND_WEIGHTS[k]!,
      );
      if (coverOf(kept, observations) <= 1) return kept;
    }
    const w = solve(
      system,
      measured.map(() => undefined),
    );
    // Unmeasured features keep the byte bound.
    const base = w.map((weight, k) => (measured[k] ? weight : BYTE_BOUND_WEIGHTS[k]!));
    const fitted = scaled(base, coverOf(base, observations), measured);
    // A measured feature never drops below an earlier envelope, and only evidence it does not cover
    // raises it: the headroom is the fit's, not added again to that envelope (it was, and each refit
    // raised every weight by it: a later epoch then re-cut documents it taught nothing of).
    const floored = fitted.map((weight, k) => {
      const earlier = previous?.[k];
      return measured[k] && earlier !== undefined && earlier !== BYTE_BOUND_WEIGHTS[k]!
        ? Math.max(weight, earlier)
        : weight;
    });
    // (A fit without single inputs can leave an observation its estimate does not count at all.)
    const short = coverOf(floored, observations);
    return short > 1 ? scaled(floored, short, measured) : floored;
  }
}

/** The fit's linear system: normal equations, and the target each weight is pulled towards. */
interface NormalEquations {
  readonly a: readonly (readonly number[])[];
  readonly r: readonly number[];
  readonly target: readonly number[];
}

/**
 * Normal equations of Σ ((c·w − t) / (c·b))² + λ Σ (w − target)², one single input a row: relative
 * errors, ridge-pulled towards the byte bound scaled by the overall ratio (features the evidence
 * cannot tell apart share it).
 */
function normalEquations(singles: readonly TokenObservation[]): NormalEquations {
  let tokens = 0;
  let bound = 0;
  for (const o of singles) {
    tokens += o.tokens;
    bound += estimate(o.profile, BYTE_BOUND_WEIGHTS);
  }
  const ratio = Math.min(1, tokens / Math.max(1, bound));
  const target = BYTE_BOUND_WEIGHTS.map((w) => w * ratio);
  const a = Array.from({ length: CLASS_COUNT }, () => new Array<number>(CLASS_COUNT).fill(0));
  const r = new Array<number>(CLASS_COUNT).fill(0);
  for (const o of singles) {
    const scale = 1 / estimate(o.profile, BYTE_BOUND_WEIGHTS) ** 2;
    for (let i = 0; i < CLASS_COUNT; i++) {
      r[i]! += o.profile[i]! * o.tokens * scale;
      for (let j = 0; j < CLASS_COUNT; j++) a[i]![j]! += o.profile[i]! * o.profile[j]! * scale;
    }
  }
  return { a, r, target };
}

/** The non-negative least-squares solution (coordinate descent); a feature given in `fixed` keeps that weight. */
function solve({ a, r, target }: NormalEquations, fixed: readonly (number | undefined)[]): number[] {
  const lambda = 1e-3;
  const w = target.map((weight, k) => fixed[k] ?? weight);
  for (let sweep = 0; sweep < 200; sweep++) {
    for (let k = 0; k < CLASS_COUNT; k++) {
      if (fixed[k] !== undefined) continue;
      let rest = 0;
      for (let j = 0; j < CLASS_COUNT; j++) if (j !== k) rest += a[k]![j]! * w[j]!;
      const value = (r[k]! - rest + lambda * target[k]!) / (a[k]![k]! + lambda);
      w[k] = Math.min(FIT_CEILING[k]!, Math.max(0, value));
    }
  }
  return w;
}

/** How far short of covering the worst-covered observation `weights` fall (1 or more). */
function coverOf(weights: Weights, observations: readonly TokenObservation[]): number {
  let cover = 1;
  for (const o of observations) {
    const estimated = estimate(o.profile, weights);
    if (estimated > 0) cover = Math.max(cover, o.tokens / estimated);
  }
  return cover;
}

/** The measured features' weights scaled by `cover` (coverOf), plus headroom. */
function scaled(weights: Weights, cover: number, measured: readonly boolean[]): Weights {
  return weights.map((weight, k) => (measured[k] ? weight * cover * HEADROOM : weight));
}

/** Each feature's share of a text's characters; the ASCII features share their group's. */
export function featureShares(profile: readonly number[]): number[] {
  const chars = charsOf(profile);
  let ascii = 0;
  profile.forEach((count, k) => {
    if (k < ASCII_FEATURES && k !== 1) ascii += count;
  });
  return profile.map((count, k) => (k < ASCII_FEATURES ? ascii : count) / chars);
}

function charsOf(profile: readonly number[]): number {
  let chars = 0;
  profile.forEach((count, k) => {
    if (k !== 1) chars += count; // the word feature counts runs, not characters
  });
  return Math.max(1, chars);
}

function usable(observation: TokenObservation): boolean {
  return isEvidence(observation.profile) && observation.tokens > 0;
}

/** Whether a text of this profile is long enough for its count to teach anything (else not worth a probe). */
export function isEvidence(profile: readonly number[]): boolean {
  return charsOf(profile) >= MIN_EVIDENCE_CHARS;
}
