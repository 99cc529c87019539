/**
 * A NumberTable that stays small: its newest entries are in memory, and each time those reach
 * `memoryEntries` they move, sorted, to a run on disk (a small LSM tree). What stays in
 * memory per moved entry is a Bloom filter's 10 bits and a sparse index of every BLOCK-th key, so
 * a dataset of millions of rows costs a few MB instead of 16–48 bytes a row (the reuse index of a
 * large corpus grew with it, and doubled while it grew: docs/benchmarks.md, "Memory").
 *
 * A run's file is unlinked as soon as it is opened: it is freed when the table closes or the
 * process ends, however it ends (a killed run leaves nothing behind). It lives beside the dataset, on the
 * disk the dataset needs anyway, not in a /tmp that may be memory. Reads are synchronous `pread`s
 * of one block from the page cache: lookups stay synchronous, and a miss (the usual answer) is
 * told by the filters alone.
 */
import { closeSync } from 'node:fs';
import { openScratchFile, readAllAt } from '../files/scratch-file.js';
import { writePiecesAt } from '../files/write-pieces.js';
import { NumberTable } from './number-table.js';

/** Entries in memory before they move to a run (8 MB of table at most). */
export const MEMORY_ENTRIES = 2 ** 18;

/** Keys per block: one block (BLOCK × 16 bytes) is read per lookup the filter lets through. */
const BLOCK = 128;

/** Bloom filter bits per key (at least) and probes: at most ~0.8% false positives. */
const BITS_PER_KEY = 10;
const PROBES = 7;

/** One sorted run: (key, value) pairs in its own unlinked file, keys ascending. */
interface Run {
  readonly fd: number;
  readonly entries: number;
  /** The first key of each block. */
  readonly fences: Float64Array;
  readonly bloom: Uint32Array;
}

/** Pairs read or written at once while runs merge. */
const MERGE_CHUNK = 8192;

export class SpillingNumberTable {
  readonly #dir: string;
  readonly #memoryEntries: number;
  #memory = new NumberTable();
  /** Newest first: a key is looked for where recent rows went (duplicates are mostly close). */
  readonly #runs: Run[] = [];
  #spilled = 0;
  readonly #block = new Float64Array(2 * BLOCK);

  /** `dir`: where the runs' files go (each is unlinked at once). */
  constructor(dir: string, memoryEntries = MEMORY_ENTRIES) {
    this.#dir = dir;
    this.#memoryEntries = memoryEntries;
  }

