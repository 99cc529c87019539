/**
 * The output folder as a dataset of part files, one per batch, named by the deterministic batch id:
 * `part-<batchId>.parquet` (or `.arrow`). Writing a part is atomic and idempotent (the same batch
 * replaces the same file), which turns at-least-once delivery into exactly-once output and lets a
 * re-run skip every batch whose part already exists.
 *
 * After a compaction (compact.ts) batches also live in compacted data files, which list the batches
 * they hold in their metadata: a batch is committed when it has a part or is in a data file.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { concatenated } from '../concatenated.js';
import type { EmbeddedBatch } from '../domain.js';
import { OutputError } from '../errors.js';
import { removeStaleTempFiles } from './atomic.js';
import { batchRecordFrom } from './batch-record.js';
import {
  batchMetadata,
  COMPACTED_BATCHES_KEY,
  type CompactedContents,
  compactedFileName,
  compactedMetadata,
  parseCompactedFileName,
  readCompactedContents,
  splitBatchMetadata,
  withoutWriterKeys,
} from './compacted-file.js';
import { fileBatches } from './file-batches.js';
import { isNotFound, messageOf } from './fs-errors.js';
import { DEFAULT_PARQUET_COMPRESSION, type ParquetCompression, parquetFooter } from './parquet.js';
import {
  CODECS,
  type OutputFormat,
  type PartContent,
  type PartFileSpec,
  writePartFile,
} from './part-file.js';
import { partRowsFromBatch } from './rows.js';

export type { OutputFormat } from './part-file.js';

export interface DatasetWriterOptions {
  readonly dir: string;
  readonly format: OutputFormat;
  /** Run-level metadata (model, dims, providers, plan parameters, tool version) for every part. */
  readonly metadata: Record<string, string>;
  /** The run's vector dimensions: when given, a batch with other dims is refused. */
  readonly dims?: number;
  /** Parquet only; default snappy (see parquet.ts for the measurements). */
  readonly compression?: ParquetCompression;
  /**
   * Write the image columns (`image_source`, `image_sha256`) in every file: a dataset whose corpus
   * has images. Default: whether the plan in `metadata` (`embedpipe.plan`) has images (see
   * planHasImages), so every writer of one plan writes the same columns.
   */
  readonly imageColumns?: boolean;
  /**
   * How a file's key-value metadata is read (default: from the file, Parquet's footer only). A
   * distributed finalize passes one that reads each file once for its tally and its compaction.
   */
  readonly readMetadata?: (path: string) => Promise<Record<string, string>>;
}

/**
 * Whether a plan key (the run's plan parameters as JSON, in every file's `embedpipe.plan`) is the
 * plan of a corpus with images: it then has an `images` entry (planning/plan.ts). The schema of a
 * dataset's files follows from its plan, so a version (one plan) never mixes schemas.
 */
export function planHasImages(planKey: string | undefined): boolean {
  if (planKey === undefined) return false;
  try {
    const plan = JSON.parse(planKey) as Record<string, unknown> | null;
    return typeof plan === 'object' && plan !== null && typeof plan['images'] === 'object';
  } catch {
    return false;
  }
}

export interface WrittenPart {
  /** File name, relative to the output folder. */
  readonly file: string;
  readonly rows: number;
  readonly bytes: number;
}

/** Batch ids become file names: no separators, no leading dot (that prefix is for temp files). */
const BATCH_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;
/** A complete part file of either format; temp files (`.part-….tmp-…`) never match. */
const PART_FILE = /^part-(.+)\.(parquet|arrow)$/;

/** The batch id and format of a part file's name; undefined for any other name. */
export function parsePartFileName(name: string): { batchId: string; format: OutputFormat } | undefined {
  const match = PART_FILE.exec(name);
  return match ? { batchId: match[1]!, format: match[2] as OutputFormat } : undefined;
}

/** Per-part metadata keys added to the run metadata. */
export const PART_METADATA_KEYS = {
  batchId: 'embedpipe.batch_id',
  provider: 'embedpipe.batch_provider',
} as const;

/** Who wrote a data file of the folder: its run metadata (`embedpipe.model`, `embedpipe.plan`). */
export interface DataFileOrigin {
  readonly file: string;
  readonly model?: string;
  readonly plan?: string;
}

/** Run metadata keys read back by dataFileOrigins (written by the pipeline's DatasetWriter metadata). */
export const RUN_METADATA_KEYS = { model: 'embedpipe.model', plan: 'embedpipe.plan' } as const;

