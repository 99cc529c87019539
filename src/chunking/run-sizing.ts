/**
 * Chunk sizing for a run: plans documents with the calibrated byte budget, and keeps every chunk
 * about to be sent, or just answered, within what the gateway counts.
 *
 * - `plan` chunks a document with its epoch's ratio (see TokenCalibration) and keeps its text while
 *   any of its planned chunks is unfinished, so the document can be re-planned.
 * - Before a batch goes out, `prepare` re-plans every document that has a chunk over the budget
 *   under the current envelope (it rose since the document was planned), and drops chunks of
 *   documents that another batch already re-planned.
 * - After an answer, `learn` feeds the usage to the calibration and names the documents whose
 *   chunks no longer fit (or were cut: a single input whose usage reached the context length).
 * - A re-planned document is owned by the batch that re-planned it: that batch embeds all its
 *   chunks, numbered 0..k-1 afresh, and every other copy of its old chunks is dropped (before
 *   sending, or at finalize from committed parts).
 */

import { DEFAULTS } from '../config/defaults.js';
import { Reason } from '../corpus/entries.js';
import type { Chunk, Document } from '../domain.js';
import type { ChunkSizing } from '../embedding/chunk-sizing.js';
import {
  type CalibrationEpoch,
  type CalibrationState,
  CLASSES,
  chunkDocument,
  costOf,
  featureShares,
  imageContentHash,
  MEASURED_SHARE,
  prefixWithinBytes,
  profileOf,
  TokenCalibration,
  utf8Length,
} from './index.js';

/** A document is re-planned at most this often; after that its chunk fails with the gateway's message. */
const MAX_REPLANS = 6;

interface OpenDocument {
  readonly document: Document;
  readonly ordinal: number;
  /** The epoch its chunks were planned in (under the current one they fit by construction). */
  readonly epoch: CalibrationEpoch;
  /** Planned chunks not yet finished (committed, failed or skipped). */
  pending: number;
}

interface Ownership {
  readonly batchId: string;
  /** The live chunks of the re-plan; any other chunk of the document is stale. */
  readonly chunks: ReadonlySet<Chunk>;
  /** The epoch they were planned in. */
  readonly epoch: CalibrationEpoch;
  readonly replans: number;
}

export interface SizingOptions {
  readonly model: string;
  readonly calibration: TokenCalibration;
  /** Overlap in gateway tokens (--overlap). */
  readonly overlapTokens: number;
  /** The model's context length, when listed: a single input whose usage reaches it was cut. */
  readonly contextLength?: number | undefined;
  /** Fraction of a limit kept free (the budget is the limit less this). */
  readonly margin: number;
}

/** Measures one text at the gateway: its usage.prompt_tokens, or undefined when it reports none. */
export type Probe = (text: string) => Promise<number | undefined>;

/** Lazy probes per run at most: one per feature is the aim. */
const MAX_LAZY_PROBES = 32;
/** Largest lazy probe, in bytes (and never above the budget: the byte bound keeps it uncut). */
const MAX_PROBE_BYTES = 8192;

export class RunSizing implements ChunkSizing {
  readonly calibration: TokenCalibration;
  readonly #options: SizingOptions;
  readonly #open = new Map<string, OpenDocument>();
  readonly #owners = new Map<string, Ownership>();
  /** Documents re-planned by committed batches of earlier runs: document id → owner batch id. */
  readonly #restoredOwners = new Map<string, string>();
  /** Re-plans recorded before this run that own nothing (see restoreReplan): document id → batch id. */
  readonly #earlier = new Map<string, string>();
  #nextOrdinal = 0;
  readonly #probed = new Set<number>();
  #lazyProbes = 0;
  #probe: Probe | undefined;

  /** A run's sizing from a dataset's calibration (the byte bound when there is none for this model and budget). */
  static restore(
    plan: { model: string; budgetTokens: number; contextLength?: number | undefined; overlapTokens: number },
    state: CalibrationState | undefined,
  ): RunSizing {
    return new RunSizing({
      model: plan.model,
      calibration: TokenCalibration.restore(state, plan.model, plan.budgetTokens),
      overlapTokens: plan.overlapTokens,
      contextLength: plan.contextLength,
      margin: DEFAULTS.contextSafetyMargin,
    });
  }

