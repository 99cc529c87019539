/**
 * Opening a dataset for a run that writes: the lock, the version this run builds (a new one, or an
 * unfinished one resumed), its writer, and what the version already holds (committed batches with
 * their records). Everything a run writes goes into that version's folder; readers keep the
 * current version until finalize switches.
 */
import { access, constants, mkdir, rm } from 'node:fs/promises';
import { formOfPlanKey, knownDims } from '../embedding/vector-form.js';
import { outputFolderError, UsageError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { TOOL } from '../version.js';
import { type BatchRecord, batchRecordFrom } from './batch-record.js';
import { DatasetWriter, type Manifest, type ManifestV1, readManifest } from './index.js';
import { type HeldLock, lockDataset } from './lock.js';
import { type StagingVersion, VersionedDataset } from './versions.js';

export interface OutputSession {
  readonly dataset: VersionedDataset;
  /** The version this run writes. */
  readonly version: StagingVersion;
  readonly writer: DatasetWriter;
  /** The current version (what readers see now), when there is one. */
  readonly current?: {
    readonly name: string;
    readonly dir: string;
    readonly manifest: Manifest | ManifestV1;
  };
  /** Batches the version holds already, with their accounting (undefined: a part without a record). */
  readonly committed: Map<string, BatchRecord | undefined>;
  /** The file holding each committed batch. */
  readonly fileOf: Map<string, string>;
  /** Committed batches in files linked from the current version: their vectors were not sent for this one. */
  readonly inherited: ReadonlySet<string>;
  release(): Promise<void>;
}

export interface OutputSessionOptions {
  readonly outDir: string;
  readonly model: string;
  readonly planKey: string;
  readonly format: 'parquet' | 'arrow';
  /** Discard an unfinished version of another model or plan instead of refusing to run. */
  readonly force: boolean;
  readonly logger: Logger;
  /** The lock was taken over while this run held it (a long stall): stop the run. */
  readonly onLockLost: (error: Error) => void;
}

export async function openOutput(opts: OutputSessionOptions): Promise<OutputSession> {
  const dataset = new VersionedDataset(opts.outDir);
  await mkdir(dataset.root, { recursive: true })
    .then(() => access(dataset.root, constants.W_OK))
    .catch((error: unknown) => {
      throw outputFolderError(opts.outDir, error);
    });
  const lock = await lockDataset(dataset.root, { onLost: opts.onLockLost });
  try {
    return await open(dataset, lock, opts);
  } catch (error) {
    await lock.release();
    throw error;
  }
}

async function open(
  dataset: VersionedDataset,
  lock: HeldLock,
  opts: OutputSessionOptions,
): Promise<OutputSession> {
  await dataset.prepare();
  const versions = await dataset.list();
  const currentVersion = versions.find((v) => v.current && v.manifest);
  const current = currentVersion?.manifest
    ? { name: currentVersion.name, dir: currentVersion.dir, manifest: currentVersion.manifest }
    : undefined;
  let version = await dataset.staging({
    model: opts.model,
    format: opts.format,
    form: formOfPlanKey(opts.planKey),
  });
  const dims = knownDims(formOfPlanKey(opts.planKey), opts.model, current?.manifest);
  const writerFor = (dir: string) =>
    versionWriter({
      dir,
      format: opts.format,
      model: opts.model,
      planKey: opts.planKey,
      ...(dims ? { dims } : {}),
    });
  let writer = writerFor(version.dir);
  if (!version.created) {
    const foreign = await foreignFiles(writer, opts.model, opts.planKey, current?.manifest.files ?? []);
    if (foreign.length > 0 && !opts.force) throw foreignLeftovers(version, foreign, opts.model);
    if (foreign.length > 0) {
      opts.logger.warn(
        { version: version.name, files: foreign.length },
        'discarding an unfinished version (--force)',
      );
      await rm(version.dir, { recursive: true, force: true });
      version = await dataset.staging({
        model: opts.model,
        format: opts.format,
        form: formOfPlanKey(opts.planKey),
      });
      writer = writerFor(version.dir);
    }
  }
  // Temp files of killed runs; a minute's grace (the lock makes a live writer unlikely anyway).
  const tempsRemoved = await writer.removeStaleTempFiles(Date.now() - 60_000);
  if (tempsRemoved.length > 0)
    opts.logger.info({ removed: tempsRemoved.length }, 'removed temp files of killed runs');
  opts.logger.info(
    { version: version.name, resumed: !version.created, linked: version.linked, current: current?.name },
    version.created ? 'building a new dataset version' : 'resuming an unfinished dataset version',
  );
  const fileOf = await writer.batchFiles();
  const committed = new Map<string, BatchRecord | undefined>();
  for (const batchId of fileOf.keys())
    committed.set(batchId, batchRecordFrom(await writer.readPartMetadata(batchId)));
  return {
    dataset,
    version,
    writer,
    ...(current ? { current } : {}),
    committed,
    fileOf,
    inherited: inheritedBatches(fileOf, current?.manifest.files ?? []),
    release: () => lock.release(),
  };
}

/**
 * The writer of a dataset version: every file it writes names the model, the plan and the tool in
 * its metadata (how a later run tells its own files from another plan's). `dims`: refuse others.
 */
export function versionWriter(version: {
  dir: string;
  format: 'parquet' | 'arrow';
  model: string;
  planKey: string;
  dims?: number;
  readMetadata?: (path: string) => Promise<Record<string, string>>;
}): DatasetWriter {
  return new DatasetWriter({
    dir: version.dir,
    format: version.format,
    metadata: {
      'embedpipe.model': version.model,
      'embedpipe.plan': version.planKey,
      'embedpipe.tool': `${TOOL.name}@${TOOL.version}`,
    },
    ...(version.dims ? { dims: version.dims } : {}),
    ...(version.readMetadata ? { readMetadata: version.readMetadata } : {}),
  });
}

/** The batches a version holds now, with the file holding each and its record. */
export async function committedBatches(writer: DatasetWriter): Promise<{
  fileOf: Map<string, string>;
  committed: Map<string, BatchRecord | undefined>;
}> {
  const fileOf = await writer.batchFiles();
  const committed = new Map<string, BatchRecord | undefined>();
  for (const batchId of fileOf.keys())
    committed.set(batchId, batchRecordFrom(await writer.readPartMetadata(batchId)));
  return { fileOf, committed };
}

/** The manifest of the dataset's current version (through its link), for commands that only read. */
export function currentManifest(outDir: string): Promise<Manifest | ManifestV1 | undefined> {
  return readManifest(outDir).catch(() => undefined);
}

/**
 * Data files of an unfinished version that another model or another plan wrote (the current
 * version's files, linked in when the version was created, are the dataset's own).
 */
async function foreignFiles(
  writer: DatasetWriter,
  model: string,
  planKey: string,
  linked: readonly string[],
) {
  const own = new Set(linked);
  return (await writer.dataFileOrigins()).filter(
    (origin) =>
      !own.has(origin.file) &&
      ((origin.model !== undefined && origin.model !== model) ||
        (origin.plan !== undefined && origin.plan !== planKey)),
  );
}

function foreignLeftovers(
  version: StagingVersion,
  foreign: Awaited<ReturnType<typeof foreignFiles>>,
  model: string,
): UsageError {
  const otherModel = foreign.find((origin) => origin.model !== undefined && origin.model !== model);
  const shown = foreign.slice(0, 3).map((origin) => origin.file);
  if (foreign.length > 3) shown.push(`… ${foreign.length - 3} more`);
  const whose = otherModel
    ? `model ${otherModel.model} (this run: ${model})`
    : `model ${model} with other plan parameters (--max-tokens, --overlap, batching…)`;
  return new UsageError(
    `${version.dir} is an unfinished dataset version of ${whose} with ${foreign.length} file(s): ${shown.join(', ')}. ` +
      'They were paid for: re-run that run with its own settings to finish it, write to another --out, ' +
      'or pass --force to discard them',
  );
}

/**
 * The batches held in files of the current version: a new version starts as links to them (same
 * names), and a run never writes a file under a name the current version has.
 */
export function inheritedBatches(
  fileOf: ReadonlyMap<string, string>,
  currentFiles: readonly string[],
): ReadonlySet<string> {
  const linked = new Set(currentFiles);
  const inherited = new Set<string>();
  for (const [batchId, file] of fileOf) if (linked.has(file)) inherited.add(batchId);
  return inherited;
}
