/**
 * A compacted data file: many batches' rows in one large file, `data-<NNNNN>-<content id>.parquet`
 * (or `.arrow`). Its key-value metadata holds the run metadata once, and under COMPACTED_BATCHES_KEY
 * a JSON object mapping each batch id it holds to that batch's own entries (the keys whose value
 * differs from the run metadata: batch id, provider, accounting). Batch metadata read from a
 * compacted file is the run metadata merged with the batch's entries, the same record its part
 * carried, so a resumed run cannot tell a compacted batch from a part.
 */
import { join } from 'node:path';
import { OutputError } from '../errors.js';
import { messageOf } from './fs-errors.js';
import { CODECS, type OutputFormat } from './part-file.js';

/** The metadata key of the batch map. */
export const COMPACTED_BATCHES_KEY = 'embedpipe.batches';

/** The Parquet writer stores the Arrow schema under this key: the writer's own, never carried over. */
const ARROW_SCHEMA_KEY = 'ARROW:schema';

/** `data-00012-3fa9c2e1b07d.parquet`: the number keeps dataset order in a sorted glob, the content id makes names unique. */
const COMPACTED_FILE = /^data-(\d{5,})-([0-9a-f]{6,64})\.(parquet|arrow)$/;

export function compactedFileName(index: number, contentId: string, format: OutputFormat): string {
  return `data-${String(index).padStart(5, '0')}-${contentId}${CODECS[format].extension}`;
}

/** The file's sequence number and format, or undefined when `name` is not a compacted file's name. */
export function parseCompactedFileName(name: string): { index: number; format: OutputFormat } | undefined {
  const match = COMPACTED_FILE.exec(name);
  if (!match) return undefined;
  return { index: Number(match[1]), format: match[3] as OutputFormat };
}

/** Per-batch metadata in a compacted file: batch id → the batch's own entries. */
export interface CompactedContents {
  /** The metadata every batch of the file shares. */
  readonly run: Readonly<Record<string, string>>;
  /** Batch id → that batch's own entries, in dataset order. */
  readonly batches: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

/** A batch's full metadata: what its part file carried. */
export function batchMetadata(contents: CompactedContents, batchId: string): Record<string, string> {
  const own = contents.batches.get(batchId);
  if (own === undefined) throw new OutputError(`batch ${batchId} is not in this compacted file`);
  return { ...contents.run, ...own };
}

/** Splits a compacted file's key-value metadata into the run metadata and the batch map. */
export function compactedContents(metadata: Record<string, string>, path: string): CompactedContents {
  const { [COMPACTED_BATCHES_KEY]: text, ...run } = withoutWriterKeys(metadata);
  if (text === undefined) throw new OutputError(`${path}: no ${COMPACTED_BATCHES_KEY} metadata`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new OutputError(`${path}: ${COMPACTED_BATCHES_KEY} is not JSON (${messageOf(error)})`, {
      cause: error,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new OutputError(`${path}: ${COMPACTED_BATCHES_KEY} is not an object of batches`);
  }
  const batches = new Map<string, Record<string, string>>();
  for (const [batchId, entries] of Object.entries(parsed)) {
    if (
      typeof entries !== 'object' ||
      entries === null ||
      Object.values(entries).some((v) => typeof v !== 'string')
    ) {
      throw new OutputError(
        `${path}: ${COMPACTED_BATCHES_KEY}[${JSON.stringify(batchId)}] is not string entries`,
      );
    }
    batches.set(batchId, entries as Record<string, string>);
  }
  return { run, batches };
}

/** The key-value metadata of a compacted file: the run metadata plus the batch map. */
export function compactedMetadata(contents: CompactedContents): Record<string, string> {
  return { ...contents.run, [COMPACTED_BATCHES_KEY]: JSON.stringify(Object.fromEntries(contents.batches)) };
}

/** Reads a compacted file's footer (Parquet) or schema (Arrow IPC file), not its rows. */
export async function readCompactedContents(
  dir: string,
  name: string,
  format: OutputFormat,
): Promise<CompactedContents> {
  const path = join(dir, name);
  let metadata: Record<string, string>;
  try {
    metadata = await CODECS[format].readMetadata(path);
  } catch (error) {
    throw new OutputError(`cannot read the metadata of ${path}: ${messageOf(error)}`, { cause: error });
  }
  return compactedContents(metadata, path);
}

/** A file's embedpipe metadata, without what the Parquet writer adds on its own. */
export function withoutWriterKeys(metadata: Record<string, string>): Record<string, string> {
  const { [ARROW_SCHEMA_KEY]: _schema, ...rest } = metadata;
  return rest;
}

/**
 * Run metadata and batch entries from the batches' full metadata: the run metadata is what every
 * batch carries with the same value, except `perBatchKeys` (the batch id is never run-wide, even in
 * a file of one batch); each batch keeps the rest.
 */
export function splitBatchMetadata(
  full: ReadonlyMap<string, Readonly<Record<string, string>>>,
  perBatchKeys: readonly string[],
): CompactedContents {
  let run: Record<string, string> | undefined;
  for (const metadata of full.values()) {
    if (run === undefined) {
      run = { ...metadata };
      for (const key of perBatchKeys) delete run[key];
      continue;
    }
    for (const [key, value] of Object.entries(run)) if (metadata[key] !== value) delete run[key];
  }
  const shared = run ?? {};
  const batches = new Map<string, Record<string, string>>();
  for (const [batchId, metadata] of full) {
    const own: Record<string, string> = {};
    for (const [key, value] of Object.entries(metadata)) if (shared[key] !== value) own[key] = value;
    batches.set(batchId, own);
  }
  return { run: shared, batches };
}
