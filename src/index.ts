/** embedpipe as a library: re-exports only. The CLI (`embedpipe`) is built on the same API. */
export { DEFAULTS } from './config/defaults.js';
export { readEnvironment } from './config/env.js';
export { loadJobFile, parseJob } from './config/job.js';
export { type RunFlags, type RunSettings, resolveRunSettings } from './config/settings.js';
export type {
  AudioFormat,
  AudioRef,
  Batch,
  Chunk,
  ChunkFailure,
  CorpusEntry,
  Document,
  EmbeddedBatch,
  ImageMime,
  ImageRef,
  Reject,
  TranscriptionFailure,
} from './domain.js';
export { EMULATOR_API_KEY, EMULATOR_MANAGEMENT_KEY, embeddingFor, startEmulator } from './emulator/index.js';
export {
  ConfigError,
  EmbedpipeError,
  ExitCode,
  InterruptedError,
  MissingKeyError,
  NothingEmbeddedError,
  OutputError,
  UsageError,
} from './errors.js';
export * from './gateway/index.js';
export { createLogger, silentLogger } from './observability/logger.js';
export { RunStats } from './observability/stats.js';
export { type Manifest, readManifest } from './output/index.js';
export { type RunDependencies, type RunSummary, runPipeline } from './pipeline/run.js';
