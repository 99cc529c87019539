/** The vector writers: part files (Parquet or Arrow IPC), side files and the manifest. */
export { arrowRowCount, encodeArrowIpcFile } from './arrow.js';
export { isTempName, writeFileAtomic } from './atomic.js';
export {
  type CompactedFile,
  type CompactionResult,
  type CompactOptions,
  compactParts,
} from './compact.js';
export { COMPACTED_BATCHES_KEY, parseCompactedFileName } from './compacted-file.js';
export {
  DatasetWriter,
  type DatasetWriterOptions,
  type OutputFormat,
  PART_METADATA_KEYS,
  parsePartFileName,
  type WrittenPart,
} from './dataset.js';
export { digestInput, fileInput } from './input-digest.js';
export { CALIBRATION_FILE, FAILURES_FILE, JsonlFile, REJECTS_FILE, sideFile } from './jsonl.js';
export {
  formatUsd,
  MANIFEST_FILE,
  type Manifest,
  type ManifestContract,
  type ManifestCounts,
  type ManifestDataset,
  type ManifestGateway,
  type ManifestInput,
  type ManifestTranscription,
  type ManifestV1,
  readManifest,
  redactBaseUrl,
  writeManifest,
} from './manifest.js';
export {
  DEFAULT_PARQUET_COMPRESSION,
  encodeParquet,
  type ParquetCompression,
  type ParquetOptions,
  parquetRowCount,
} from './parquet.js';
export { writePartFile } from './part-file.js';
export { type PartRows, partRowsFromBatch } from './rows.js';
export { COLUMNS, partSchema } from './table.js';
export {
  TRANSCRIPTS_FILE,
  type TranscriptRecord,
  type TranscriptSettings,
  TranscriptStore,
  transcriptKey,
} from './transcripts.js';
