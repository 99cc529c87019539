/** The shape of `_manifest.json` (version 2) and of the version-1 manifest still read (see manifest.ts). */
import type { ManifestCounts } from '../domain.js';

export type { ManifestCounts };

/** What the run read. */
export interface ManifestInput {
  /** The input file or folder (absolute). */
  readonly path: string;
  readonly kind: 'file' | 'folder';
  /** Total size of the files hashed. */
  readonly bytes: number;
  /** Files hashed (1 for a file input). */
  readonly files: number;
  /**
   * sha256 (hex) of the file; for a folder, the sha256 of a `sha256sum`-style listing of the files
   * the corpus reads (`<sha256>  <path relative to the folder, with />\n`, sorted by path).
   */
  readonly sha256: string;
}

export interface ManifestGateway {
  /** The base URL called, without credentials or query string. */
  readonly baseUrl: string;
  /** True when the run used the in-process gateway emulator (`--emulator`). */
  readonly emulator: boolean;
}

export interface ManifestDataset {
  /** `v000003`: the folder in `<out>.versions/`. */
  readonly version: string;
  /** The version it replaced, when there was one. */
  readonly replaces?: string | undefined;
  /** Documents against the replaced version (same model); absent for the first version or a new model. */
  readonly documents?:
    | {
        readonly added: number;
        readonly changed: number;
        readonly unchanged: number;
        readonly deleted: number;
      }
    | undefined;
  /** Chunks of the runs that built this version: sent to the gateway, or reused by content hash. */
  readonly chunks: { readonly sent: number; readonly reused: number; readonly deduplicated: number };
}

/** Audio corpora: how the version's transcripts were made, and what they cost. */
export interface ManifestTranscription {
  /** The speech-to-text model. */
  readonly model: string;
  /** ISO-639-1 code asked for; absent: detected by the gateway. */
  readonly language?: string | undefined;
  readonly temperature?: number | undefined;
  /** Audio documents of the version with a transcript (`_transcripts.jsonl` holds each). */
  readonly documents: number;
  /** Seconds of their audio (distinct audio counted once). */
  readonly seconds: number;
  /** USD their transcripts cost, whichever run paid (a decimal string, see formatUsd). */
  readonly costUsd: string;
}

export interface Manifest {
  readonly version: 2;
  readonly tool: { readonly name: string; readonly version: string };
  /** ISO 8601. */
  readonly createdAt: string;
  readonly model: string;
  readonly dims: number;
  readonly format: 'parquet' | 'arrow';
  readonly providers: readonly string[];
  readonly input: ManifestInput;
  readonly gateway: ManifestGateway;
  /**
   * The plan parameters that determine batch ids (max tokens, overlap, max inputs, …). Any numeric
   * `cost` inside is written as a `costUsd` decimal string.
   */
  readonly plan: Readonly<Record<string, unknown>>;
  readonly counts: ManifestCounts;
  /** This version among the dataset's versions, and what changed since the one it replaced. */
  readonly dataset?: ManifestDataset | undefined;
  /** Audio corpora: the transcription behind the texts. */
  readonly transcription?: ManifestTranscription | undefined;
  /**
   * What the switch checked (output/contract.ts): documents with rows, and the sha256 of
   * `_documents.jsonl` (per document: rows and a digest of its chunk_index/content_hash pairs).
   * Absent in versions written before the contract.
   */
  readonly contract?: ManifestContract | undefined;
  /** Data files of the dataset, relative to the output folder, sorted. */
  readonly files: readonly string[];
}

export interface ManifestContract {
  readonly documents: number;
  /** sha256 of `_documents.jsonl`. */
  readonly documentsSha256: string;
  /**
   * Per data file, the digest of its rows as the switch checked them (contract.ts VersionDigest)
   * and its size then: a later version that links the file unchanged sums this instead of reading
   * its rows again; `verify` checks each file against it.
   */
  readonly fileDigests?: Readonly<Record<string, FileDigest>> | undefined;
}

/** A data file's rows as a switch checked them. */
export interface FileDigest {
  readonly rows: number;
  /** VersionDigest's two lanes, 16 hex digits. */
  readonly digest: string;
  /** The file's size in bytes. */
  readonly bytes: number;
}

/** A manifest of the previous version (`manifest.json`): no input or gateway, cost a float. */
export interface ManifestV1 extends Omit<Manifest, 'version' | 'input' | 'gateway' | 'counts'> {
  readonly version: 1;
  readonly counts: Omit<ManifestCounts, 'costUsd'> & { readonly cost: number };
}
