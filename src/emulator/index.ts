/**
 * The local gateway emulator: the whole spec as a Fetch handler (createEmulator) or over real HTTP
 * (startEmulator), deterministic vectors, injectable faults.
 */
export { loadEmulatorConfig, validateEmulatorOptions } from './config.js';
export { createEmulator, type Emulator } from './emulator.js';
export { ConnectionReset } from './http.js';
export { EMULATOR_API_KEY, EMULATOR_MANAGEMENT_KEY } from './keys.js';
export { DEFAULT_EMBEDDING_MODELS, DEFAULT_TRANSCRIPTION_MODELS } from './models.js';
export type {
  EmbeddingModelConfig,
  EmulatorOptions,
  FaultKind,
  FaultOptions,
  KeyConfig,
  KeyLimits,
  ProviderConfig,
  ScriptEntry,
  TranscriptionModelConfig,
} from './options.js';
export { countPieces, piecesWithin, truncateToPieces } from './pieces.js';
export { DEFAULT_PROVIDERS } from './providers.js';
export { IN_FLIGHT_GRACE_MS, RETRY_AFTER_TOLERANCE_MS } from './ratelimit.js';
export { BIGRAM_WEIGHT, bagOfWordsEmbedding } from './semantic-vectors.js';
export { type RunningEmulator, startEmulator } from './server.js';
export type { EmulatorStats, RequestRecord } from './stats.js';
export type { TokenizerName } from './tokens.js';
export { embeddingFor } from './vectors.js';
