import { closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { openScratchFile, readAllAt } from '../files/scratch-file.js';
import { writePiecesAt } from '../files/write-pieces.js';
import { fingerprint } from '../fingerprint.js';
import { SpillingNumberTable } from '../output/spilling-number-table.js';

/**
 * Duplicate-id detection for one corpus: the first occurrence of an id wins, later ones are
 * rejected naming where it was first seen.
 *
 * This is the one piece of reading state that grows with the number of documents, so it keeps no
 * id strings and little in memory: a 64-bit fingerprint of each id goes into a SpillingNumberTable
 * (its newest entries in memory, the rest in sorted runs on disk behind Bloom filters), and each
 * id's first location into a log on disk, read back only to name a duplicate. A table in memory
 * cost 32–64 bytes an id and doubled while it grew: a corpus of 20 million short rows needed a
 * gigabyte for it alone. The price of fingerprints: two different ids with the same 64 bits would
 * be reported as duplicates; with n ids that happens with probability about n²/2^65 (3·10⁻⁶ for
 * 10 million).
 *
 * The files go to the system's temporary folder, unlinked as soon as they are opened: nothing is
 * left behind however the process ends. Call close() when the corpus has been read.
 */
export class IdRegistry {
  /** 52 bits of the fingerprint → the id's ordinal × 2^12 + the fingerprint's other 12 bits. */
  readonly #seen: SpillingNumberTable;
  /** By ordinal: where each registered id was first seen. */
  readonly #locations = new LocationLog();
  /**
   * Ids whose 52-bit key another id holds with different other bits (so not a duplicate): by full
   * fingerprint → first location. Expected empty: about n²/2^53 such pairs among n ids.
   */
  readonly #sharedKeys = new Map<string, string>();
  readonly #files: string[] = [];
  readonly #fileIndex = new Map<string, number>();
  /** 2^checkBits: the fingerprint's high word is split at it between the key and the value. */
  readonly #checkScale: number;

  /**
   * `memoryIds`: fingerprints kept in memory before they move to disk; `checkBits` (≤ 32): how
   * many bits of the fingerprint go in the value rather than the key. Both are smaller in tests,
   * so that spills and shared keys happen with few ids.
   */
  constructor({ memoryIds = MEMORY_IDS, checkBits = CHECK_BITS } = {}) {
    this.#seen = new SpillingNumberTable(tmpdir(), memoryIds);
    this.#checkScale = 2 ** checkBits;
  }

  /** Number of distinct ids registered. */
  get size(): number {
    return this.#locations.size + this.#sharedKeys.size;
  }

  /**
   * Registers `id` as seen at `file`:`line`. Returns undefined for a new id, or the first location
   * ("file:line") when the id was registered before (and then registers nothing).
   */
  claim(id: string, file: string, line: number): string | undefined {
    const print = fingerprint(id);
    const hi = print[0];
    const lo = print[1];
    const scale = this.#checkScale;
    const key = Math.floor(hi / scale) * 2 ** 32 + lo;
    const check = hi % scale;
    const ordinal = this.#locations.size;
    if (this.#seen.add(key, ordinal * scale + check)) {
      this.#locations.append(this.#indexOf(file), line);
      return undefined;
    }
    const taken = this.#seen.get(key)!;
    if (taken % scale === check) {
      const [fileIndex, firstLine] = this.#locations.at(Math.floor(taken / scale));
      return `${this.#files[fileIndex]}:${firstLine}`;
    }
    const full = `${hi}:${lo}`;
    const first = this.#sharedKeys.get(full);
    if (first !== undefined) return first;
    this.#sharedKeys.set(full, `${file}:${line}`);
    return undefined;
  }

  /** Frees the files; the registry is empty afterwards. */
  close(): void {
    this.#seen.close();
    this.#locations.close();
    this.#sharedKeys.clear();
  }

  #indexOf(file: string): number {
    let index = this.#fileIndex.get(file);
    if (index === undefined) {
      index = this.#files.push(file) - 1;
      this.#fileIndex.set(file, index);
    }
    return index;
  }
}

/** Fingerprints in memory before a spill: a 2 MB table (the spilled ones cost ~1.3 bytes each in memory). */
const MEMORY_IDS = 2 ** 16;
/** The fingerprint bits kept in the value, beside the ordinal (52 in the key + 12 = all 64). */
const CHECK_BITS = 12;

/** Records of the log buffered in memory before they are written (64 KB). */
const LOG_BUFFER_RECORDS = 8192;

/** (file index, line) records by ordinal, in an unlinked temporary file with a buffer in front. */
class LocationLog {
  #fd: number | undefined;
  /** Records written to the file. */
  #written = 0;
  readonly #buffer = new Uint32Array(2 * LOG_BUFFER_RECORDS);
  #buffered = 0;
  readonly #read = new Uint32Array(2);

  get size(): number {
    return this.#written + this.#buffered;
  }

  append(file: number, line: number): void {
    this.#buffer[2 * this.#buffered] = file;
    this.#buffer[2 * this.#buffered + 1] = line;
    if (++this.#buffered === LOG_BUFFER_RECORDS) this.#flush();
  }

  at(ordinal: number): [file: number, line: number] {
    if (ordinal >= this.#written) {
      const at = 2 * (ordinal - this.#written);
      return [this.#buffer[at]!, this.#buffer[at + 1]!];
    }
    readAllAt(this.#fd!, new Uint8Array(this.#read.buffer), ordinal * 8, 'the id registry file');
    return [this.#read[0]!, this.#read[1]!];
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
    this.#written = 0;
    this.#buffered = 0;
  }

  #flush(): void {
    this.#fd ??= openScratchFile(tmpdir(), 'ids');
    writePiecesAt(this.#fd, [new Uint8Array(this.#buffer.buffer, 0, this.#buffered * 8)], this.#written * 8);
    this.#written += this.#buffered;
    this.#buffered = 0;
  }
}