  get size(): number {
    return this.#spilled + this.#memory.size;
  }

  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  get(key: number): number | undefined {
    const found = this.#memory.get(key);
    if (found !== undefined) return found;
    const runs = this.#runs;
    for (let r = 0; r < runs.length; r++) {
      const value = this.#find(runs[r]!, key);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  /** Sets `key` unless it is there already (the first value stays); true when it was added. */
  add(key: number, value: number): boolean {
    // The runs first: then the memory is probed once, by its own add (a key is never in both).
    const runs = this.#runs;
    for (let r = 0; r < runs.length; r++) if (this.#find(runs[r]!, key) !== undefined) return false;
    if (!this.#memory.add(key, value)) return false;
    if (this.#memory.size >= this.#memoryEntries) this.#spill();
    return true;
  }

  /** Frees the files (the table is empty afterwards: call it when done). */
  close(): void {
    for (const run of this.#runs) closeSync(run.fd);
    this.#runs.length = 0;
    this.#spilled = 0;
    this.#memory = new NumberTable();
  }

  /**
   * Moves the in-memory entries to a new run, then merges runs like a binary counter (the newest
   * two while the older is at most twice the newer): at most log2(entries / memoryEntries) + 1 runs
   * to look in, each entry rewritten as often.
   */
  #spill(): void {
    const memory = this.#memory;
    const keys = memory.keys().sort();
    const writer = new RunWriter(this.#dir, keys.length);
    for (const key of keys) writer.push(key, memory.get(key)!);
    this.#runs.unshift(writer.finish());
    this.#spilled += keys.length;
    // Its arrays fill again to the same size: reused, not given back to the allocator and taken
    // again (megabytes each spill, in a heap that then cannot shrink).
    memory.clear();
    while (this.#runs.length >= 2 && this.#runs[1]!.entries <= 2 * this.#runs[0]!.entries) {
      const [newer, older] = this.#runs.splice(0, 2) as [Run, Run];
      this.#runs.unshift(merge(this.#dir, older, newer));
      closeSync(newer.fd);
      closeSync(older.fd);
    }
  }

  #find(run: Run, key: number): number | undefined {
    if (!bloomHas(run.bloom, key)) return undefined;
    const { fences } = run;
    if (key < fences[0]!) return undefined;
    // The last block whose first key is <= key.
    let low = 0;
    let high = fences.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if (fences[mid]! <= key) low = mid;
      else high = mid - 1;
    }
    const first = low * BLOCK;
    const count = Math.min(BLOCK, run.entries - first);
    const block = this.#block;
    readPairs(run.fd, block, first, count);
    let lo = 0;
    let hi = count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = block[2 * mid]!;
      if (at === key) return block[2 * mid + 1];
      if (at < key) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }
}

/** Writes one run's pairs in key order to a new unlinked file, with its fences and filter. */
class RunWriter {
  readonly #fd: number;
  readonly #entries: number;
  readonly #fences: Float64Array;
  readonly #bloom: Uint32Array;
  readonly #buffer = new Float64Array(2 * MERGE_CHUNK);
  #buffered = 0;
  #written = 0;

  constructor(dir: string, entries: number) {
    this.#fd = openScratchFile(dir, 'table');
    this.#entries = entries;
    this.#fences = new Float64Array(Math.ceil(entries / BLOCK));
    // A power of two of bits (10 to 20 a key): a probe is masked, not divided.
    let words = 1;
    while (words * 32 < entries * BITS_PER_KEY) words *= 2;
    this.#bloom = new Uint32Array(words);
  }

  push(key: number, value: number): void {
    const i = this.#written + this.#buffered;
    if (i % BLOCK === 0) this.#fences[i / BLOCK] = key;
    bloomAdd(this.#bloom, key);
    this.#buffer[2 * this.#buffered] = key;
    this.#buffer[2 * this.#buffered + 1] = value;
    if (++this.#buffered === MERGE_CHUNK) this.#flush();
  }

  finish(): Run {
    this.#flush();
    return { fd: this.#fd, entries: this.#entries, fences: this.#fences, bloom: this.#bloom };
  }

  #flush(): void {
    writePiecesAt(
      this.#fd,
      [new Uint8Array(this.#buffer.buffer, 0, this.#buffered * 16)],
      this.#written * 16,
    );
    this.#written += this.#buffered;
    this.#buffered = 0;
  }
}

/** One run with the pairs of both, read a chunk at a time (their keys never overlap: add refuses). */
function merge(dir: string, a: Run, b: Run): Run {
  const writer = new RunWriter(dir, a.entries + b.entries);
  const readers = [new RunReader(a), new RunReader(b)] as const;
  for (;;) {
    const [x, y] = readers;
    const kx = x.key();
    const ky = y.key();
    if (kx === undefined && ky === undefined) return writer.finish();
    const from = ky === undefined || (kx !== undefined && kx < ky) ? x : y;
    writer.push(from.key()!, from.value());
    from.next();
  }
}

/** A run's pairs in order, MERGE_CHUNK at a time. */
class RunReader {
  readonly #run: Run;
  readonly #chunk = new Float64Array(2 * MERGE_CHUNK);
  #start = 0;
  #count = 0;
  #at = 0;

  constructor(run: Run) {
    this.#run = run;
    this.#load(0);
  }

  key(): number | undefined {
    return this.#at < this.#count ? this.#chunk[2 * this.#at] : undefined;
  }

  value(): number {
    return this.#chunk[2 * this.#at + 1]!;
  }

  next(): void {
    if (++this.#at === this.#count) this.#load(this.#start + this.#count);
  }

  #load(first: number): void {
    this.#start = first;
    this.#count = Math.min(MERGE_CHUNK, this.#run.entries - first);
    this.#at = 0;
    if (this.#count > 0) readPairs(this.#run.fd, this.#chunk, first, this.#count);
  }
}

/** Reads `count` pairs from pair `first` of a run's file into `into`. */
function readPairs(fd: number, into: Float64Array, first: number, count: number): void {
  readAllAt(fd, new Uint8Array(into.buffer, 0, count * 16), first * 16, 'a spilled table file');
}

/**
 * The filter's bits for `key`, by double hashing on its two halves (uniform already: keys are hash
 * prefixes); `set` sets them, otherwise answers whether all are set.
 */
function bloomBits(bloom: Uint32Array, key: number, set: boolean): boolean {
  const mask = bloom.length * 32 - 1;
  const low = key >>> 0;
  const step = (Math.imul(Math.floor(key / 2 ** 32) ^ low, 0x9e3779b1) >>> 0) | 1;
  for (let i = 0; i < PROBES; i++) {
    const bit = (low + Math.imul(i, step)) & mask;
    const flag = 1 << (bit & 31);
    if (set) bloom[bit >>> 5]! |= flag;
    else if ((bloom[bit >>> 5]! & flag) === 0) return false;
  }
  return true;
}

const bloomAdd = (bloom: Uint32Array, key: number): void => void bloomBits(bloom, key, true);
const bloomHas = (bloom: Uint32Array, key: number): boolean => bloomBits(bloom, key, false);
