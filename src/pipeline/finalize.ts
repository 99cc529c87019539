/**
 * `finalize`: a run's version becomes the dataset. Once every planned batch is committed, per-batch
 * part files and any data file that holds rows the plan no longer wants are compacted into large
 * data files, in plan order; the manifest lists the version's files and is written last; the
 * dataset's link switches to the version; old versions are pruned. Rows dropped on the way: the old
 * chunks of a document another batch re-planned, and, inside a data file linked from the previous
 * version, the rows of batches this plan does not have (documents changed or deleted since).
 */
import type { Chunk, ChunkFailure, TranscriptionFailure } from '../domain.js';
import type { Logger } from '../observability/logger.js';
import { type DocumentChanges, documentChanges } from '../output/document-changes.js';
import {
  compactParts,
  type DatasetWriter,
  FAILURES_FILE,
  type Manifest,
  type ManifestDataset,
  sideFile,
  writeManifest,
} from '../output/index.js';
import type { VersionedDataset } from '../output/versions.js';

/** Rows of data files that this run kept (batches it planned and found committed there). */
export class RetainedRows {
  readonly #hashes = new Map<string, Set<string>>();
  readonly #documents = new Map<string, Set<string>>();
  readonly #everything: boolean;

  /**
   * `everything`: every row of a planned batch is kept (a distributed run's finalize, which did not
   * see the plan's chunks: batches it did not plan are dropped whole, and old rows of re-planned
   * documents by their owners).
   */
  constructor({ everything = false } = {}) {
    this.#everything = everything;
  }

  add(file: string, chunks: readonly Chunk[]): void {
    const hashes = this.#hashes.get(file) ?? new Set<string>();
    const documents = this.#documents.get(file) ?? new Set<string>();
    for (const chunk of chunks) {
      hashes.add(chunk.hash);
      documents.add(chunk.documentId);
    }
    this.#hashes.set(file, hashes);
    this.#documents.set(file, documents);
  }

