/**
 * The dataset contract (design.md, "checked, not hoped"): what a version must satisfy, from its own
 * files, before readers see it, and what `embedpipe verify` checks again later.
 *
 * - per id, `chunk_index` is 0..k-1, each once (a chunk listed as failed may be absent);
 * - the rows are exactly the planned chunks: no document the plan does not have, none missing, each
 *   chunk's content_hash the planned one (at the switch, against the plan; later, against the
 *   per-document digests the switch recorded in `_documents.jsonl`);
 * - every file declares the dataset's vector length;
 * - the manifest's files and counts are what the files hold.
 *
 * Rows are compared by (id, chunk_index, content_hash's first 52 bits): 8 bytes of hash a row, so a
 * million-row dataset is checked in memory. Texts, hashes of texts and vectors are `verify --deep`.
 */
import { createHash } from 'node:crypto';
import { fingerprint } from '../fingerprint.js';
import { IdNumbers } from '../id-numbers.js';
import { hashKey } from './hash-key.js';
import type { FileRowKeys } from './row-keys.js';

/** One broken rule: which, in words, and the first offending ids (or files). */
export interface ContractViolation {
  readonly check: ContractCheck;
  readonly message: string;
  readonly ids: readonly string[];
}

export type ContractCheck =
  | 'chunk-index'
  | 'planned-rows'
  | 'recorded-rows'
  | 'dims'
  | 'manifest'
  | 'content-hash'
  | 'vectors'
  | 'quantized'
  | 'sample';

/** Offending ids named per violation (the count says how many there are). */
export const IDS_NAMED = 5;

/** What the planner hands each planned chunk to. */
export interface PlanSink {
  add(documentId: string, index: number, hash: string): void;
}

/** The plan as the switch reads it (output/planned-chunks.ts, or an ExpectedRows in memory). */
export interface PlanReader {
  /**
   * Each document that keeps a row, its planned rows less `failed` digested, in plan order; an
   * undefined entry (or result) where the plan does not name every row: the row-by-row check decides.
   */
  plannedDigests(failed: FailedChunks): Iterable<[string, PairDigest] | undefined> | undefined;
  /** The whole plan in memory, for the row-by-row check. */
  rows(): Promise<ExpectedRows>;
  /**
   * The plan digested while it was made, for a version where no chunk failed and no document was
   * re-planned (what `planDigest` would give then, without reading the plan back); undefined when
   * the plan was not kept that way or is not one document at a time in index order.
   */
  asPlanned?(): AsPlanned | undefined;
}

/** The plan as digested while it was made (PlanReader.asPlanned). */
export interface AsPlanned {
  readonly digest: VersionDigest;
  /** Documents in the plan (each keeps a row: nothing failed). */
  readonly documents: number;
  /** `_documents.jsonl`'s text, a piece at a time (each piece is reused once `each` returns). */
  lines(each: (bytes: Buffer) => void): void;
}

/**
 * The plan's digest less `failed`, and how many documents keep a row; undefined: not certain.
 * `each` is given every document's digest on the way (`_documents.jsonl`'s entries, in plan order):
 * only a defined result says they were all of them. `replanned`: documents re-planned during the
 * run, each with the digest of the rows its owner batch committed (0..k-1, complete): they stand in
 * for the document's first plan, which the plan on disk still holds. A re-planned document with a
 * failed chunk is not certain.
 */
export function planDigest(
  plan: PlanReader,
  failed: FailedChunks,
  each?: (id: string, digest: DocumentDigest) => void,
  replanned: ReadonlyMap<string, PairDigest> = new Map(),
): { digest: VersionDigest; documents: number } | undefined {
  for (const id of replanned.keys()) if (failed.has(id)) return undefined;
  const planned = plan.plannedDigests(failed);
  if (!planned) return undefined;
  const digest = new VersionDigest();
  let documents = 0;
  for (const entry of planned) {
    if (entry === undefined) return undefined;
    const [id, planPairs] = entry;
    const pairs = replanned.get(id) ?? planPairs;
    digest.addDocument(id, pairs);
    each?.(id, pairs.value);
    documents += 1;
  }
  return { digest, documents };
}

