/**
 * `finalize`: a run's version becomes the dataset. Once every planned batch is committed, per-batch
 * part files and any data file that holds rows the plan no longer wants are compacted into large
 * data files, in plan order; the version is checked against the dataset contract (output/contract.ts)
 * and the plan; the manifest lists the version's files and is written last; the dataset's link
 * switches to the version; old versions are pruned. Rows dropped on the way: the old chunks of a
 * document another batch re-planned, and, inside a data file linked from the previous version, the
 * rows of batches this plan does not have (documents changed or deleted since). Any other row the
 * plan does not want refuses the switch.
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { ChunkFailure, TranscriptionFailure } from '../domain.js';
import { DatasetContractError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import {
  type ContractViolation,
  checkRows,
  DatasetRows,
  type ExpectedRows,
  type FailedChunks,
  failedChunks,
  type PairDigest,
  type PlanReader,
  planDigest,
  selectRows,
  VersionDigest,
  Violations,
  versionDigestOf,
} from './contract.js';
import { type DocumentChanges, documentChanges } from './document-changes.js';
import { DocumentsFile, writeDocumentsFile } from './documents-file.js';
import type { ReplannedRows, WrittenFile } from './durable-commit.js';
import {
  compactParts,
  type DatasetWriter,
  FAILURES_FILE,
  type Manifest,
  type ManifestCounts,
  type ManifestDataset,
  sideFile,
  writeManifest,
} from './index.js';
import type { FileDigest, ManifestContract } from './manifest.js';
import { dropUnplannedBatches, keptRowsOf } from './outdated-files.js';
import { type FileRowKeys, type RowKeyOptions, readRowKeys } from './row-keys.js';
import { type CountedRows, verifyVersion } from './verify.js';
import type { VersionedDataset } from './versions.js';

export interface FinalizeInput {
  readonly writer: DatasetWriter;
  /** Batch ids of the plan, in plan order. */
  readonly planned: readonly string[];
  /** Document id → the batch holding all its rows (re-planned documents). */
  readonly owners: ReadonlyMap<string, string>;
  /**
   * Document id → a batch committed before this run that re-planned it and owns nothing (carried
   * from the version replaced, or an attempt's whose re-plan the plan now makes itself:
   * RunSizing.restoreReplan): its file's rows of the document are kept only where the plan wants
   * them and no other file has them.
   */
  readonly earlierReplans?: ReadonlyMap<string, string>;
  /** The chunks the plan wants in the version. */
  readonly expected: ExpectedRows;
  /** The dataset's model: rows' content_hashes are checked against their texts. */
  readonly model: string;
  /**
   * Whether a file's texts are hashed again (default: every file). A file this process wrote from
   * the chunks it hashed, or one linked unchanged from a version whose switch checked it, is not.
   */
  readonly checkTexts?: (file: string) => boolean;
}

export interface CompactedDataset {
  /** The dataset's files, in plan order. */
  readonly files: string[];
  /** Their row keys. */
  readonly scans: Map<string, FileRowKeys>;
  /** Rows that no selection explains (duplicates or strangers in files of planned batches, texts that do not hash to their content_hash): nothing was rewritten. */
  readonly violations: ContractViolation[];
}

/** Row-key reads in flight: each mostly waits on the file system. */
const READS_IN_FLIGHT = 8;

/**
 * Brings the version's files to exactly the rows the plan wants, each once. Rows the plan does not
 * want are dropped where they are expected to be (a file carried over from the previous version
 * still holding batches this plan no longer has; old rows of a re-planned document), by rewriting
 * those files; per-batch parts are merged. Anything else the plan does not explain is returned as a
 * violation, and nothing is rewritten.
 */
