/**
 * Outdated files: data files linked from the previous version that still hold batches this plan no
 * longer has (a batch whose documents changed, left the corpus, or were packed again). A file's
 * rows lie batch after batch in the order of its batch map, each batch's count in its record, so
 * the rows that stay are its planned batches' ranges. The switch digests those rows (one file's
 * keys at a time) and, only once the version's sum is the plan's, rewrites the files without the
 * rest: a file whose records do not account for its rows is not outdated here, it is checked row
 * by row.
 */
import { join } from 'node:path';
import pLimit from 'p-limit';
import { OutputError } from '../errors.js';
import { compactParts } from './compact.js';
import { type VersionDigest, versionDigestOf } from './contract.js';
import type { DatasetWriter } from './dataset.js';
import { readRowKeys } from './row-keys.js';

/** The rows of an outdated file that stay, and their digest. */
export interface KeptRows {
  readonly file: string;
  /** The file's planned batches, in file order. */
  readonly batches: readonly string[];
  /** 1 for a row of a planned batch, per row of the file. */
  readonly kept: Uint8Array;
  readonly digest: VersionDigest;
}

/** Files whose row keys are read at once: each is one group commit's file, mostly a wait on the disk. */
const READS_IN_FLIGHT = 4;

/**
 * The rows of `files` (outdated data files) that belong to `planned` batches, with their digest;
 * undefined when a file's batch records do not say where each batch's rows are (a batch without a
 * record, a file whose rows are not the sum of its records').
 */
export async function keptRowsOf(
  writer: DatasetWriter,
  files: readonly string[],
  planned: ReadonlySet<string>,
): Promise<KeptRows[] | undefined> {
  const limit = pLimit(READS_IN_FLIGHT);
  const kept = await Promise.all(files.map((file) => limit(() => keptRowsOfFile(writer, file, planned))));
  return kept.every((k) => k !== undefined) ? kept : undefined;
}

async function keptRowsOfFile(
  writer: DatasetWriter,
  file: string,
  planned: ReadonlySet<string>,
): Promise<KeptRows | undefined> {
  const batches = await writer.batchRowsOf(file);
  if (!batches || batches.some((batch) => batch.rows === undefined)) return undefined;
  const keys = await readRowKeys(writer.dir, file, writer.format);
  const total = batches.reduce((sum, batch) => sum + batch.rows!, 0);
  if (total !== keys.ids.length) return undefined;
  const kept = new Uint8Array(total);
  let start = 0;
  for (const batch of batches) {
    if (planned.has(batch.batchId)) kept.fill(1, start, start + batch.rows!);
    start += batch.rows!;
  }
  return {
    file,
    batches: batches.filter((batch) => planned.has(batch.batchId)).map((batch) => batch.batchId),
    kept,
    digest: versionDigestOf(keys, kept),
  };
}

/**
 * Rewrites each outdated file with only its kept rows, listing its planned batches only. Each on
 * its own, not merged: a merged file would be rewritten whole by the next nightly that edits one of
 * its documents, and files would grow night after night. Resolves with each new file's digest.
 */
export async function dropUnplannedBatches(
  writer: DatasetWriter,
  outdated: readonly KeptRows[],
  planned: ReadonlySet<string>,
): Promise<Map<string, VersionDigest>> {
  const byFile = new Map(outdated.map((kept) => [kept.file, kept]));
  // A new file's batches are its input's planned ones.
  const inputOf = new Map<string, KeptRows>();
  for (const kept of outdated) for (const batchId of kept.batches) inputOf.set(batchId, kept);
  const { files } = await compactParts({
    dir: writer.dir,
    format: writer.format,
    parts: outdated.map((kept) => kept.file),
    keepBatch: (batchId) => planned.has(batchId),
    readMetadata: writer.readFileMetadata,
    keepRow: (file, row) => byFile.get(file)!.kept[row] === 1,
    // Every input a file of its own (a group takes one input whatever the target).
    targetFileBytes: 0,
  });
  const digests = new Map<string, VersionDigest>();
  for (const written of files) {
    const { digest } = inputOf.get(written.batches[0]!)!;
    if (digest.rows !== written.rows) {
      throw new OutputError(
        `${join(writer.dir, written.file)} holds ${written.rows} rows, not the ${digest.rows} of its planned batches`,
      );
    }
    digests.set(written.file, digest);
  }
  return digests;
}