/** A chunk index the plan does not name (a gap in a document's keys). */
const UNNAMED = Number.NaN;

/**
 * The chunks a plan wants in the version, per document (its side of the contract). The hash keys
 * of all documents are in one paged array, each document's in one range of slots: 8 bytes a chunk
 * (an array per document held its keys as heap numbers, several times that, millions in a large
 * run: docs/benchmarks.md, "Memory").
 */
export class ExpectedRows implements PlanSink, PlanReader {
  /** Document ids and their numbers. */
  readonly #numbers = new IdNumbers();
  /** Per document number: its first slot in #pool, and how many (its highest index + 1). */
  #first = new Int32Array(1024);
  #count = new Int32Array(1024);
  readonly #pool = new PagedKeys();
  #end = 0;
  /** Documents re-planned by a batch: any chunks numbered 0..k-1, from the file holding that batch. */
  readonly #replanned = new Map<string, string>();

  /** A chunk of the plan. */
  add(documentId: string, index: number, hash: string): void {
    this.#set(documentId, index, hashKey(hash));
  }

  /** A chunk of the plan, by its hash key (hash-key.ts). */
  addKey(documentId: string, index: number, key: number): void {
    this.#set(documentId, index, key);
  }

  #set(documentId: string, index: number, key: number): void {
    const known = this.#numbers.size;
    const number = this.#numbers.add(documentId);
    if (number === known) {
      if (number === this.#first.length) {
        this.#first = grown(this.#first, 2 * number);
        this.#count = grown(this.#count, 2 * number);
      }
      this.#first[number] = this.#end;
      this.#count[number] = 0;
    }
    const count = this.#count[number]!;
    if (index >= count) {
      let first = this.#first[number]!;
      // A document's chunks come together; one planned again later moves to the end.
      if (first + count !== this.#end) {
        for (let k = 0; k < count; k++) this.#pool.set(this.#end + k, this.#pool.get(first + k)!);
        first = this.#end;
        this.#first[number] = first;
        this.#end += count;
      }
      for (let slot = first + count; slot <= first + index; slot++) this.#pool.set(slot, UNNAMED);
      this.#end = first + index + 1;
      this.#count[number] = index + 1;
    }
    this.#pool.set(this.#first[number]! + index, key);
  }

  /** Whether the plan has chunks of the document (as first planned, whatever re-planned it since). */
  plans(documentId: string): boolean {
    return this.#numbers.has(documentId);
  }

  /** The document's rows are those of the batch that re-planned it, in `file`. */
  replan(documentId: string, file: string): void {
    this.#replanned.set(documentId, file);
  }

  /** Whether the plan wants this row from this file. */
  wants(file: string, documentId: string, index: number, key: number): boolean {
    const owner = this.#replanned.get(documentId);
    if (owner !== undefined) return owner === file;
    return this.slot(documentId, index, key) >= 0;
  }

  /**
   * Where the plan's row (documentId, index) with this key is among all its rows (0 to `slots`), or
   * -1 when it does not want it or the document was re-planned (see wants).
   */
  slot(documentId: string, index: number, key: number): number {
    if (this.#replanned.has(documentId)) return -1;
    const number = this.#numbers.get(documentId);
    if (number < 0 || index < 0 || index >= this.#count[number]!) return -1;
    const slot = this.#first[number]! + index;
    return this.#pool.get(slot) === key ? slot : -1;
  }

  /** Bound of `slot`'s answers. */
  get slots(): number {
    return this.#end;
  }

  /**
   * Chunks planned for the document, as hash keys by chunk index (NaN: an index the plan does not
   * name); undefined for a re-planned document (whatever its batch holds) or an unknown one.
   */
  chunksOf(documentId: string): Float64Array | undefined {
    if (this.#replanned.has(documentId)) return undefined;
    const number = this.#numbers.get(documentId);
    if (number < 0) return undefined;
    return this.#pool.copy(this.#first[number]!, this.#count[number]!);
  }

  has(documentId: string): boolean {
    return this.#numbers.has(documentId) || this.#replanned.has(documentId);
  }

  /** Chunks planned for the document (its highest chunk index + 1); 0 for a re-planned or unknown one. */
  chunkCount(documentId: string): number {
    if (this.#replanned.has(documentId)) return 0;
    const number = this.#numbers.get(documentId);
    return number < 0 ? 0 : this.#count[number]!;
  }

  /** Every document of the plan, once (nothing is copied: the plan may hold millions). */
  *documents(): Generator<string> {
    yield* this.#numbers.values();
    for (const id of this.#replanned.keys()) if (!this.#numbers.has(id)) yield id;
  }

  /**
   * Each document's planned rows less the failed chunks, digested, in plan order (documents left
   * with no row are skipped): the version's `_documents.jsonl` when its rows are the plan's.
   * Undefined when the plan does not say every row: a document re-planned (whatever its batch
   * holds), or a chunk index it does not name that no failure explains.
   */
  plannedDigests(failed: FailedChunks): Iterable<[string, PairDigest]> | undefined {
    if (this.#replanned.size > 0) return undefined;
    for (let number = 0; number < this.#numbers.size; number++) {
      const gone = failed.get(this.#numbers.idOf(number));
      const first = this.#first[number]!;
      for (let index = 0; index < this.#count[number]!; index++) {
        if (Number.isNaN(this.#pool.get(first + index)) && !gone?.has(index)) return undefined;
      }
    }
    return this.#digests(failed);
  }

  async rows(): Promise<ExpectedRows> {
    return this;
  }

  *#digests(failed: FailedChunks): Generator<[string, PairDigest]> {
    for (let number = 0; number < this.#numbers.size; number++) {
      const id = this.#numbers.idOf(number);
      const gone = failed.get(id);
      const first = this.#first[number]!;
      const pairs = new PairDigest();
      for (let index = 0; index < this.#count[number]!; index++) {
        if (!gone?.has(index)) pairs.add(index, this.#pool.get(first + index)!);
      }
      if (pairs.rows > 0) yield [id, pairs];
    }
  }

  /** One JSON line per document: how a producer hands the plan to a distributed finalize. */
  *lines(): Generator<string> {
    for (let number = 0; number < this.#numbers.size; number++) {
      const id = this.#numbers.idOf(number);
      const keys = [...this.#pool.copy(this.#first[number]!, this.#count[number]!)].map((k) =>
        Number.isNaN(k) ? '' : k.toString(36),
      );
      yield `${JSON.stringify([id, keys.join(',')])}\n`;
    }
  }

  static fromLines(lines: Iterable<string>): ExpectedRows {
    const expected = new ExpectedRows();
    for (const line of lines) {
      if (line.trim() === '') continue;
      const [id, keys] = JSON.parse(line) as [string, string];
      keys.split(',').forEach((k, index) => {
        expected.#set(id, index, k === '' ? UNNAMED : Number.parseInt(k, 36));
      });
    }
    return expected;
  }
}

/** Bits of a slot that address within a page of PagedKeys. */
const PAGE_BITS = 16;

/**
 * Keys by slot, in pages of 65,536 allocated as slots are set: no slack beyond the last page, and
 * growing never copies (a doubling array held the old and the new at once:
 * docs/benchmarks.md, "Design figures").
 */
class PagedKeys {
  readonly #pages: Float64Array[] = [];

  get(slot: number): number | undefined {
    return this.#pages[slot >>> PAGE_BITS]?.[slot & ((1 << PAGE_BITS) - 1)];
  }

  set(slot: number, key: number): void {
    const page = slot >>> PAGE_BITS;
    while (this.#pages.length <= page) this.#pages.push(new Float64Array(1 << PAGE_BITS));
    this.#pages[page]![slot & ((1 << PAGE_BITS) - 1)] = key;
  }

  /** Keys of slots `[first, first + count)`, copied. */
  copy(first: number, count: number): Float64Array {
    const keys = new Float64Array(count);
    for (let k = 0; k < count; k++) keys[k] = this.get(first + k)!;
    return keys;
  }
}

/** `array` copied into a new one of `length`. */
function grown(array: Int32Array, length: number): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(length);
  bigger.set(array);
  return bigger;
}

/** Chunks that may be absent: listed as failed in `_failures.jsonl` (document id → chunk indices). */
export type FailedChunks = ReadonlyMap<string, ReadonlySet<number>>;

export function failedChunks(
  failures: Iterable<{ readonly documentId: string; readonly chunkIndex?: number }>,
): Map<string, Set<number>> {
  const failed = new Map<string, Set<number>>();
  for (const { documentId, chunkIndex } of failures) {
    if (chunkIndex === undefined || chunkIndex < 0) continue;
    const set = failed.get(documentId) ?? new Set<number>();
    set.add(chunkIndex);
    failed.set(documentId, set);
  }
  return failed;
}

export interface RowSelection {
  /** Rows dropped, per file (files with none are absent). */
  readonly dropped: Map<string, Uint8Array>;
  /** Rows neither wanted nor explained by `mayDrop`: the version breaks the contract. */
  readonly violations: ContractViolation[];
}

/**
 * Which rows of the files a version keeps: each row the plan wants, once, the first copy in the
 * order given (a caller lists the files that must be rewritten anyway last). A row the plan does not
 * want is dropped where `mayDrop` explains it (a file carried over with batches the plan no longer
 * has; old rows of a re-planned document); anywhere else it is a violation, never dropped silently:
 * a file of planned batches holds exactly their rows, or something wrote it that should not have.
 */
export function selectRows(
  files: readonly FileRowKeys[],
  expected: ExpectedRows,
  mayDrop: (file: string, documentId: string) => boolean,
): RowSelection {
  /** Planned rows taken already, by slot; rows of re-planned documents by id and chunk index. */
  const taken = new Uint8Array(expected.slots);
  const takenReplanned = new Map<string, Set<number>>();
  const dropped = new Map<string, Uint8Array>();
  const violations = new Violations();
  for (const scan of files) {
    let drops: Uint8Array | undefined;
    const ids = scan.ids;
    for (let run = 0, start = 0; run < ids.runCount; start = ids.runEnd(run), run++) {
      const id = ids.runId(run);
      const end = ids.runEnd(run);
      for (let row = start; row < end; row++) {
        const index = scan.indices[row]!;
        const key = scan.keys[row]!;
        const slot = expected.slot(id, index, key);
        let wanted = slot >= 0;
        if (wanted && taken[slot] === 0) {
          taken[slot] = 1;
          continue;
        }
        if (!wanted && expected.wants(scan.file, id, index, key)) {
          wanted = true;
          let seen = takenReplanned.get(id);
          if (seen === undefined) {
            seen = new Set();
            takenReplanned.set(id, seen);
          }
          if (!seen.has(index)) {
            seen.add(index);
            continue;
          }
        }
        drops ??= new Uint8Array(scan.ids.length);
        drops[row] = 1;
        if (mayDrop(scan.file, id)) continue;
        const where = `chunk_index ${index} in ${scan.file}`;
        if (wanted)
          violations.add('chunk-index', 'rows that repeat a row of the same id and chunk_index', id, where);
        else if (!expected.has(id))
          violations.add(
            'planned-rows',
            'rows of documents the plan does not have (deleted or unknown ids)',
            id,
            where,
          );
        else
          violations.add(
            'planned-rows',
            'rows whose content_hash or chunk_index the plan does not have',
            id,
            where,
          );
      }
    }
    if (drops) dropped.set(scan.file, drops);
  }
  return { dropped, violations: violations.list() };
}

/**
 * A version's rows grouped by document, from its files' row keys: columnar (a document number per
 * row, grouped by a counting sort), so a million rows cost a few typed arrays. Chunk indices and
 * hash keys are read from the files' row keys, not copied (12 bytes a row at the switch).
 */
export class DatasetRows {
  readonly rows: number;
  readonly dims = new Map<string, number | undefined>();
  /** Document ids, numbered in order of first appearance. */
  readonly #ids = new IdNumbers();
  /** Per document, its rows are `#order[#starts[d] .. #starts[d + 1])`. */
  readonly #starts: Int32Array;
  readonly #order: Int32Array;
  readonly #scans: readonly FileRowKeys[];
  /** The row number of each scan's first row; the last entry is `rows`. */
  readonly #firstRows: Int32Array;
  /** The scan #rowAt found last (rows are mostly asked for in file order). */
  #scan = 0;

  constructor(files: Iterable<FileRowKeys>) {
    const scans = [...files];
    this.#scans = scans;
    this.#firstRows = new Int32Array(scans.length + 1);
    scans.forEach((scan, i) => {
      this.#firstRows[i + 1] = this.#firstRows[i]! + scan.ids.length;
    });
    this.rows = this.#firstRows[scans.length]!;
    const documentOf = new Int32Array(this.rows);
    let row = 0;
    for (const scan of scans) {
      this.dims.set(scan.file, scan.dims);
      const ids = scan.ids;
      const base = row;
      for (let run = 0; run < ids.runCount; run++) {
        const end = base + ids.runEnd(run);
        documentOf.fill(this.#ids.add(ids.runId(run)), row, end);
        row = end;
      }
    }
    const documents = this.#ids.size;
    this.#starts = new Int32Array(documents + 1);
    for (let r = 0; r < this.rows; r++) this.#starts[documentOf[r]! + 1]! += 1;
    for (let d = 0; d < documents; d++) this.#starts[d + 1]! += this.#starts[d]!;
    const next = this.#starts.slice(0, documents);
    this.#order = new Int32Array(this.rows);
    for (let r = 0; r < this.rows; r++) this.#order[next[documentOf[r]!]!++] = r;
  }

  get documents(): number {
    return this.#ids.size;
  }

  /** Row `r` of the version: the scan holding it and its row there. */
  #rowAt(r: number): { scan: FileRowKeys; row: number } {
    const firstRows = this.#firstRows;
    let s = this.#scan;
    if (r < firstRows[s]! || r >= firstRows[s + 1]!) {
      let low = 0;
      let high = this.#scans.length - 1;
      while (low < high) {
        const mid = (low + high + 1) >>> 1;
        if (firstRows[mid]! <= r) low = mid;
        else high = mid - 1;
      }
      s = low;
      this.#scan = s;
    }
    return { scan: this.#scans[s]!, row: r - firstRows[s]! };
  }

  has(id: string): boolean {
    return this.#ids.has(id);
  }

  /**
   * Each document's chunk indices and hash keys. The arrays are reused: each holds its document's
   * rows only until the next is asked for (a copy of every row grouped at once cost 12 bytes a row).
   */
  *entries(): Generator<[string, { indices: Int32Array; keys: Float64Array }]> {
    let largest = 0;
    for (let d = 0; d < this.#ids.size; d++)
      largest = Math.max(largest, this.#starts[d + 1]! - this.#starts[d]!);
    const indices = new Int32Array(largest);
    const keys = new Float64Array(largest);
    for (let d = 0; d < this.#ids.size; d++) {
      const start = this.#starts[d]!;
      const end = this.#starts[d + 1]!;
      for (let k = start; k < end; k++) {
        const { scan, row } = this.#rowAt(this.#order[k]!);
        indices[k - start] = scan.indices[row]!;
        keys[k - start] = scan.keys[row]!;
      }
      yield [
        this.#ids.idOf(d),
        { indices: indices.subarray(0, end - start), keys: keys.subarray(0, end - start) },
      ];
    }
  }

  /**
   * Per document: rows and a digest of its (chunk_index, content_hash) pairs, by id. The digest is a
   * sum of mixed pairs (order-free, duplicates counted), 64 bits: it tells a changed document from
   * the recorded one, not an adversary's forgery (`verify --deep` recomputes the hashes).
   */
  digests(): Map<string, DocumentDigest> {
    return new Map(this.digestEntries());
  }

  /** digests(), one document at a time, in the order of the rows. */
  *digestEntries(): Generator<[string, DocumentDigest]> {
    for (let d = 0; d < this.#ids.size; d++) {
      const pairs = new PairDigest();
      for (let k = this.#starts[d]!; k < this.#starts[d + 1]!; k++) {
        const { scan, row } = this.#rowAt(this.#order[k]!);
        pairs.add(scan.indices[row]!, scan.keys[row]!);
      }
      yield [this.#ids.idOf(d), pairs.value];
    }
  }
}

/**
 * The order-free digest of one document's (chunk_index, hash key) pairs (DatasetRows.digests): a
 * sum of mixed pairs in two 32-bit lanes, duplicates counted.
 */
export class PairDigest {
  a = 0;
  b = 0;
  rows = 0;

  add(index: number, key: number): void {
    const low = key >>> 0;
    const high = Math.floor(key / 2 ** 32) >>> 0;
    this.a = (this.a + fmix32(low ^ Math.imul(index + 1, 0x9e3779b1) ^ fmix32(high))) >>> 0;
    this.b = (this.b + fmix32(high ^ Math.imul(index + 1, 0x85ebca77) ^ fmix32(low ^ 0x27d4eb2f))) >>> 0;
    this.rows += 1;
  }

  get value(): DocumentDigest {
    return { rows: this.rows, digest: lanesHex(this.a, this.b) };
  }
}

/**
 * The digest of a whole set of rows (id, chunk_index, hash key), in constant memory: per lane, the
 * sum over rows of `f(id) · g(chunk_index, key)` mod 2^32, `g` a lane of PairDigest's mix and `f` an
 * odd hash of the id. Multiplication distributes over the sum, so it is also the sum over
 * documents of `f(id) · (their PairDigest)`: rows can be added a file at a time, in any order, and
 * the plan's documents a document at a time, and the two agree exactly when the rows are the
 * planned ones (a row changed, missing or repeated changes each lane unless with probability
 * ~2^-32: an odd factor is invertible mod 2^32).
 */
export class VersionDigest {
  #a = 0;
  #b = 0;
  #rows = 0;

  /** A document's rows, as their PairDigest. */
  addDocument(id: string, pairs: PairDigest): void {
    const print = fingerprint(id);
    this.#a = (this.#a + Math.imul(print[0] | 1, pairs.a)) >>> 0;
    this.#b = (this.#b + Math.imul(print[1] | 1, pairs.b)) >>> 0;
    this.#rows += pairs.rows;
  }

  /** A document as `_documents.jsonl` records it (its rows and its PairDigest in hex). */
  addRecorded(id: string, { rows, digest }: DocumentDigest): void {
    const pairs = new PairDigest();
    [pairs.a, pairs.b] = hexLanes(digest);
    pairs.rows = rows;
    this.addDocument(id, pairs);
  }

  /** Another set of rows (another file's), added. */
  addDigest(other: VersionDigest): void {
    this.#a = (this.#a + other.#a) >>> 0;
    this.#b = (this.#b + other.#b) >>> 0;
    this.#rows += other.#rows;
  }

  get rows(): number {
    return this.#rows;
  }

  /** As a manifest records a file's rows (contract.fileDigests): its rows and both lanes in hex. */
  get record(): DocumentDigest {
    return { rows: this.#rows, digest: lanesHex(this.#a, this.#b) };
  }

  /** The digest a manifest recorded (`record`). */
  static fromRecord({ rows, digest }: DocumentDigest): VersionDigest {
    const restored = new VersionDigest();
    [restored.#a, restored.#b] = hexLanes(digest);
    restored.#rows = rows;
    return restored;
  }

  equals(other: VersionDigest): boolean {
    return this.#a === other.#a && this.#b === other.#b && this.#rows === other.#rows;
  }
}

/**
 * The VersionDigest of a file's rows, from their keys (each run of one id is one PairDigest); with
 * `kept`, of the rows it marks 1 only.
 */
export function versionDigestOf(
  rows: Pick<FileRowKeys, 'ids' | 'indices' | 'keys'>,
  kept?: Uint8Array,
): VersionDigest {
  const digest = new VersionDigest();
  const { ids } = rows;
  // One PairDigest for every run (addDocument keeps none): a file of 100,000 short documents made
  // as many objects, all garbage at once, where a switch holds every row already.
  const pairs = new PairDigest();
  for (let run = 0, start = 0; run < ids.runCount; start = ids.runEnd(run), run++) {
    pairs.a = 0;
    pairs.b = 0;
    pairs.rows = 0;
    for (let row = start; row < ids.runEnd(run); row++)
      if (!kept || kept[row] === 1) pairs.add(rows.indices[row]!, rows.keys[row]!);
    if (pairs.rows > 0) digest.addDocument(ids.runId(run), pairs);
  }
  return digest;
}

/** murmur3's 32-bit finalizer: every input bit flips each output bit with probability ~1/2. */
function fmix32(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

const HEX_BYTES = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
const hex8 = (n: number) =>
  HEX_BYTES[n >>> 24]! + HEX_BYTES[(n >>> 16) & 255]! + HEX_BYTES[(n >>> 8) & 255]! + HEX_BYTES[n & 255]!;

/** Two 32-bit lanes as the 16 hex digits a record holds (`_documents.jsonl`, the manifest). */
const lanesHex = (a: number, b: number) => hex8(a) + hex8(b);

/** A record's 16 hex digits as its two lanes. */
const hexLanes = (digest: string): [number, number] => [
  Number.parseInt(digest.slice(0, 8), 16) >>> 0,
  Number.parseInt(digest.slice(8, 16), 16) >>> 0,
];

/** A recorded digest: 16 lowercase hex digits. */
export const DIGEST_HEX = /^[0-9a-f]{16}$/;

export interface DocumentDigest {
  readonly rows: number;
  readonly digest: string;
}

/**
 * Collects violations, one per check and kind of problem, naming the first offending ids (or files)
 * with a detail each: every check of the contract reports through here.
 */
export class Violations {
  readonly #found = new Map<
    string,
    { check: ContractCheck; what: string; ids: string[]; named: string[]; count: number }
  >();

  add(check: ContractCheck, what: string, id: string, detail?: string): void {
    const key = `${check}\0${what}`;
    let entry = this.#found.get(key);
    if (entry === undefined) {
      entry = { check, what, ids: [], named: [], count: 0 };
      this.#found.set(key, entry);
    }
    entry.count += 1;
    if (entry.ids.length >= IDS_NAMED) return;
    entry.ids.push(id);
    entry.named.push(detail ? `${id} (${detail})` : id);
  }

  list(): ContractViolation[] {
    return [...this.#found.values()].map(({ check, what, ids, named, count }) => ({
      check,
      message: `${count} ${what}: ${named.join('; ')}${count > named.length ? '; …' : ''}`,
      ids,
    }));
  }
}

export interface ContractInput {
  readonly rows: DatasetRows;
  /** The dataset's vector length (0: no vector written yet, nothing to compare). */
  readonly dims: number;
  readonly failed: FailedChunks;
  /** At the switch: the plan. */
  readonly expected?: ExpectedRows;
  /** Later (verify): the per-document digests recorded at the switch. */
  readonly recorded?: ReadonlyMap<string, DocumentDigest>;
}

/** Every rule the rows break (empty: the version keeps the contract). */
export function checkRows(input: ContractInput): ContractViolation[] {
  const { rows, failed, expected, recorded } = input;
  const violations = new Violations();
  const digests = recorded ? rows.digests() : undefined;
  /** Rows per chunk index of the document at hand (reused: sized to the largest document). */
  let seen = new Int32Array(64);
  for (const [id, { indices, keys }] of rows.entries()) {
    const planned = expected?.chunksOf(id);
    if (expected && !expected.has(id)) {
      violations.add('planned-rows', 'rows of documents the plan does not have (deleted or unknown ids)', id);
      continue;
    }
    const gone = failed.get(id);
    let highest = -1;
    let negative = false;
    for (const index of indices) {
      if (index < 0) negative = true;
      else if (index > highest) highest = index;
    }
    let k = Math.max(planned?.length ?? 0, highest + 1);
    for (const index of gone ?? []) k = Math.max(k, index + 1);
    if (seen.length < k) seen = new Int32Array(2 * k);
    seen.fill(0, 0, k);
    let twice = -1;
    for (const index of indices) {
      if (index >= 0 && ++seen[index]! === 2 && twice < 0) twice = index;
    }
    let absent = -1;
    for (let index = 0; index < k && absent < 0; index++)
      if (seen[index] === 0 && !gone?.has(index)) absent = index;
    if (twice >= 0)
      violations.add('chunk-index', 'documents with a chunk_index twice', id, `chunk_index ${twice} twice`);
    if (absent >= 0)
      violations.add(
        'chunk-index',
        'documents missing a chunk_index of 0..k-1',
        id,
        `no chunk_index ${absent}`,
      );
    if (negative || (planned !== undefined && highest >= planned.length))
      violations.add(
        'chunk-index',
        'documents with a chunk_index outside the plan',
        id,
        negative ? 'a negative chunk_index' : `chunk_index ${highest}`,
      );
    if (planned) {
      const differs = indices.findIndex((index, i) => {
        const key = planned[index];
        return key !== undefined && !Number.isNaN(key) && key !== keys[i];
      });
      if (differs >= 0)
        violations.add(
          'planned-rows',
          'documents whose content_hash differs from the plan',
          id,
          `chunk_index ${indices[differs]}`,
        );
    }
    if (recorded) {
      const record = recorded.get(id);
      if (record === undefined)
        violations.add(
          'recorded-rows',
          'documents the manifest does not record (rows added after the switch)',
          id,
        );
      else if (record.digest !== digests!.get(id)!.digest)
        violations.add(
          'recorded-rows',
          'documents whose rows differ from what the switch recorded',
          id,
          `${indices.length} rows, recorded ${record.rows}`,
        );
    }
  }
  if (expected) {
    for (const id of expected.documents()) {
      if (rows.has(id)) continue;
      const planned = expected.chunkCount(id);
      const gone = failed.get(id);
      let allFailed = planned > 0;
      for (let index = 0; index < planned && allFailed; index++) allFailed = gone?.has(index) === true;
      if (allFailed) continue;
      violations.add('planned-rows', 'planned documents with no row', id);
    }
  }
  if (recorded) {
    for (const id of recorded.keys()) {
      if (!rows.has(id))
        violations.add('recorded-rows', 'recorded documents with no row (rows removed after the switch)', id);
    }
  }
  if (input.dims > 0) {
    for (const [file, dims] of rows.dims) {
      if (dims !== input.dims)
        violations.add(
          'dims',
          `files whose vectors are not of the dataset's ${input.dims} dims`,
          file,
          `${dims ?? 'no vector column'}`,
        );
    }
  }
  return violations.list();
}

/** `_documents.jsonl`: one line per document, `{"id", "rows", "digest"}`, in the order documents first appear in the files. */
export function documentLines(digests: Iterable<[string, DocumentDigest]>): string {
  let text = '';
  for (const [id, digest] of digests) text += documentLine(id, digest);
  return text;
}

/**
 * The same text as `JSON.stringify({ id, rows, digest })` plus a line break (rows an integer, the
 * digest hex: neither needs escaping), built around the id's own JSON: an object per document
 * was most of the cost of writing the file at the switch.
 */
export function documentLine(id: string, { rows, digest }: DocumentDigest): string {
  return `{"id":${JSON.stringify(id)},"rows":${rows},"digest":"${digest}"}\n`;
}

export function parseDocumentLines(text: string): Map<string, DocumentDigest> {
  // One parse of the lines as an array: measured faster than a parse per line
  // (docs/benchmarks.md, "Design figures").
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const records = JSON.parse(`[${lines.join(',')}]`) as ({ id: string } & DocumentDigest)[];
  const digests = new Map<string, DocumentDigest>();
  for (const { id, rows, digest } of records) digests.set(id, { rows, digest });
  return digests;
}

/** The sha256 of `_documents.jsonl`'s text: the manifest's digest of the whole version's rows. */
export function rowsDigest(documentsText: string): string {
  return createHash('sha256').update(documentsText).digest('hex');
}