export async function compactDataset(input: FinalizeInput): Promise<CompactedDataset> {
  const { writer, planned, owners, expected } = input;
  const plannedSet = new Set(planned);
  let fileOf = await writer.batchFiles();
  const ordered = plannedFiles(planned, fileOf);
  const outdated = outdatedFiles(fileOf, plannedSet);
  /** Files holding an earlier re-plan of a document (its rows count by key alone): file → documents. */
  const earlierReplans = new Map<string, Set<string>>();
  const earlier = (documentId: string, file: string) =>
    earlierReplans.set(file, (earlierReplans.get(file) ?? new Set<string>()).add(documentId));
  const ownerFile = new Map<string, string>();
  for (const [documentId, owner] of owners) {
    const file = fileOf.get(owner);
    if (file === undefined) continue;
    // A document the plan no longer has (deleted) owns no row, whatever a batch record says.
    if (!expected.plans(documentId)) earlier(documentId, file);
    else {
      ownerFile.set(documentId, file);
      expected.replan(documentId, file);
    }
  }
  for (const [documentId, batchId] of input.earlierReplans ?? []) {
    const file = fileOf.get(batchId);
    if (file !== undefined && !ownerFile.has(documentId)) earlier(documentId, file);
  }
  const checkTexts = input.checkTexts ?? (() => true);
  const scans = await readKeys(writer, ordered, new Map(), (file) =>
    checkTexts(file) ? { model: input.model } : {},
  );
  // A row both in an outdated file and in another is kept in the other: the outdated file is
  // rewritten anyway. So is a row of an earlier re-plan: the batch that plans the document now holds it.
  const rank = (file: string) => (outdated.has(file) ? 2 : earlierReplans.has(file) ? 1 : 0);
  const byPreference = [0, 1, 2].flatMap((r) => ordered.filter((file) => rank(file) === r));
  const selection = selectRows(
    byPreference.map((file) => scans.get(file)!),
    expected,
    (file, documentId) => {
      const owner = ownerFile.get(documentId);
      return (
        outdated.has(file) ||
        (owner !== undefined && owner !== file) ||
        earlierReplans.get(file)?.has(documentId) === true
      );
    },
  );
  const violations = [...selection.violations, ...textViolations(scans.values())];
  if (violations.length > 0) return { files: ordered, scans, violations };
  const { dropped } = selection;
  const isPart = (file: string) => file.startsWith('part-');
  // Per-batch parts (an older dataset's, or a distributed run's) are merged; the group commit's data
  // files are large enough already (merging them barely sped up DuckDB's scan and cost far more:
  // docs/benchmarks.md, "Design figures"), so they are left alone unless they hold unwanted rows.
  const inputs = ordered.filter((file) => isPart(file) || dropped.has(file));
  if (inputs.length > 0) {
    await compactParts({
      dir: writer.dir,
      format: writer.format,
      parts: inputs,
      keepBatch: (batchId) => plannedSet.has(batchId),
      readMetadata: writer.readFileMetadata,
      // A file none of whose rows is dropped is copied without being decoded.
      keepsEveryRow: (file) => !dropped.has(file),
      keepRow: (file, row) => dropped.get(file)?.[row] !== 1,
    });
    fileOf = await writer.batchFiles();
  }
  const files = plannedFiles(planned, fileOf);
  for (const file of scans.keys()) if (!files.includes(file)) scans.delete(file);
  // New files hold copies of rows read and checked above: their keys are read, not their texts again.
  return { files, scans: await readKeys(writer, files, scans), violations: [] };
}

/** The data files holding the `planned` batches (batch id → file: `fileOf`), in plan order. */
function plannedFiles(planned: readonly string[], fileOf: ReadonlyMap<string, string>): string[] {
  return [...new Set(planned.map((id) => fileOf.get(id)).filter((f): f is string => f !== undefined))];
}

/** Files holding a batch `planned` does not have: carried over from an earlier version. */
function outdatedFiles(fileOf: ReadonlyMap<string, string>, planned: ReadonlySet<string>): Set<string> {
  const outdated = new Set<string>();
  for (const [batchId, file] of fileOf) if (!planned.has(batchId)) outdated.add(file);
  return outdated;
}