export class DatasetWriter {
  readonly dir: string;
  readonly format: OutputFormat;
  private readonly metadata: Record<string, string>;
  private readonly dims: number | undefined;
  private readonly codec: (typeof CODECS)[OutputFormat];
  private readonly compression: ParquetCompression;
  private readonly imageColumns: boolean;
  /** A file's key-value metadata (see DatasetWriterOptions.readMetadata). */
  readonly readFileMetadata: (path: string) => Promise<Record<string, string>>;

  constructor(opts: DatasetWriterOptions) {
    this.dir = opts.dir;
    this.format = opts.format;
    this.metadata = { ...opts.metadata };
    this.dims = opts.dims;
    this.codec = CODECS[opts.format];
    this.compression = opts.compression ?? DEFAULT_PARQUET_COMPRESSION;
    this.imageColumns = opts.imageColumns ?? planHasImages(opts.metadata[RUN_METADATA_KEYS.plan]);
    this.readFileMetadata = opts.readMetadata ?? this.codec.readMetadata;
  }

  partFileName(batchId: string): string {
    if (!BATCH_ID.test(batchId))
      throw new OutputError(`batch id ${JSON.stringify(batchId)} is not a safe file name`);
    return `part-${batchId}${this.codec.extension}`;
  }

  /** Whether the batch's part exists; parts are only ever renamed into place whole, so existing means complete. */
  async hasPart(batchId: string): Promise<boolean> {
    const path = join(this.dir, this.partFileName(batchId));
    try {
      return (await stat(path)).isFile();
    } catch (error) {
      if (isNotFound(error)) return false;
      throw new OutputError(`cannot check ${path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /**
   * Batch ids committed in this writer's format: its part files (temp files ignored) and the batches
   * listed in its compacted data files.
   */
  async existingParts(): Promise<Set<string>> {
    return new Set((await this.batchFiles()).keys());
  }

  /**
   * The file holding each committed batch (relative to the folder). A part wins over a data file:
   * both exist only after a compaction was interrupted, and compacting the parts again resolves it.
   */
  async batchFiles(): Promise<Map<string, string>> {
    const files = new Map<string, string>();
    const names = await this.listNames();
    for (const name of names) {
      const part = parsePartFileName(name);
      if (part?.format === this.format) files.set(part.batchId, name);
    }
    for (const [name, contents] of await this.compactedFiles(names)) {
      for (const batchId of contents.batches.keys()) if (!files.has(batchId)) files.set(batchId, name);
    }
    return files;
  }

  /**
   * The batches of a data file, in the order of its batch map, with the rows each one's record
   * says it holds (undefined where a batch has no record). Undefined for a part file.
   */
  async batchRowsOf(file: string): Promise<{ batchId: string; rows: number | undefined }[] | undefined> {
    if (parseCompactedFileName(file)?.format !== this.format) return undefined;
    const contents = await this.compactedFile(file);
    return [...contents.batches.keys()].map((batchId) => ({
      batchId,
      rows: batchRecordFrom(batchMetadata(contents, batchId))?.rows,
    }));
  }

  /**
   * Writes the batch's part. `extra` metadata travels inside the part (e.g. the batch's accounting),
   * so it is committed atomically with the vectors it describes.
   */
  async writePart(
    batchId: string,
    batch: EmbeddedBatch,
    extra: Record<string, string> = {},
  ): Promise<WrittenPart> {
    const file = this.partFileName(batchId);
    await this.ensureDir();
    const written = await writePartFile(this.fileSpec(file), () => ({
      rows: partRowsFromBatch(batch, this.dims, this.imageColumns),
      metadata: { ...this.partMetadata(batchId, batch), ...extra },
    }));
    return { file, ...written };
  }

  /**
   * Removes the batch's part when a data file of the folder holds the batch too: a compaction took
   * the batch in, and a late writer (a worker that stalled past its job's lock while another did
   * the batch) renamed its part back into place. True when it removed the part.
   */
  async withdrawCompactedPart(batchId: string): Promise<boolean> {
    const path = join(this.dir, this.partFileName(batchId));
    for (const contents of (await this.compactedFiles(await this.listNames())).values()) {
      if (!contents.batches.has(batchId)) continue;
      try {
        await rm(path, { force: true });
      } catch (error) {
        throw new OutputError(`cannot remove ${path}: ${messageOf(error)}`, { cause: error });
      }
      return true;
    }
    return false;
  }

  /**
   * Writes several embedded batches as one data file (the format compaction writes: the run
   * metadata once, each batch's own entries under its id), atomically. Fewer, larger files cost
   * far less per vector than a part per batch; resume finds every batch in the file's footer.
   */
  async writeGroup(
    entries: readonly { batchId: string; batch: EmbeddedBatch; extra?: Record<string, string> }[],
  ): Promise<WrittenPart> {
    if (entries.length === 0) throw new OutputError('a group of batches must hold at least one batch');
    await this.ensureDir();
    // Batch ids are unique in a dataset: names unique across writers sharing the folder, without
    // hashing megabytes of vectors.
    const contentId = createHash('sha256')
      .update(entries.map((e) => e.batchId).join('\n'))
      .digest('hex')
      .slice(0, 12);
    const file = compactedFileName(await this.nextDataIndex(), contentId, this.format);
    const what = `${file} (a group of ${entries.length} batches)`;
    return { file, ...(await writePartFile(this.fileSpec(file), () => this.groupContent(entries), what)) };
  }

  /** Where and how a file of this writer is written. */
  private fileSpec(file: string): PartFileSpec {
    return { path: join(this.dir, file), format: this.format, compression: this.compression };
  }

  /** The rows of a group of batches, as one file, and its metadata (every batch's, by id). */
  private groupContent(
    entries: readonly { batchId: string; batch: EmbeddedBatch; extra?: Record<string, string> }[],
  ): PartContent {
    const first = entries[0]!;
    const full = new Map(
      entries.map(({ batchId, batch, extra }) => [
        batchId,
        { ...this.partMetadata(batchId, batch), ...extra },
      ]),
    );
    const merged: EmbeddedBatch = {
      ...first.batch,
      batchId: first.batchId,
      chunks: concatenated(entries, (e) => e.batch.chunks),
      vectors: concatenated(entries, (e) => e.batch.vectors),
      failures: [],
    };
    return {
      rows: partRowsFromBatch(merged, this.dims, this.imageColumns),
      metadata: compactedMetadata(splitBatchMetadata(full, [PART_METADATA_KEYS.batchId])),
    };
  }

  #dataIndex: number | undefined;

  /** The next data file number: after every one in the folder, and unique within this writer. */
  private async nextDataIndex(): Promise<number> {
    if (this.#dataIndex === undefined) {
      let highest = -1;
      for (const name of await this.listNames()) {
        const parsed = parseCompactedFileName(name);
        if (parsed && parsed.index > highest) highest = parsed.index;
      }
      this.#dataIndex = highest + 1;
    }
    return this.#dataIndex++;
  }

  /** Rows in one file of the dataset (Parquet: from the footer; Arrow: counted by record batch). */
  async rowCount(file: string): Promise<number> {
    const path = join(this.dir, file);
    try {
      if (this.format === 'parquet') return (await parquetFooter(path)).rows;
      let rows = 0;
      for await (const batch of fileBatches(path, this.format)) rows += batch.numRows;
      return rows;
    } catch (error) {
      throw new OutputError(`cannot count the rows of ${path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /**
   * The key-value metadata of a committed batch (run metadata, batch id, and any `extra`), from its
   * part, or from the data file it was compacted into.
   */
  async readPartMetadata(batchId: string): Promise<Record<string, string>> {
    const path = join(this.dir, this.partFileName(batchId));
    try {
      return withoutWriterKeys(await this.readFileMetadata(path));
    } catch (error) {
      // Whatever the reader says (a missing part or an unreadable one), the folder tells which.
      if (await this.hasPart(batchId)) {
        throw new OutputError(`cannot read the metadata of ${path}: ${messageOf(error)}`, { cause: error });
      }
    }
    // Data files already read first (a resume asks for every batch), the folder only when none holds it.
    for (const contents of this.compacted.values()) {
      if (contents.batches.has(batchId)) return batchMetadata(contents, batchId);
    }
    for (const contents of (await this.compactedFiles(await this.listNames())).values()) {
      if (contents.batches.has(batchId)) return batchMetadata(contents, batchId);
    }
    throw new OutputError(`batch ${batchId} has no part (${path}) and is in no data file of ${this.dir}`);
  }

  /**
   * Removes what holds no batch of `keep` in this format: part files of other batches or of the
   * other format, data files of the other format, and data files none of whose batches are in
   * `keep`. A data file holding any batch of `keep` stays, whatever else it holds.
   */
  async removeStaleParts(keep: Set<string>): Promise<string[]> {
    const stale: string[] = [];
    const names = await this.listNames();
    for (const name of names) {
      const part = parsePartFileName(name);
      if (part && !(part.format === this.format && keep.has(part.batchId))) stale.push(name);
      const compacted = parseCompactedFileName(name);
      if (compacted && compacted.format !== this.format) stale.push(name);
    }
    for (const [name, contents] of await this.compactedFiles(names)) {
      if (![...contents.batches.keys()].some((batchId) => keep.has(batchId))) stale.push(name);
    }
    for (const name of stale) {
      const path = join(this.dir, name);
      try {
        await rm(path, { force: true });
      } catch (error) {
        throw new OutputError(`cannot remove ${path}: ${messageOf(error)}`, { cause: error });
      }
      this.compacted.delete(name);
    }
    return stale.sort();
  }

  /**
   * The origin (model, plan) of every data file in the folder, part or compacted, of either format,
   * from its own key-value metadata (footers only; a compacted file of this format is read once, for
   * this and compactedFiles). A file whose metadata cannot be read is listed without a model.
   */
  async dataFileOrigins(): Promise<DataFileOrigin[]> {
    const origins: DataFileOrigin[] = [];
    for (const name of (await this.listNames()).sort()) {
      const compacted = parseCompactedFileName(name);
      const format = parsePartFileName(name)?.format ?? compacted?.format;
      if (format === undefined) continue;
      // A compacted file keeps shared keys at the top; a key that differed between its batches
      // would be in each batch's own entries (the first batch's are read).
      let top: Record<string, string>;
      let first: Readonly<Record<string, string>>;
      try {
        const contents =
          compacted?.format === this.format
            ? await this.compactedFile(name).catch(() => undefined)
            : undefined;
        if (contents) {
          top = contents.run;
          first = contents.batches.values().next().value ?? {};
        } else {
          top = await CODECS[format].readMetadata(join(this.dir, name));
          first = firstBatchEntries(top);
        }
      } catch {
        origins.push({ file: name });
        continue;
      }
      const model = top[RUN_METADATA_KEYS.model] ?? first[RUN_METADATA_KEYS.model];
      const plan = top[RUN_METADATA_KEYS.plan] ?? first[RUN_METADATA_KEYS.plan];
      origins.push({
        file: name,
        ...(model !== undefined ? { model } : {}),
        ...(plan !== undefined ? { plan } : {}),
      });
    }
    return origins;
  }

  /** Removes temp files killed runs left in the folder, those older than `before` (ms since the epoch). */
  removeStaleTempFiles(before: number): Promise<string[]> {
    return removeStaleTempFiles(this.dir, before);
  }

  /**
   * The contents of this format's data files among `names`. Footers are read once per writer: a
   * data file's name carries its content id, so a name never holds other contents.
   */
  private async compactedFiles(names: readonly string[]): Promise<Map<string, CompactedContents>> {
    const files = new Map<string, CompactedContents>();
    for (const name of this.compacted.keys()) if (!names.includes(name)) this.compacted.delete(name);
    for (const name of [...names].sort()) {
      if (parseCompactedFileName(name)?.format !== this.format) continue;
      files.set(name, await this.compactedFile(name));
    }
    return files;
  }

  /** The contents of one data file of this format, its footer read once per writer (see compactedFiles). */
  private async compactedFile(name: string): Promise<CompactedContents> {
    let contents = this.compacted.get(name);
    if (!contents) {
      contents = await readCompactedContents(this.dir, name, this.format);
      this.compacted.set(name, contents);
    }
    return contents;
  }

  private readonly compacted = new Map<string, CompactedContents>();

  private partMetadata(batchId: string, batch: EmbeddedBatch): Record<string, string> {
    const metadata: Record<string, string> = { ...this.metadata, [PART_METADATA_KEYS.batchId]: batchId };
    if (batch.provider !== undefined) metadata[PART_METADATA_KEYS.provider] = batch.provider;
    return metadata;
  }

  private async listNames(): Promise<string[]> {
    try {
      return await readdir(this.dir);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw new OutputError(`cannot list ${this.dir}: ${messageOf(error)}`, { cause: error });
    }
  }

  private dirReady = false;

  private async ensureDir(): Promise<void> {
    if (this.dirReady) return;
    try {
      await mkdir(this.dir, { recursive: true });
      this.dirReady = true;
    } catch (error) {
      throw new OutputError(`cannot create ${this.dir}: ${messageOf(error)}`, { cause: error });
    }
  }
}

/** The first batch's entries of a compacted file's metadata; none for a part file's (all at the top). */
function firstBatchEntries(metadata: Record<string, string>): Record<string, string> {
  try {
    const batches = JSON.parse(metadata[COMPACTED_BATCHES_KEY] ?? '{}') as Record<
      string,
      Record<string, string>
    >;
    return Object.values(batches)[0] ?? {};
  } catch {
    return {};
  }
}
