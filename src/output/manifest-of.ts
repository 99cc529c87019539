/** The manifest of a finished dataset version, from the run's facts and its committed batch records. */

import { isAudioFileName, isImageFileName, isTextFileName } from '../files/file-kinds.js';
import type { WholeRead } from '../files/whole-read.js';
import type { RecordTotals } from '../observability/ledger.js';
import { TOOL } from '../version.js';
import {
  digestInput,
  fileInput,
  formatUsd,
  type Manifest,
  type ManifestContract,
  type ManifestCounts,
  type ManifestDataset,
  type ManifestTranscription,
  redactBaseUrl,
} from './index.js';

export interface ManifestFacts {
  readonly model: string;
  readonly dims: number;
  readonly format: 'parquet' | 'arrow';
  /** The corpus (hashed into the manifest). */
  readonly input: string;
  /** The input file's sha256 and size as the run read it to its end: recorded without reading it again. */
  readonly inputRead?: WholeRead | undefined;
  readonly gateway: { readonly baseUrl: string; readonly emulator: boolean };
  readonly plan: Readonly<Record<string, unknown>>;
  /** The version's chunks are not among them: its rows (counted from its files) and its failures. */
  readonly counts: {
    readonly documents: number;
    readonly rejects: number;
    readonly failures: number;
  };
  /** Totals over the version's committed batch records (whichever run or worker paid). */
  readonly tally: RecordTotals;
  /** Audio corpora: the version's transcripts (the folder digest then lists the audio files too). */
  readonly transcription?: ManifestTranscription | undefined;
}

/**
 * A version's counts: its rows (counted from its files, or the ledger's before a switch), its
 * listed failures, and the ledger's fold of its batch records. The manifest and the run's summary
 * both say exactly this.
 */
export function versionCounts(facts: Pick<ManifestFacts, 'counts' | 'tally'>, rows: number): ManifestCounts {
  const { counts, tally } = facts;
  return {
    ...counts,
    chunks: rows + counts.failures,
    rows,
    tokens: tally.promptTokens,
    costUsd: formatUsd(tally.cost),
    requests: tally.requests,
    retries: tally.retries,
  };
}

export async function manifestOf(
  facts: ManifestFacts,
  done: { files: string[]; rows: number; dataset: ManifestDataset; contract?: ManifestContract },
): Promise<Manifest> {
  const { tally } = facts;
  return {
    version: 2,
    tool: TOOL,
    createdAt: new Date().toISOString(),
    model: facts.model,
    dims: facts.dims,
    format: facts.format,
    providers: [...tally.providers].sort(),
    input: facts.inputRead
      ? fileInput(facts.input, facts.inputRead)
      : // A folder's digest lists the files the run reads: with images (plan.images), those too.
        await digestInput(facts.input, {
          include:
            facts.transcription !== undefined
              ? (name) => isTextFileName(name) || isAudioFileName(name)
              : facts.plan['images'] === undefined
                ? isTextFileName
                : (name) => isTextFileName(name) || isImageFileName(name),
        }),
    gateway: { baseUrl: redactBaseUrl(facts.gateway.baseUrl), emulator: facts.gateway.emulator },
    plan: facts.plan,
    counts: versionCounts(facts, done.rows),
    dataset: done.dataset,
    ...(facts.transcription ? { transcription: facts.transcription } : {}),
    ...(done.contract ? { contract: done.contract } : {}),
    files: done.files,
  };
}

/**
 * The vector length, from one place: the committed records, else this run's answers (in the
 * dataset's dims: `--dims` when given), else what was known before the run (knownDims: the version
 * this one replaces, of the same model and form); 0 when nothing says.
 */
export function datasetDims(
  committed: number | undefined,
  answered: number | undefined,
  known: number | undefined,
): number {
  return committed || answered || known || 0;
}