  constructor(options: SizingOptions) {
    this.#options = options;
    this.calibration = options.calibration;
  }

  /** Enables lazy probes (a real run; a dry run calls no embeddings). */
  measureWith(probe: Probe): void {
    this.#probe = probe;
  }

  /**
   * Before a document is planned: when it is rich in a feature no single input measured yet (a
   * script met after the calibration probes), measures a prefix of it at the gateway first, so its
   * chunks are sized from evidence instead of the byte bound. Undefined when there is nothing to
   * measure (nearly every document): the caller awaits only a probe.
   */
  probeFor(document: Document): Promise<void> | undefined {
    const probe = this.#probe;
    if (probe === undefined || this.#lazyProbes >= MAX_LAZY_PROBES) return undefined;
    const measured = this.calibration.measured();
    // Most documents: all ASCII, and ASCII is measured (the common case costs one native call).
    if (measured[0] && Buffer.byteLength(document.text) === document.text.length) return undefined;
    // Only a feature neither measured nor probed yet can be wanted: none left, nothing to look at.
    const open = (k: number) => !measured[k] && !this.#probed.has(k);
    if (!CLASSES.some((_, k) => open(k))) return undefined;
    const text = prefixWithinBytes(
      document.text,
      Math.min(MAX_PROBE_BYTES, this.calibration.current.budgetTokens),
    );
    if (text.length < 64) return undefined;
    const profile = profileOf(text);
    const wanted = featureShares(profile).findIndex((share, k) => open(k) && share >= MEASURED_SHARE);
    if (wanted < 0) return undefined;
    this.#probed.add(wanted);
    this.#lazyProbes += 1;
    return this.#learnFrom(probe, text, profile);
  }

  async #learnFrom(probe: Probe, text: string, profile: readonly number[]): Promise<void> {
    const tokens = await probe(text);
    if (tokens !== undefined)
      this.calibration.learnProbe({ profile, tokens, single: true }, this.#nextOrdinal);
  }

  /**
   * Chunks of the next document in corpus order, sized by its epoch; a document an earlier run
   * re-planned, as that run re-planned it (its rows are the re-plan's: planned otherwise, its
   * batches would be carried without them).
   */
  plan(document: Document): Chunk[] {
    const ordinal = this.#nextOrdinal++;
    const placed = this.calibration.epochFor(ordinal, document.id);
    const epoch = this.calibration.replanOf(document.id) ?? placed;
    const chunks = this.#chunk(document, epoch);
    if (chunks.length > 0) this.#open.set(document.id, { document, ordinal, epoch, pending: chunks.length });
    return chunks;
  }

  /**
   * The one chunk of a document with an image (caption + image, one joint vector; never split nor
   * re-planned): its tokens are the caption's estimate under its epoch plus `imageTokens`. A string
   * (the reject reason) when that is over the chunk budget.
   */
  planImage(document: Document, imageTokens: number): Chunk | string {
    const { image, text } = document;
    if (image === undefined) throw new Error(`planImage: document ${document.id} has no image`);
    const epoch = this.calibration.epochFor(this.#nextOrdinal++, document.id);
    const tokens = Math.ceil(costOf(text, epoch.weights)) + imageTokens;
    if (tokens > epoch.budgetTokens) return Reason.captionTooLong(tokens, epoch.budgetTokens);
    return {
      documentId: document.id,
      index: 0,
      text,
      start: 0,
      end: text.length,
      bytes: utf8Length(text),
      tokens,
      hash: imageContentHash(this.#options.model, text, image),
      image,
    };
  }

  /** The planned chunks of a finished batch (committed, failed or skipped): their texts may go. */
  release(chunks: readonly Chunk[]): void {
    for (let c = 0; c < chunks.length; c++) {
      const { documentId } = chunks[c]!;
      const open = this.#open.get(documentId);
      if (open && --open.pending === 0) this.#open.delete(documentId);
    }
  }

  /**
   * A re-plan an earlier attempt of this version recorded (a committed or spilled batch). A document
   * the calibration records as re-planned is planned so (see plan): the batches planning it now
   * send its chunks or take their vectors by hash, and the attempt's rows count only where the plan
   * still has them (an edit between attempts changes them). Otherwise (an attempt by an embedpipe
   * that saved no re-plans: one saves its calibration before the batch's spill entry) the attempt's
   * batch owns the document: its old chunks are stale.
   */
  restoreReplan(documentId: string, batchId: string): void {
    if (this.calibration.isReplanned(documentId)) this.earlierReplan(documentId, batchId);
    else this.#restoredOwners.set(documentId, batchId);
  }

  /**
   * A re-plan a batch carried from the version replaced recorded: its rows of the document count
   * only where the plan still has them (finalize.ts); nothing planned is stale for it.
   */
  earlierReplan(documentId: string, batchId: string): void {
    this.#earlier.set(documentId, batchId);
  }

  /** Re-plans recorded before this run whose rows count by key alone: document id → batch id. */
  earlierReplans(): Map<string, string> {
    const earlier = new Map<string, string>();
    for (const [id, batchId] of this.#earlier)
      if (!this.#owners.has(id) && !this.#restoredOwners.has(id)) earlier.set(id, batchId);
    return earlier;
  }

  /**
   * A document the dataset holds as re-planned whose re-plan its calibration does not record (a
   * version written before re-plans were): planned under the latest epoch it started from, the one
   * its runs re-planned with.
   */
  assumeReplanned(documentId: string): void {
    if (!this.calibration.isReplanned(documentId))
      this.calibration.recordReplan(documentId, this.calibration.current);
  }

  /** Every document of the corpus was planned. */
  corpusEnded(): void {
    this.calibration.corpusEnded();
  }

  /** Document id → the batch whose part holds its rows, for every re-planned document. */
  owners(): Map<string, string> {
    const owners = new Map(this.#restoredOwners);
    for (const [id, ownership] of this.#owners) owners.set(id, ownership.batchId);
    return owners;
  }

  prepare(batchId: string, chunks: readonly Chunk[]): Chunk[] {
    const send: Chunk[] = [];
    const replanned = new Set<string>();
    for (let c = 0; c < chunks.length; c++) {
      const chunk = chunks[c]!;
      if (this.isStale(chunk, batchId)) continue;
      // A document with an image is one chunk whatever the budget: never re-planned.
      if (chunk.image !== undefined) {
        send.push(chunk);
        continue;
      }
      if (!replanned.has(chunk.documentId) && !this.#fits(chunk)) {
        const pieces = this.replan(chunk.documentId, batchId);
        if (pieces) {
          replanned.add(chunk.documentId);
          send.push(...pieces);
          continue;
        }
      }
      if (!replanned.has(chunk.documentId)) send.push(chunk);
    }
    return send;
  }

  isStale(chunk: Chunk, batchId: string): boolean {
    // Nothing re-planned (nearly every run): no lookup per chunk.
    if (this.#owners.size === 0 && this.#restoredOwners.size === 0) return false;
    const restored = this.#restoredOwners.get(chunk.documentId);
    if (restored !== undefined && restored !== batchId) return true;
    const owner = this.#owners.get(chunk.documentId);
    if (owner === undefined) return false;
    return owner.batchId !== batchId || !owner.chunks.has(chunk);
  }

  learn(sent: readonly Chunk[], usageTokens: number | undefined): Set<string> {
    const redo = new Set<string>();
    // The usage of a request of images counts the images, at a rate the text weights know nothing
    // of: it teaches the calibration nothing (and image blocks are never re-planned).
    if (usageTokens === undefined || sent.some((chunk) => chunk.image !== undefined)) return redo;
    const single = sent.length === 1;
    const { contextLength } = this.#options;
    const cut = single && contextLength !== undefined && usageTokens >= contextLength;
    // The common case, without re-reading the texts: planned under the current epoch, and the
    // usage is within their estimates (each chunk's `tokens` is its estimate rounded up).
    const current = this.calibration.current;
    const floor = sent.reduce((sum, chunk) => sum + chunk.tokens - 1, 0);
    if (!cut && usageTokens <= floor && sent.every((chunk) => this.#plannedIn(chunk) === current))
      return redo;
    const profile = CLASSES.map(() => 0);
    for (const chunk of sent) {
      profileOf(chunk.text).forEach((count, k) => {
        profile[k]! += count;
      });
    }
    this.calibration.observe(
      { profile, tokens: usageTokens, single },
      this.#nextOrdinal,
      cut ? 'cut' : 'usage',
    );
    for (const chunk of sent) if (cut || !this.#fits(chunk)) redo.add(chunk.documentId);
    return redo;
  }

  rejected(chunk: Chunk, stated: { limit?: number | undefined; counted?: number | undefined }): void {
    // Its count includes the image's tokens: nothing to learn about text from it.
    if (chunk.image !== undefined) return;
    const next = this.#nextOrdinal;
    if (stated.limit !== undefined) this.calibration.limitStated(stated.limit, this.#options.margin, next);
    // The gateway's own count when its message names one; else just over the budget it refused.
    const tokens = stated.counted ?? this.calibration.current.budgetTokens + 1;
    this.calibration.observe({ profile: profileOf(chunk.text), tokens, single: true }, next, 'rejection');
  }

  get maxInputs(): number | undefined {
    return this.calibration.maxInputs;
  }

  learnMaxInputs(limit: number): void {
    this.calibration.learnMaxInputs(limit);
  }

  replan(documentId: string, batchId: string): Chunk[] | undefined {
    const open = this.#open.get(documentId);
    const previous = this.#owners.get(documentId);
    const replans = (previous?.replans ?? 0) + 1;
    if (open === undefined || replans > MAX_REPLANS) return undefined;
    if (previous !== undefined && previous.batchId !== batchId) return undefined;
    const epoch = this.calibration.current;
    const chunks = this.#chunk(open.document, epoch);
    this.#owners.set(documentId, { batchId, chunks: new Set(chunks), epoch, replans });
    // With the calibration, which is persisted before the batch commits.
    this.calibration.recordReplan(documentId, epoch);
    return chunks;
  }

  /**
   * Whether a chunk fits what this run learned. Until it opens an epoch, every chunk is cut as the
   * runs the calibration came from cut it (a document planned before a later epoch keeps its
   * chunks), which is also what a fresh run given that calibration plans: a dataset's next version
   * then equals such a run, and nothing unchanged is embedded again.
   */
  #fits(chunk: Chunk): boolean {
    const { calibration } = this;
    if (!calibration.openedHere) return true;
    return this.#plannedIn(chunk) === calibration.current || calibration.fits(chunk.text);
  }

  /**
   * The epoch a live chunk was planned in, from its document's record (no entry per chunk); undefined
   * once the document is finished, and callers then measure the text.
   */
  #plannedIn(chunk: Chunk): CalibrationEpoch | undefined {
    const owner = this.#owners.size === 0 ? undefined : this.#owners.get(chunk.documentId);
    if (owner?.chunks.has(chunk)) return owner.epoch;
    return this.#open.get(chunk.documentId)?.epoch;
  }

  #chunk(document: Document, epoch: CalibrationEpoch): Chunk[] {
    const maxTokens = epoch.budgetTokens;
    // Below half a chunk, as the chunker requires (a budget lowered by a rejection may need it).
    const overlapTokens = Math.min(this.#options.overlapTokens, Math.ceil(maxTokens / 2) - 1);
    return chunkDocument(document, {
      model: this.#options.model,
      maxTokens,
      overlapTokens,
      weights: epoch.weights,
    });
  }
}
