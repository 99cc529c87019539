/**
 * Which calibration epoch each document of a run is planned with, and where each one starts, by
 * document identity.
 *
 * A run records where every epoch it planned with began: the id of the document planned just
 * before it (`after`) and the ids of the first documents planned with it (`first`). The dataset's
 * next run replays its epochs by those ids, not by position: documents inserted or deleted earlier
 * in the corpus then move no unchanged document into another epoch, where it could be cut
 * differently and embedded again. An epoch this run opens (new evidence) applies by position, from
 * the next document it plans, and to every later document.
 */
import type { Weights } from './profile.js';

/** Weights and budget of a calibration, from one document of a run on. */
export interface CalibrationEpoch {
  /** Ordinal (0-based, in corpus order) of the first document planned with this epoch. */
  readonly fromDocument: number;
  /**
   * Where it starts, by document id (as saved): right after the document `after`, or at any of
   * its `first` documents. Absent in epochs saved by older versions: they start at `fromDocument`.
   */
  readonly after?: string;
  readonly first?: readonly string[];
  /** Gateway tokens per character of each class (see profile.ts), an upper envelope. */
  readonly weights: Weights;
  /** Gateway tokens per chunk: the run's budget, lower once a rejection named a smaller limit. */
  readonly budgetTokens: number;
  /** Why it changed: "prior", "probes", "usage", "rejection", "cut", "limit". */
  readonly reason: string;
}

/** Documents named as an epoch's first: several, so that one deleted still leaves others. */
const FIRST_IDS = 8;

/** An epoch as this run planned with it. */
interface Use {
  readonly epoch: CalibrationEpoch;
  /** Ordinal of its first document in this run. */
  readonly from: number;
  /** The document planned just before it. */
  readonly after: string | undefined;
  /** Its first documents (up to FIRST_IDS). */
  readonly first: string[];
}

/** The restored epochs a document id places: the one it is first of, the one right after it. */
interface Marks {
  first?: number;
  after?: number;
}

export class EpochReplay {
  /** The epochs the run started from (a dataset's, or the prior): replayed by ids. */
  readonly #restored: readonly CalibrationEpoch[];
  /** Index of the restored epoch in force. */
  #reached = 0;
  /** A restored epoch that starts at the next document (its `after` document was just planned). */
  #armed = 0;
  readonly #marks = new Map<string, Marks>();
  readonly #uses: Use[] = [];
  #lastId: string | undefined;
  #moved = false;

  /** `restored` is copied: the epochs a run opens later are not replayed (see epochFor's `epochs`). */
  constructor(restored: readonly CalibrationEpoch[]) {
    this.#restored = [...restored];
    restored.forEach((epoch, index) => {
      if (index === 0) return;
      for (const id of epoch.first ?? []) this.#mark(id).first = index;
      if (epoch.after !== undefined) this.#mark(epoch.after).after = index;
    });
  }

  /** How many epochs the run started from: a calibration's epochs past them are ones it opened. */
  get restoredCount(): number {
    return this.#restored.length;
  }

  /**
   * The epoch of the next document in corpus order (one call per document): the latest epoch this
   * run opened (`epochs` past the restored ones) that starts at or before it, else the restored
   * epoch the ids have reached.
   */
  epochFor(ordinal: number, documentId: string, epochs: readonly CalibrationEpoch[]): CalibrationEpoch {
    let epoch = this.#replayed(ordinal, documentId);
    for (let i = epochs.length - 1; i >= this.#restored.length; i--) {
      if (epochs[i]!.fromDocument <= ordinal) {
        epoch = epochs[i]!;
        break;
      }
    }
    const last = this.#uses.at(-1);
    if (last?.epoch !== epoch) {
      this.#uses.push({ epoch, from: ordinal, after: this.#lastId, first: [documentId] });
      this.#moved = true;
    } else if (last.first.length < FIRST_IDS) {
      last.first.push(documentId);
      this.#moved = true;
    }
    this.#lastId = documentId;
    return epoch;
  }

  /** True once since the last call when this run's documents placed an epoch further. */
  takeMove(): boolean {
    const moved = this.#moved;
    this.#moved = false;
    return moved;
  }

  /**
   * The epochs to persist, each placed by this run's documents: those it planned with, in order;
   * then an epoch `opened` after its last document (it starts after that one), or, when this run
   * opened none, the restored epochs no document has reached yet (a resumed run reaches them where
   * the first did). An epoch this run opened supersedes the restored ones it did not reach.
   * `opened`: the epochs this run opened, in order.
   */
  placed(opened: readonly CalibrationEpoch[]): CalibrationEpoch[] {
    // Before any document is planned, the restored epoch in force stays first. (The first epoch
    // needs no ids: it starts at the first document.)
    const placed: CalibrationEpoch[] =
      this.#uses.length === 0
        ? this.#restored.slice(0, this.#reached + 1)
        : this.#uses.map(({ epoch, from, after, first }) =>
            withPlace(epoch, from, after, from === 0 ? undefined : first),
          );
    const used = new Set(this.#uses.map((use) => use.epoch));
    if (opened.length > 0) {
      for (const epoch of opened) {
        if (!used.has(epoch)) placed.push(withPlace(epoch, epoch.fromDocument, this.#lastId, undefined));
      }
      return placed;
    }
    for (const epoch of this.#restored.slice(this.#reached + 1)) {
      const fromDocument = Math.max(epoch.fromDocument, placed.at(-1)?.fromDocument ?? 0);
      placed.push({ ...epoch, fromDocument });
    }
    return placed;
  }

  #replayed(ordinal: number, documentId: string): CalibrationEpoch {
    const restored = this.#restored;
    if (this.#reached + 1 < restored.length) {
      this.#reached = Math.max(this.#reached, this.#armed);
      const marks = this.#marks.get(documentId);
      if (marks?.first !== undefined) this.#reached = Math.max(this.#reached, marks.first);
      if (marks?.after !== undefined) this.#armed = Math.max(this.#armed, marks.after);
      // Epochs saved without ids (by an older version) start by position.
      while (this.#reached + 1 < restored.length) {
        const next = restored[this.#reached + 1]!;
        if (next.first !== undefined || next.after !== undefined || next.fromDocument > ordinal) break;
        this.#reached += 1;
      }
    }
    return restored[this.#reached]!;
  }

  #mark(id: string): Marks {
    let marks = this.#marks.get(id);
    if (marks === undefined) {
      marks = {};
      this.#marks.set(id, marks);
    }
    return marks;
  }
}

/** An epoch without the ids of where it starts: weights and budget from `fromDocument` of this run on. */
export function unplaced(epoch: CalibrationEpoch): CalibrationEpoch {
  const { after: _after, first: _first, ...rest } = epoch;
  return rest;
}

function withPlace(
  epoch: CalibrationEpoch,
  fromDocument: number,
  after: string | undefined,
  first: readonly string[] | undefined,
): CalibrationEpoch {
  return {
    ...unplaced(epoch),
    fromDocument,
    ...(fromDocument > 0 && after !== undefined ? { after } : {}),
    ...(first !== undefined ? { first: [...first] } : {}),
  };
}
