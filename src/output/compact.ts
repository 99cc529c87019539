/**
 * Compaction: the dataset's many small part files (one per batch) merged, in dataset order, into a
 * few large data files (`data-<NNNNN>-<content id>.parquet`) with row groups sized for DuckDB and
 * Arrow readers. Each data file carries every merged batch's metadata (see compacted-file.ts), so
 * resume and accounting work on a compacted dataset as on parts. A Parquet part whose rows all stay
 * is copied as its record batches in wasm memory, without the trip through Arrow JS and back that a
 * filtered one takes (measured faster in wall and CPU time: docs/benchmarks.md, "Design figures").
 *
 * Safety: every new file is written to a temp file and read back (its row count and batch map)
 * before any is renamed into place; the merged files are removed only after all new files are in
 * place. A failure before that removes the temp files and leaves the dataset as it was. A crash
 * between the renames and the removals leaves batches both in parts and in data files: a data file
 * whose batches are all among the files being compacted is such a leftover, and the next compaction
 * removes it with its inputs.
 *
 * Memory: the input being merged and those read ahead of it (up to 8 MB of them, at least the next
 * one; a large data file is read a row group at a time instead), plus one output row group in the
 * Parquet writer (one record batch for Arrow) and the one being written to disk. Measured peak
 * RSS: docs/benchmarks.md, "Design figures".
 */
import { createHash } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type Field, type RecordBatch, Schema, util } from 'apache-arrow';
import pLimit from 'p-limit';
import { DEFAULTS } from '../config/defaults.js';
import { OutputError } from '../errors.js';
import { writeArrowStream } from './arrow-stream.js';
import { syncDirectory, TempFile } from './atomic.js';
import {
  batchMetadata,
  COMPACTED_BATCHES_KEY,
  compactedContents,
  compactedFileName,
  compactedMetadata,
  parseCompactedFileName,
  readCompactedContents,
  splitBatchMetadata,
  withoutWriterKeys,
} from './compacted-file.js';
import { PART_METADATA_KEYS, parsePartFileName } from './dataset.js';
import { fileBatches, parquetWasmBatches, readAhead } from './file-batches.js';
import { isNotFound, messageOf } from './fs-errors.js';
import { DEFAULT_PARQUET_COMPRESSION, type ParquetCompression, parquetFooter } from './parquet.js';
import { type StreamBatch, writeParquetStream } from './parquet-stream.js';
import { CODECS, type OutputFormat } from './part-file.js';

export interface CompactOptions {
  readonly dir: string;
  readonly format: OutputFormat;
  /**
   * The files to merge, in dataset order, relative to `dir`: part files, and compacted files to
   * merge again (e.g. to drop superseded rows from them).
   */
  readonly parts: readonly string[];
  /**
   * Whether a file's row stays, by its position in the file (0-based); the rows it rejects (rows the
   * plan no longer wants, copies of rows kept elsewhere) are dropped.
   */
  readonly keepRow?: (file: string, row: number) => boolean;
  /**
   * Whether `keepRow` keeps every row of this file, known without reading its rows (default: only
   * when there is no keepRow). Such a Parquet part is copied as it is, without decoding it to Arrow
   * JS and encoding it again: compaction ran at about half the CPU.
   */
  readonly keepsEveryRow?: (file: string) => boolean;
  /** Whether a batch stays listed in the output's metadata (default all): a batch no longer planned goes. */
  readonly keepBatch?: (batchId: string) => boolean;
  /** A data file takes input files until their bytes would pass this (it always takes one). */
  readonly targetFileBytes?: number;
  /** Parquet row group (Arrow record batch) size, in uncompressed column bytes, and a cap in rows. */
  readonly rowGroupBytes?: number;
  readonly rowGroupRows?: number;
  /** Parquet only; default snappy, as for parts. */
  readonly compression?: ParquetCompression;
  /** How an input's key-value metadata is read (default: its footer, from the file). */
  readonly readMetadata?: (path: string) => Promise<Record<string, string>>;
}

