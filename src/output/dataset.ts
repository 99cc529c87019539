/**
 * The output folder as a dataset of part files, one per batch, named by the deterministic batch id:
 * `part-<batchId>.parquet` (or `.arrow`). Writing a part is atomic and idempotent (the same batch
 * replaces the same file), which turns at-least-once delivery into exactly-once output and lets a
 * re-run skip every batch whose part already exists.
 */
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { EmbeddedBatch } from '../domain.js';
import { OutputError } from '../errors.js';
import { isNotFound, messageOf } from './fs-errors.js';
import { DEFAULT_PARQUET_COMPRESSION, type ParquetCompression } from './parquet.js';
import { CODECS, type OutputFormat, type PartFileSpec, writePartFile } from './part-file.js';
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

/** Per-part metadata keys added to the run metadata. */
export const PART_METADATA_KEYS = {
  batchId: 'embedpipe.batch_id',
  provider: 'embedpipe.batch_provider',
} as const;

export class DatasetWriter {
  readonly dir: string;
  readonly format: OutputFormat;
  private readonly metadata: Record<string, string>;
  private readonly dims: number | undefined;
  private readonly codec: (typeof CODECS)[OutputFormat];
  private readonly compression: ParquetCompression;

  constructor(opts: DatasetWriterOptions) {
    this.dir = opts.dir;
    this.format = opts.format;
    this.metadata = { ...opts.metadata };
    this.dims = opts.dims;
    this.codec = CODECS[opts.format];
    this.compression = opts.compression ?? DEFAULT_PARQUET_COMPRESSION;
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

  /** Batch ids of the part files of this writer's format in the folder (temp files ignored). */
  async existingParts(): Promise<Set<string>> {
    const ids = new Set<string>();
    for (const name of await this.listNames()) {
      const match = PART_FILE.exec(name);
      if (match && `.${match[2]}` === this.codec.extension) ids.add(match[1]!);
    }
    return ids;
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
    const path = join(this.dir, file);
    const rows = partRowsFromBatch(batch, this.dims);
    const count = rows.ids.length;
    await this.ensureDir();
    const spec: PartFileSpec = { path, format: this.format, compression: this.compression };
    const bytes = await writePartFile(spec, rows, { ...this.partMetadata(batchId, batch), ...extra });
    return { file, rows: count, bytes };
  }

  /** The key-value metadata of an existing part (run metadata, batch id, and any `extra`). */
  async readPartMetadata(batchId: string): Promise<Record<string, string>> {
    const path = join(this.dir, this.partFileName(batchId));
    try {
      return await this.codec.readMetadata(path);
    } catch (error) {
      throw new OutputError(`cannot read the metadata of ${path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /** Removes part files (either format) that are not this format's part of a batch in `keep`: leftovers of older runs. */
  async removeStaleParts(keep: Set<string>): Promise<string[]> {
    const removed: string[] = [];
    for (const name of await this.listNames()) {
      const match = PART_FILE.exec(name);
      if (!match) continue;
      const current = `.${match[2]}` === this.codec.extension && keep.has(match[1]!);
      if (current) continue;
      const path = join(this.dir, name);
      try {
        await rm(path, { force: true });
      } catch (error) {
        throw new OutputError(`cannot remove ${path}: ${messageOf(error)}`, { cause: error });
      }
      removed.push(name);
    }
    return removed.sort();
  }

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