/** Rows whose text does not hash to their content_hash (the scans were read with the model). */
function textViolations(scans: Iterable<FileRowKeys>): ContractViolation[] {
  const violations = new Violations();
  for (const scan of scans) {
    for (const row of scan.unhashed ?? []) {
      violations.add(
        'content-hash',
        'rows whose content_hash is not the hash of their model and text',
        scan.ids.at(row),
        `chunk_index ${scan.indices[row]} in ${scan.file}`,
      );
    }
  }
  return violations.list();
}

/** The row keys of `files`, read with `options` (default none), those in `known` not read again. */
async function readKeys(
  writer: DatasetWriter,
  files: readonly string[],
  known: Map<string, FileRowKeys>,
  options: (file: string) => RowKeyOptions = () => ({}),
): Promise<Map<string, FileRowKeys>> {
  const limit = pLimit(READS_IN_FLIGHT);
  await Promise.all(
    files
      .filter((file) => !known.has(file))
      .map((file) =>
        limit(async () => {
          known.set(file, await readRowKeys(writer.dir, file, writer.format, options(file)));
        }),
      ),
  );
  return known;
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
    readonly manifest: {
      readonly model: string;
      readonly dims?: number;
      readonly files: readonly string[];
      readonly contract?: ManifestContract | undefined;
    };
  };
  /**
   * Data files this process wrote, with their rows' digest: their texts are not hashed again (they
   * are the chunks it hashed itself, and each file's row count was read back), and when the
   * version is all theirs and its rows digest to the plan's, not even their keys are read.
   */
  readonly writtenHere?: ReadonlyMap<string, WrittenFile>;
  /** Documents re-planned by batches this process committed, with those rows' digest. */
  readonly replannedHere?: ReadonlyMap<string, ReplannedRows>;
  readonly planned: readonly string[];
  readonly owners: ReadonlyMap<string, string>;
  readonly earlierReplans?: ReadonlyMap<string, string>;
  readonly expected: PlanReader;
  /**
   * Chunks without a vector: failures recorded in committed batches, and the chunks of failed
   * batches; and audio files whose transcription failed (their documents are missing: count them
   * in `missingBatches` too).
   */
  readonly failures: readonly (ChunkFailure | TranscriptionFailure)[];
  /** Batches of the plan that have no data (their retries ran out): the version cannot be finished. */
  readonly missingBatches: number;
  /** The dataset's vector length (0 or absent: no vector yet, nothing to compare). */
  readonly dims?: number;
  readonly keepVersions: number;
  readonly logger: Logger;
  /** The manifest of the finished version, given its files, rows and dataset section. */
  readonly manifest: (done: {
    files: string[];
    rows: number;
    dataset: ManifestDataset;
    contract: ManifestContract;
  }) => Promise<Manifest>;
  readonly chunks: ManifestDataset['chunks'];
  /**
   * Asked, once the version is finished and verified and before the switch, whether to switch to it
   * (`run --switch-if`: its retrieval against the current version's); only when there is a current one.
   */
  readonly gate?: (
    version: string,
    current: string,
  ) => Promise<{ readonly holds: boolean; readonly reason: string }>;
}

export interface FinalizedVersion {
  /** True when the dataset now reads this version. */
  readonly switched: boolean;
  readonly files: readonly string[];
  readonly rows: number;
  /** The switched version's manifest counts (the summary quotes them). */
  readonly counts?: ManifestCounts;
  readonly changes?: DocumentChanges;
  readonly pruned: readonly string[];
  /** Finished, but not switched: the gate's reason (`run --switch-if`). */
  readonly held?: string;
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
  // The contract, against the plan, before anything is switched: a violation leaves the version on
  // disk to inspect or resume, and readers on the previous one.
  const failed = failedChunks(input.failures);
  const dims = input.dims ?? 0;
  const version = await checkVersion(input, failed, dims);
  const { files, counted } = version;
  const documentsSha256 = await version.writeDocuments();