export interface CompactedFile {
  /** File name, relative to the output folder. */
  readonly file: string;
  readonly rows: number;
  readonly bytes: number;
  /** The batches it holds, in dataset order (a batch whose rows were all dropped is still listed). */
  readonly batches: readonly string[];
}

export interface CompactionResult {
  readonly files: readonly CompactedFile[];
  /** Files removed: the merged inputs, then leftovers of an interrupted compaction. */
  readonly removed: readonly string[];
  /** Rows `keepRow` dropped. */
  readonly droppedRows: number;
}

/** One input file and the batches it holds, with their full metadata. */
interface Input {
  readonly name: string;
  readonly path: string;
  readonly bytes: number;
  readonly batches: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

interface Written {
  readonly temp: TempFile;
  readonly file: string;
  readonly rows: number;
  readonly batches: readonly string[];
}

/** Footer reads (the survey) or removals in flight: each mostly waits on the file system. */
const FILE_OPS_IN_FLIGHT = 8;

export async function compactParts(options: CompactOptions): Promise<CompactionResult> {
  const { dir, format } = options;
  if (options.parts.length === 0) return { files: [], removed: [], droppedRows: 0 };
  const inputs = await surveyInputs(options);
  const leftovers = await findLeftovers(dir, format, inputs);

  const all = new Map<string, Readonly<Record<string, string>>>();
  for (const input of inputs) for (const [id, metadata] of input.batches) all.set(id, metadata);
  const { run, batches: own } = splitBatchMetadata(all, [PART_METADATA_KEYS.batchId]);

  const groups = planGroups(inputs, options.targetFileBytes ?? DEFAULTS.compaction.targetFileBytes);
  let index = (await highestIndex(dir)) + 1;
  const checks: Checks = { filter: new RowFilter(options.keepRow), columns: new ColumnCheck() };
  const written: Written[] = [];
  try {
    for (const group of groups) {
      const keepBatch = options.keepBatch ?? (() => true);
      const batchIds = group.flatMap((input) => [...input.batches.keys()].filter(keepBatch));
      const batches = new Map(batchIds.map((id) => [id, own.get(id)!]));
      const metadata = compactedMetadata({ run, batches });
      written.push(await writeGroup(options, { inputs: group, index, metadata, batchIds }, checks));
      index += 1;
    }
  } catch (error) {
    await Promise.all(written.map((w) => w.temp.discard()));
    throw error;
  }

  await moveIntoPlace(dir, written);
  const removed = [...inputs.map((i) => i.name), ...leftovers];
  const limit = pLimit(FILE_OPS_IN_FLIGHT);
  await Promise.all(
    removed.map((name) =>
      limit(async () => {
        const path = join(dir, name);
        try {
          await rm(path, { force: true });
        } catch (error) {
          throw new OutputError(`compacted, but cannot remove ${path}: ${messageOf(error)}`, {
            cause: error,
          });
        }
      }),
    ),
  );
  await syncDirectory(dir);
  return {
    files: written.map((w) => ({ file: w.file, rows: w.rows, bytes: w.temp.bytes, batches: w.batches })),
    removed,
    droppedRows: checks.filter.dropped,
  };
}

/** Reads every input's metadata (footers only) and refuses names that are not files of the dataset. */
async function surveyInputs(options: CompactOptions): Promise<Input[]> {
  const { dir, format } = options;
  const read = options.readMetadata ?? CODECS[format].readMetadata;
  const limit = pLimit(FILE_OPS_IN_FLIGHT);
  const inputs = await Promise.all(
    options.parts.map((name) => limit(() => surveyInput(dir, format, name, read))),
  );
  const seen = new Map<string, string>();
  for (const input of inputs) {
    for (const id of input.batches.keys()) {
      const other = seen.get(id);
      if (other !== undefined) {
        throw new OutputError(`cannot compact: batch ${id} is in both ${other} and ${input.name}`);
      }
      seen.set(id, input.name);
    }
  }
  return inputs;
}

async function surveyInput(
  dir: string,
  format: OutputFormat,
  name: string,
  readMetadata: (path: string) => Promise<Record<string, string>>,
): Promise<Input> {
  const path = join(dir, name);
  const part = parsePartFileName(name);
  const compacted = parseCompactedFileName(name);
  if (/[\\/]/.test(name) || (part?.format ?? compacted?.format) !== format) {
    throw new OutputError(`cannot compact ${path}: not a ${format} part or data file of the dataset`);
  }
  let bytes: number;
  let metadata: Record<string, string>;
  try {
    bytes = (await stat(path)).size;
    metadata = await readMetadata(path);
  } catch (error) {
    throw new OutputError(`cannot compact ${path}: ${messageOf(error)}`, { cause: error });
  }
  const batches = new Map<string, Readonly<Record<string, string>>>();
  if (part) {
    batches.set(part.batchId, withoutWriterKeys(metadata));
  } else {
    const contents = compactedContents(metadata, path);
    for (const id of contents.batches.keys()) batches.set(id, batchMetadata(contents, id));
  }
  return { name, path, bytes, batches };
}

/**
 * Data files (not among the inputs) whose batches are all in the inputs: what an interrupted
 * compaction left. A data file holding some of the inputs' batches and others is refused: a batch
 * would end up in two files.
 */
async function findLeftovers(dir: string, format: OutputFormat, inputs: readonly Input[]): Promise<string[]> {
  const inputNames = new Set(inputs.map((i) => i.name));
  const owner = new Map<string, string>();
  for (const input of inputs) for (const id of input.batches.keys()) owner.set(id, input.name);
  const leftovers: string[] = [];
  for (const name of (await listNames(dir)).sort()) {
    if (inputNames.has(name) || parseCompactedFileName(name)?.format !== format) continue;
    const ids = [...(await readCompactedContents(dir, name, format)).batches.keys()];
    const shared = ids.filter((id) => owner.has(id));
    if (shared.length === 0) continue;
    if (shared.length < ids.length) {
      throw new OutputError(
        `cannot compact: batch ${shared[0]} of ${owner.get(shared[0]!)} is also in ${join(dir, name)}`,
      );
    }
    leftovers.push(name);
  }
  return leftovers;
}

/** Consecutive inputs per data file, up to the target size (an input is never split). */
function planGroups(inputs: readonly Input[], targetBytes: number): Input[][] {
  const groups: Input[][] = [];
  let current: Input[] = [];
  let bytes = 0;
  for (const input of inputs) {
    if (current.length > 0 && bytes + input.bytes > targetBytes) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(input);
    bytes += input.bytes;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** The highest data file number in the folder (-1 for none): new files sort after the ones there. */
async function highestIndex(dir: string): Promise<number> {
  let highest = -1;
  for (const name of await listNames(dir)) {
    const parsed = parseCompactedFileName(name);
    if (parsed && parsed.index > highest) highest = parsed.index;
  }
  return highest;
}

/** One data file to write: its inputs, in order, and what its metadata says. */
interface Group {
  readonly inputs: readonly Input[];
  readonly index: number;
  readonly metadata: Record<string, string>;
  readonly batchIds: readonly string[];
}

/** Applied to every row of the compaction, across files. */
interface Checks {
  readonly filter: RowFilter;
  readonly columns: ColumnCheck;
}

/** Writes one data file to a temp file and checks what it holds; the caller renames it. */
async function writeGroup(options: CompactOptions, group: Group, checks: Checks): Promise<Written> {
  const { dir, format } = options;
  const { inputs, index, metadata } = group;
  const provisional = join(dir, compactedFileName(index, 'x', format));
  // A Parquet file's footer alone is read back (verify): around the page cache (output/direct-write.ts).
  const temp = await TempFile.create(provisional, { direct: format === 'parquet' });
  const hash = createHash('sha256');
  let rows = 0;
  const keepsEveryRow = options.keepRow ? (options.keepsEveryRow ?? (() => false)) : () => true;
  async function* batches(): AsyncGenerator<StreamBatch> {
    let last: RecordBatch | undefined;
    let yielded = false;
    const reads = new ReadsAhead(inputs, format);
    for (const [k, input] of inputs.entries()) {
      try {
        const contents = await reads.take(k);
        const whole = contents && keepsEveryRow(input.name) ? parquetWasmBatches(contents) : undefined;
        if (whole) {
          checks.columns.check(whole.fields, input.path);
          for (const batch of whole.batches) {
            rows += batch.numRows;
            yielded = true;
            yield batch;
          }
          continue;
        }
        for await (const batch of fileBatches(input.path, format, contents)) {
          checks.columns.check(batch.schema.fields, input.path);
          last = batch;
          for (const kept of checks.filter.apply(batch, input.name)) {
            rows += kept.numRows;
            yielded = true;
            yield kept;
          }
        }
      } catch (error) {
        if (error instanceof OutputError) throw error;
        throw new OutputError(`cannot compact ${input.path}: ${messageOf(error)}`, { cause: error });
      }
    }
    // Every row dropped: the file still holds its batches' metadata, and needs its columns.
    if (!yielded && last) yield last.slice(0, 0);
  }
  // One write in flight while the writer encodes the next row group (awaiting each write stalled
  // the encoding, a measurable share of a finalize: docs/benchmarks.md, "Design figures").
  let writing = Promise.resolve();
  const sink = async (chunk: Uint8Array) => {
    hash.update(chunk);
    await writing;
    writing = temp.write(chunk);
    writing.catch(() => {});
  };
  try {
    const rowGroupBytes = options.rowGroupBytes ?? DEFAULTS.compaction.rowGroupBytes;
    if (format === 'parquet') {
      await writeParquetStream(metadata, batches(), sink, {
        compression: options.compression ?? DEFAULT_PARQUET_COMPRESSION,
        rowGroups: { bytes: rowGroupBytes, rows: options.rowGroupRows ?? DEFAULTS.compaction.rowGroupRows },
      });
    } else {
      // Arrow files are never read whole (readAhead), so none of their batches stays in wasm.
      const arrowBatches = batches() as AsyncGenerator<RecordBatch>;
      await writeArrowStream(metadata, arrowBatches, sink, { recordBatchBytes: rowGroupBytes });
    }
    await writing;
    await temp.close();
    await verify(temp.path, format, rows, metadata[COMPACTED_BATCHES_KEY]!, provisional);
  } catch (error) {
    await temp.discard();
    if (error instanceof OutputError) throw error;
    throw new OutputError(`cannot write ${provisional}: ${messageOf(error)}`, { cause: error });
  }
  const file = compactedFileName(index, hash.digest('hex').slice(0, 12), format);
  return { temp, file, rows, batches: group.batchIds };
}

/** Reads the written file back: every row and the batch map must be there (the Parquet stream writer can fail silently). */
async function verify(
  path: string,
  format: OutputFormat,
  rows: number,
  batchMap: string,
  label: string,
): Promise<void> {
  let found: number;
  let metadata: Record<string, string>;
  try {
    if (format === 'parquet') {
      const footer = await parquetFooter(path);
      found = footer.rows;
      metadata = footer.metadata;
    } else {
      found = 0;
      for await (const batch of fileBatches(path, format)) found += batch.numRows;
      metadata = await CODECS[format].readMetadata(path);
    }
  } catch (error) {
    throw new OutputError(`${label}: the written file does not read back (${messageOf(error)})`, {
      cause: error,
    });
  }
  if (found !== rows) throw new OutputError(`${label}: wrote ${found} rows, expected ${rows}`);
  if (metadata[COMPACTED_BATCHES_KEY] !== batchMap) {
    throw new OutputError(
      `${label}: the written file's ${COMPACTED_BATCHES_KEY} metadata does not read back`,
    );
  }
}

/**
 * Files read before they are merged: the next one always, more while their bytes stay within
 * READ_AHEAD_BYTES, so the reads (each an open, a stat, a read and a close on libuv's threads)
 * overlap the merging instead of waiting for it, part after part.
 */
class ReadsAhead {
  readonly #reads: (Promise<Uint8Array | undefined> | undefined)[] = [];
  #started = 0;
  /** Bytes of the reads started for inputs after the one being merged. */
  #bytesAhead = 0;

  constructor(
    private readonly inputs: readonly Input[],
    private readonly format: OutputFormat,
  ) {}

  /** Input k's contents (see readAhead); reads of the inputs after it start now. */
  take(k: number): Promise<Uint8Array | undefined> {
    const { inputs } = this;
    if (k > 0 && k < this.#started) this.#bytesAhead -= inputs[k]!.bytes;
    while (
      this.#started < inputs.length &&
      (this.#started <= k + 1 || this.#bytesAhead + inputs[this.#started]!.bytes <= READ_AHEAD_BYTES)
    ) {
      const input = inputs[this.#started]!;
      const read = readAhead(input.path, this.format, input.bytes);
      // Awaited later; until then a failure must not count as unhandled.
      read.catch(() => {});
      this.#reads[this.#started] = read;
      if (this.#started > k) this.#bytesAhead += input.bytes;
      this.#started += 1;
    }
    const read = this.#reads[k]!;
    this.#reads[k] = undefined;
    return read;
  }
}

const READ_AHEAD_BYTES = 8 * 2 ** 20;

/** Renames every written file into place; if one rename fails, the ones done are taken back. */
async function moveIntoPlace(dir: string, written: readonly Written[]): Promise<void> {
  const moved: string[] = [];
  try {
    for (const w of written) {
      await w.temp.moveTo(join(dir, w.file));
      moved.push(w.file);
    }
  } catch (error) {
    await Promise.all(moved.map((file) => rm(join(dir, file), { force: true }).catch(() => {})));
    await Promise.all(written.map((w) => w.temp.discard()));
    throw error;
  }
  await syncDirectory(dir);
}

/** Every input must have the columns of the first one (a data file has one schema). */
class ColumnCheck {
  private reference: { fields: Field[]; path: string } | undefined;

  check(fields: Field[], path: string): void {
    if (!this.reference) {
      this.reference = { fields, path };
      return;
    }
    if (!util.compareSchemas(new Schema(fields), new Schema(this.reference.fields))) {
      throw new OutputError(
        `cannot compact ${path}: its columns (${fields.join(', ')}) differ from ${this.reference.path}'s (${this.reference.fields.join(', ')})`,
      );
    }
  }
}

/** Applies `keepRow`: kept rows as zero-copy slices of the batch. */
class RowFilter {
  dropped = 0;
  /** Rows of each file seen so far: the position of the next batch's first row. */
  readonly #seen = new Map<string, number>();

  constructor(private readonly keepRow: CompactOptions['keepRow']) {}

  *apply(batch: RecordBatch, file: string): Generator<RecordBatch> {
    const keepRow = this.keepRow;
    const first = this.#seen.get(file) ?? 0;
    this.#seen.set(file, first + batch.numRows);
    if (!keepRow || batch.numRows === 0) {
      yield batch;
      return;
    }
    let start = -1;
    for (let i = 0; i < batch.numRows; i++) {
      const keep = keepRow(file, first + i);
      if (keep && start < 0) start = i;
      if (!keep) {
        this.dropped += 1;
        if (start >= 0) yield batch.slice(start, i);
        start = -1;
      }
    }
    if (start >= 0) yield start === 0 ? batch : batch.slice(start, batch.numRows);
  }
}

async function listNames(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw new OutputError(`cannot list ${dir}: ${messageOf(error)}`, { cause: error });
  }
}
