/** The manifest of a finished dataset version, from the run's facts and its committed batch records. */
import { isAudioFileName } from '../corpus/audio.js';
import { isImageFileName } from '../corpus/images.js';
import { isTextFileName } from '../corpus/text-folder.js';
import {
  digestInput,
  formatUsd,
  type Manifest,
  type ManifestContract,
  type ManifestDataset,
  type ManifestTranscription,
  redactBaseUrl,
} from '../output/index.js';
import type { DatasetTally } from './batch-record.js';
import { TOOL } from './tool.js';

export interface ManifestFacts {
  readonly model: string;
  readonly dims: number;
  readonly format: 'parquet' | 'arrow';
  /** The corpus (hashed into the manifest). */
  readonly input: string;
  readonly gateway: { readonly baseUrl: string; readonly emulator: boolean };
  readonly plan: Readonly<Record<string, unknown>>;
  /** The version's chunks are not among them: its rows (counted from its files) and its failures. */
  readonly counts: {
    readonly documents: number;
    readonly rejects: number;
    readonly failures: number;
  };
  /** Totals over the version's committed batch records (whichever run or worker paid). */
  readonly tally: DatasetTally;
  /** Audio corpora: the version's transcripts (the folder digest then lists the audio files too). */
  readonly transcription?: ManifestTranscription | undefined;
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
    // A folder's digest lists the files the run reads: with images (plan.images), those too.
    input: await digestInput(facts.input, {
      include:
        facts.transcription !== undefined
          ? (name) => isTextFileName(name) || isAudioFileName(name)
          : facts.plan['images'] === undefined
            ? isTextFileName
            : (name) => isTextFileName(name) || isImageFileName(name),
    }),
    gateway: { baseUrl: redactBaseUrl(facts.gateway.baseUrl), emulator: facts.gateway.emulator },
    plan: facts.plan,
    counts: {
      ...facts.counts,
      // The version's chunks: its rows (counted from its files) and its listed failures.
      chunks: done.rows + facts.counts.failures,
      rows: done.rows,
      tokens: tally.promptTokens,
      costUsd: formatUsd(tally.cost),
      requests: tally.requests,
      retries: tally.retries,
    },
    dataset: done.dataset,
    ...(facts.transcription ? { transcription: facts.transcription } : {}),
    ...(done.contract ? { contract: done.contract } : {}),
    files: done.files,
  };
}