  const current = input.current;
  const changes =
    current && current.manifest.model === input.model
      ? await documentChanges(
          {
            dir: current.dir,
            files: current.manifest.files,
            format: writer.format,
            documentsRecord: current.manifest.contract !== undefined,
          },
          // Its `_documents.jsonl` was written above.
          { dir: writer.dir, files, format: writer.format, documentsRecord: true },
        )
      : undefined;
  const dataset: ManifestDataset = {
    version: input.version,
    ...(current ? { replaces: current.name } : {}),
    ...(changes ? { documents: changes } : {}),
    chunks: input.chunks,
  };
  const contract = {
    documents: counted.documents,
    documentsSha256,
    fileDigests: await fileDigestRecords(writer.dir, version.digests),
  };
  const manifest = await input.manifest({ files, rows: counted.rows, dataset, contract });
  await writeManifest(writer.dir, manifest);
  // The same check `embedpipe verify` makes, on what is now on disk (the rows already checked).
  const verified = await verifyVersion({ dir: writer.dir, counted });
  if (verified.violations.length > 0) throw new DatasetContractError(writer.dir, verified.violations);
  const verdict = current && input.gate ? await input.gate(input.version, current.name) : undefined;
  if (verdict && !verdict.holds) {
    logger.warn({ version: input.version, current: current?.name }, `not switched: ${verdict.reason}`);
    return {
      switched: false,
      files,
      rows: counted.rows,
      counts: manifest.counts,
      ...(changes ? { changes } : {}),
      pruned: [],
      held: verdict.reason,
    };
  }
  if (verdict) logger.info({ version: input.version }, verdict.reason);
  await input.dataset.switchTo(input.version);
  const pruned = await input.dataset.prune(input.keepVersions);
  logger.info(
    {
      version: input.version,
      replaces: current?.name,
      pruned,
      checked: version.byDigest ? 'by digest' : 'row by row',
    },
    'switched the dataset to the new version',
  );
  return {
    switched: true,
    files,
    rows: counted.rows,
    counts: manifest.counts,
    ...(changes ? { changes } : {}),
    pruned,
  };
}

/** What checking a version against the plan takes (FinalizeVersionInput's). */
export type VersionCheckInput = Pick<
  FinalizeVersionInput,
  | 'writer'
  | 'planned'
  | 'owners'
  | 'earlierReplans'
  | 'expected'
  | 'model'
  | 'writtenHere'
  | 'replannedHere'
  | 'current'
  | 'logger'
>;

/**
 * The version's files checked against the plan (the dataset contract): by digest where that is
 * certain, else row by row; throws DatasetContractError naming what breaks it.
 */
export async function checkVersion(
  input: VersionCheckInput,
  failed: FailedChunks,
  dims: number,
): Promise<CheckedVersion> {
  return (await checkedByDigest(input, failed, dims)) ?? (await checkedByRows(input, failed, dims));
}

/** A version's files checked against the plan: what its manifest and `_documents.jsonl` say. */
export interface CheckedVersion {
  /** True when no row was read: the files' digests were the plan's. */
  readonly byDigest: boolean;
  readonly files: string[];
  readonly counted: CountedRows;
  /** Each file's rows as checked (the manifest records them: contract.fileDigests). */
  readonly digests: ReadonlyMap<string, VersionDigest>;
  /** Writes `_documents.jsonl` (each document's digest); resolves with its sha256. */
  writeDocuments(): Promise<string>;
}

/**
 * The version checked by digest, where that is certain: every file is a group file this process
 * wrote or one linked unchanged from the current version whose switch recorded its rows' digest,
 * every re-planned document was re-planned by a batch this process committed (its rows there stand
 * in for its first plan), and the digest of the files' rows (summed at their commit, or as
 * recorded) is the digest of the plan's chunks less the failed ones. A linked file that still holds
 * batches the plan no longer has (outdated-files.ts) counts with its planned batches' rows, read,
 * and is rewritten without the others once the sums agree. A re-planned document's first rows left
 * in some file break the equality. `_documents.jsonl` then comes from the plan. Undefined
 * otherwise: checkedByRows decides, and names what is wrong (a digest alone cannot). Nothing here
 * grows with the rows but one outdated file's keys at a time.
 */