  has(file: string, hash: string): boolean {
    if (this.#everything) return true;
    return this.#hashes.get(file)?.has(hash) ?? false;
  }

  holdsAny(file: string, documentIds: Iterable<string>): boolean {
    if (this.#everything) return [...documentIds].length > 0;
    const documents = this.#documents.get(file);
    if (!documents) return false;
    for (const id of documentIds) if (documents.has(id)) return true;
    return false;
  }
}

export interface FinalizeInput {
  readonly writer: DatasetWriter;
  /** Batch ids of the plan, in plan order. */
  readonly planned: readonly string[];
  /** Document id → the batch holding all its rows (re-planned documents). */
  readonly owners: ReadonlyMap<string, string>;
  readonly retained: RetainedRows;
}

/** Compacts what needs it; returns the dataset's files in plan order, and its rows. */
export async function compactDataset(input: FinalizeInput): Promise<{ files: string[]; rows: number }> {
  const { writer, planned, owners, retained } = input;
  const plannedSet = new Set(planned);
  let fileOf = await writer.batchFiles();
  const ordered = [
    ...new Set(planned.map((id) => fileOf.get(id)).filter((f): f is string => f !== undefined)),
  ];
  const isPart = (file: string) => file.startsWith('part-');
  const batchesIn = new Map<string, string[]>();
  for (const [batchId, file] of fileOf) batchesIn.set(file, [...(batchesIn.get(file) ?? []), batchId]);
  const ownedHere = (file: string) =>
    [...owners].filter(([, owner]) => fileOf.get(owner) !== file).map(([id]) => id);
  // A data file is filtered when it holds a batch no longer planned, or old rows of a re-planned
  // document: only the rows of the batches this run kept from it stay.
  const stale = new Set(
    ordered.filter(
      (file) =>
        !isPart(file) &&
        ((batchesIn.get(file) ?? []).some((id) => !plannedSet.has(id)) ||
          retained.holdsAny(file, ownedHere(file))),
    ),
  );
  // Per-batch parts (an older dataset's) are merged; the group commit's data files are large enough
  // already (a 300k-row dataset: DuckDB's scan 331 ms in 109 files, 314 ms merged into 4, and the
  // merge cost 7.5 s), so they are left alone unless they hold stale rows.
  const inputs = ordered.filter((file) => isPart(file) || stale.has(file));
  if (inputs.length > 0) {
    await compactParts({
      dir: writer.dir,
      format: writer.format,
      parts: inputs,
      keepBatch: (batchId) => plannedSet.has(batchId),
      readMetadata: writer.readFileMetadata,
      // No document re-planned (a distributed run's are never): a file that is not stale keeps
      // every row, and a part is copied without being decoded.
      keepsEveryRow: (file) => owners.size === 0 && !stale.has(file),
      keepRow: (file, documentId, hash) => {
        const owner = owners.get(documentId);
        if (owner !== undefined && fileOf.get(owner) !== file) return false;
        return !stale.has(file) || retained.has(file, hash) || owner !== undefined;
      },
    });
    fileOf = await writer.batchFiles();
  }
  const files = [...new Set(planned.map((id) => fileOf.get(id)).filter((f): f is string => f !== undefined))];
  let rows = 0;
  for (const file of files) rows += await writer.rowCount(file);
  return { files, rows };
}

export interface FinalizeVersionInput {
  readonly dataset: VersionedDataset;
  readonly version: string;
  readonly model: string;
  readonly writer: DatasetWriter;
  /** The version readers see now (the one this run replaces), when there is one. */
  readonly current?: {
    readonly name: string;
    readonly dir: string;
    readonly manifest: { readonly model: string; readonly files: readonly string[] };
  };
  readonly planned: readonly string[];
  readonly owners: ReadonlyMap<string, string>;
  readonly retained: RetainedRows;
  /**
   * Chunks without a vector: failures recorded in committed batches, and the chunks of failed
   * batches; and audio files whose transcription failed (their documents are missing: count them
   * in `missingBatches` too).
   */
  readonly failures: readonly (ChunkFailure | TranscriptionFailure)[];
  /** Batches of the plan that have no data (their retries ran out): the version cannot be finished. */
  readonly missingBatches: number;
  readonly keepVersions: number;
  readonly logger: Logger;
  /** The manifest of the finished version, given its files, rows and dataset section. */
  readonly manifest: (done: { files: string[]; rows: number; dataset: ManifestDataset }) => Promise<Manifest>;
  readonly chunks: ManifestDataset['chunks'];
}

export interface FinalizedVersion {
  /** True when the dataset now reads this version. */
  readonly switched: boolean;
  readonly files: readonly string[];
  readonly rows: number;
  readonly changes?: DocumentChanges;
  readonly pruned: readonly string[];
}

/**
 * Writes `_failures.jsonl`; when no batch is missing, compacts, writes the manifest and switches.
 * Chunks that failed inside committed batches (an input the gateway refuses) do not hold the
 * switch back: they are listed, and a re-run sends them again; a missing batch does (an outage).
 */
export async function finalizeVersion(input: FinalizeVersionInput): Promise<FinalizedVersion> {
  const { writer, logger } = input;
  const failuresFile = sideFile(writer.dir, FAILURES_FILE);
  for (const failure of input.failures) failuresFile.add(failure);
  await failuresFile.close();
  if (input.missingBatches > 0) return { switched: false, files: [], rows: 0, pruned: [] };

  const removed = await writer.removeStaleParts(new Set(input.planned));
  if (removed.length > 0) logger.info({ removed: removed.length }, 'removed part files of an earlier plan');
  const { files, rows } = await compactDataset({
    writer,
    planned: input.planned,
    owners: input.owners,
    retained: input.retained,
  });
  const current = input.current;
  const changes =
    current && current.manifest.model === input.model
      ? await documentChanges(
          { dir: current.dir, files: current.manifest.files, format: writer.format },
          { dir: writer.dir, files, format: writer.format },
        )
      : undefined;
  const dataset: ManifestDataset = {
    version: input.version,
    ...(current ? { replaces: current.name } : {}),
    ...(changes ? { documents: changes } : {}),
    chunks: input.chunks,
  };
  await writeManifest(writer.dir, await input.manifest({ files, rows, dataset }));
  await input.dataset.switchTo(input.version);
  const pruned = await input.dataset.prune(input.keepVersions);
  logger.info(
    { version: input.version, replaces: current?.name, pruned },
    'switched the dataset to the new version',
  );
  return { switched: true, files, rows, ...(changes ? { changes } : {}), pruned };
}