async function checkedByDigest(
  input: VersionCheckInput,
  failed: FailedChunks,
  dims: number,
): Promise<CheckedVersion | undefined> {
  const { writer, expected } = input;
  const writtenHere = input.writtenHere ?? new Map<string, WrittenFile>();
  if (writtenHere.size === 0 && !input.current?.manifest.contract?.fileDigests) return undefined;
  const replanned = new Map<string, PairDigest>();
  for (const [documentId, owner] of input.owners) {
    const rows = input.replannedHere?.get(documentId);
    if (rows?.batchId !== owner) return undefined;
    replanned.set(documentId, rows.pairs);
  }
  const plannedSet = new Set(input.planned);
  const fileOf = await writer.batchFiles();
  let files = plannedFiles(input.planned, fileOf);
  const outdatedSet = outdatedFiles(fileOf, plannedSet);
  const carried = await carriedDigests(
    writer.dir,
    input.current,
    files.filter((file) => !writtenHere.has(file)),
    dims,
  );
  // An outdated file is summed by the rows of its planned batches, read; only a carried one (its
  // texts were checked at its switch) is: anything else is checked row by row.
  if ([...outdatedSet].some((file) => !carried.has(file))) return undefined;
  const outdated = await keptRowsOf(writer, [...outdatedSet], plannedSet);
  if (!outdated) return undefined;
  const keptDigests = new Map(outdated.map((kept) => [kept.file, kept.digest]));
  const digests = new Map<string, VersionDigest>();
  const rows = new VersionDigest();
  for (const file of files) {
    const written = writtenHere.get(file);
    if (written && (written.rows !== written.digest.rows || (dims > 0 && written.dims !== dims)))
      return undefined;
    const digest = written?.digest ?? keptDigests.get(file) ?? carried.get(file);
    if (!digest) return undefined;
    digests.set(file, digest);
    rows.addDigest(digest);
  }
  // `_documents.jsonl` is written in the pass that digests the plan (or from the lines written as
  // it was made, when it was digested then), and kept only if it matches.
  const documents = await DocumentsFile.create(writer.dir);
  // Kept only for a version that passes (the caller then writes it); on every other way out, a
  // mismatch or a throw, discarded: not left open for the garbage collector, nor beside the version.
  let passed = false;
  try {
    const asPlanned = failed.size === 0 && replanned.size === 0 ? expected.asPlanned?.() : undefined;
    if (asPlanned?.digest.equals(rows)) asPlanned.lines((bytes) => documents.addLines(bytes));
    const plan =
      asPlanned ?? planDigest(expected, failed, (id, digest) => documents.add(id, digest), replanned);
    if (!plan?.digest.equals(rows)) {
      if (plan) input.logger.info("the files' rows do not digest to the plan's: checking them row by row");
      return undefined;
    }
    if (outdated.length > 0) {
      const rewritten = await dropUnplannedBatches(writer, outdated, plannedSet);
      for (const kept of outdated) digests.delete(kept.file);
      for (const [file, digest] of rewritten) digests.set(file, digest);
      files = plannedFiles(input.planned, await writer.batchFiles());
      input.logger.info(
        { rewritten: outdated.length },
        'dropped the batches this plan no longer has from the files carried over',
      );
    }
    const fileRows = new Map(files.map((file) => [file, digests.get(file)!.rows]));
    passed = true;
    return {
      byDigest: true,
      files,
      counted: { fileRows, rows: rows.rows, documents: plan.documents },
      digests,
      writeDocuments: () => documents.finish(),
    };
  } finally {
    if (!passed) await documents.discard();
  }
}

/**
 * The version checked row by row: compacted where rows must go, every row selected against the
 * plan, grouped by document and checked; throws DatasetContractError naming what breaks it.
 */
async function checkedByRows(
  input: VersionCheckInput,
  failed: FailedChunks,
  dims: number,
): Promise<CheckedVersion> {
  const { writer } = input;
  const checked = await linkedFromChecked(writer.dir, input.current);
  const expected = await input.expected.rows();
  const { files, scans, violations } = await compactDataset({
    writer,
    planned: input.planned,
    owners: input.owners,
    ...(input.earlierReplans ? { earlierReplans: input.earlierReplans } : {}),
    expected,
    model: input.model,
    checkTexts: (file) => !input.writtenHere?.has(file) && !checked.has(file),
  });
  if (violations.length > 0) throw new DatasetContractError(writer.dir, violations);
  const rows = new DatasetRows(files.map((file) => scans.get(file)!));
  const broken = checkRows({ rows, dims, failed, expected });
  if (broken.length > 0) throw new DatasetContractError(writer.dir, broken);
  return {
    byDigest: false,
    files,
    digests: new Map(files.map((file) => [file, versionDigestOf(scans.get(file)!)])),
    counted: {
      fileRows: new Map(files.map((file) => [file, scans.get(file)!.ids.length])),
      rows: rows.rows,
      documents: rows.documents,
    },
    writeDocuments: () => writeDocumentsFile(writer.dir, rows.digestEntries()),
  };
}

/**
 * Data files of `dir` that are the same file (a hard link) as one of the current version, when that
 * version's switch checked its contract: their texts were hashed then. An edit in place would change
 * both; `verify --deep` finds it.
 */
async function linkedFromChecked(
  dir: string,
  current: FinalizeVersionInput['current'],
): Promise<Set<string>> {
  if (!current?.manifest.contract) return new Set();
  return linkedFrom(dir, current);
}

/** Data files of `dir` that are the same file (a hard link) as one of `current`'s: carried over. */
export async function linkedFrom(
  dir: string,
  current: { readonly dir: string; readonly manifest: { readonly files: readonly string[] } } | undefined,
): Promise<Set<string>> {
  const linked = new Set<string>();
  if (!current) return linked;
  await Promise.all(
    current.manifest.files.map(async (file) => {
      if (await sameFile(dir, current.dir, file)) linked.add(file);
    }),
  );
  return linked;
}

/** `file` of `dir` when it is the same file (a hard link) as `file` of `otherDir`: its stats. */
async function sameFile(dir: string, otherDir: string, file: string): Promise<Stats | undefined> {
  const [here, there] = await Promise.all([
    stat(join(dir, file)).catch(() => undefined),
    stat(join(otherDir, file)).catch(() => undefined),
  ]);
  return here && there && here.ino === there.ino && here.dev === there.dev ? here : undefined;
}

/**
 * The digests the current version's switch recorded for those of `files` linked unchanged from it
 * (the same file, of the size it recorded), when its vectors were `dims` long: their rows need not
 * be read again. An edit in place that keeps a file's size is what `verify` finds, as for texts.
 */
async function carriedDigests(
  dir: string,
  current: FinalizeVersionInput['current'],
  files: readonly string[],
  dims: number,
): Promise<Map<string, VersionDigest>> {
  const carried = new Map<string, VersionDigest>();
  const recorded = current?.manifest.contract?.fileDigests;
  if (!current || !recorded || (dims > 0 && current.manifest.dims !== dims)) return carried;
  await Promise.all(
    files.map(async (file) => {
      const record = recorded[file];
      if (!record) return;
      const stats = await sameFile(dir, current.dir, file);
      if (stats?.size === record.bytes) carried.set(file, VersionDigest.fromRecord(record));
    }),
  );
  return carried;
}

/** The manifest's record of each file's rows (contract.fileDigests), with its size now. */
async function fileDigestRecords(
  dir: string,
  digests: ReadonlyMap<string, VersionDigest>,
): Promise<Record<string, FileDigest>> {
  const records = await Promise.all(
    [...digests].map(async ([file, digest]) => {
      const { size } = await stat(join(dir, file));
      return [file, { ...digest.record, bytes: size }] as const;
    }),
  );
  return Object.fromEntries(records);
}
